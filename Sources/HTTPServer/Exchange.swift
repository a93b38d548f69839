import Foundation

/// The server's state for one request, from its request line to the end of its response.
///
/// Ownership: created by `uriLogThunk`, retained in libmicrohttpd's per-request context pointer, and released
/// exactly once by `requestCompletedThunk`. Thread safety: libmicrohttpd calls for one connection come from one
/// thread at a time; the only other writer is the task that finishes a suspended request, and it changes
/// ``state`` only under ``ServerCore``'s lock.
final class Exchange {
    enum State {
        /// The URI is known; the head has not been inspected yet.
        case new
        /// The head passed inspection; the body is being read.
        case receiving
        /// The body went over the limit; the rest is read and dropped, then 413 is sent.
        case discarding
        /// Suspended while a handler works.
        case waiting
        /// The handler finished; the connection was resumed to send this.
        case ready(Response)
        /// A response has been queued.
        case responded
    }

    let rawURI: String
    let started: UInt64
    var state: State = .new
    var head: RequestHead?
    var body: [UInt8] = []
    var discardedBytes = 0
    var route: String?
    /// What the handler's `inspect` matched, handed back with the request.
    var match: (any Sendable)?
    var status: Int?
    /// The libmicrohttpd connection, set while suspended so the finishing task can resume it.
    var connection: OpaquePointer?
    /// The handler's task while suspended, so a timeout can cancel it.
    var task: Task<Void, Never>?

    init(rawURI: String) {
        self.rawURI = rawURI
        self.started = DispatchTime.now().uptimeNanoseconds
    }

    /// Splits the raw URI into path and query.
    var pathAndQuery: (path: String, query: String) {
        guard let mark = rawURI.firstIndex(of: "?") else { return (rawURI, "") }
        return (String(rawURI[..<mark]), String(rawURI[rawURI.index(after: mark)...]))
    }

    var secondsSinceStart: Double {
        Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    }
}

/// Request ids: the client's when well-formed, else 128 random bits in hex.
enum RequestIDs {
    static func accept(_ candidate: String?) -> String {
        if let candidate, (1...128).contains(candidate.utf8.count),
            candidate.utf8.allSatisfy({ isAllowed($0) })
        {
            return candidate
        }
        return fresh()
    }

    static func fresh() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }
}
