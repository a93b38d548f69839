import Foundation
import Synchronization

/// The server's state for one request, from its request line to the end of its response.
///
/// Ownership: created by `uriLogThunk`, retained in libmicrohttpd's per-request context pointer, and released
/// exactly once by `requestCompletedThunk`. Thread safety: libmicrohttpd calls for one connection come from one
/// thread at a time; the only other writers are the task that finishes a suspended request and the thread that
/// wakes a parked one, and they change ``state`` only under ``ServerCore``'s lock. An exchange parked in place (loop
/// mode) is touched by its loop's thread only: a wake from elsewhere is posted to that loop.
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
        /// Suspended with no task until its ``Wake`` is called (``Reply/parked(_:)``).
        case parked
        /// Parked without suspending the connection, on an event loop (``EventLoop``), until its ``Wake`` is called:
        /// libmicrohttpd keeps calling the handler on each turn, which answers nothing until then.
        case parkedInPlace
        /// Woken: the connection was resumed (or, parked in place, will be run on its loop's next turn) to run this on
        /// the server's thread.
        case woken(@Sendable () -> Reply)
        /// The handler finished; the connection was resumed to send this.
        case ready(Response)
        /// A response has been queued.
        case responded
    }

    let rawURI: String
    let started: UInt64
    var state: State = .new
    /// Set (under ``ServerCore``'s lock) when the exchange is suspended; from then on other threads may touch it.
    var suspended = false
    var head: RequestHead?
    var body: [UInt8] = []
    var discardedBytes = 0
    var route: String?
    /// What answers the request once its body is in: the handler's `inspect` made it, over what it matched.
    var respond: Responder?
    var status: Int?
    /// The libmicrohttpd connection, set while suspended so the finishing task can resume it.
    var connection: OpaquePointer?
    /// The handler's task while suspended, so a timeout can cancel it.
    var task: Task<Void, Never>?
    /// The loop the exchange is parked on in place, from ``State/parkedInPlace`` until it runs again or ends.
    var loop: EventLoop?

    init(rawURI: String) {
        self.rawURI = rawURI
        self.started = DispatchTime.now().uptimeNanoseconds
    }

    /// Splits the raw URI into path and query.
    var pathAndQuery: (path: String, query: String) {
        // On UTF-8 (`?` is ASCII, so its index is a character boundary): `firstIndex(of: Character)` would walk
        // grapheme clusters.
        guard let mark = rawURI.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (rawURI, "") }
        return (String(rawURI[..<mark]), String(rawURI[rawURI.utf8.index(after: mark)...]))
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

    /// 128 bits in hex: a random half drawn once per process, and a per-process counter passed through a
    /// bijective mixer (SplitMix64's finalizer), so ids never repeat within a process, differ between processes, and
    /// cost no system call (docs/performance.md, "Figures behind the code").
    static func fresh() -> String {
        let sequence = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let half = processHalf
        return String(unsafeUninitializedCapacity: 32) { bytes in
            writeHex(half, into: bytes, at: 0)
            writeHex(mix(sequence ^ half), into: bytes, at: 16)
            return 32
        }
    }

    private static let processHalf: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()

    private static let counter = Atomic<UInt64>(0)

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static func writeHex(_ value: UInt64, into bytes: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        for index in 0..<16 {
            let nibble = UInt8((value >> UInt64(60 - 4 * index)) & 0xF)
            bytes[offset + index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
        }
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
