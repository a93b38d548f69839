import Dispatch
import Foundation

/// The system resolver (`getaddrinfo`), for callers that must check where a host name points before connecting
/// (the picture fetcher's SSRF rule), then pin the connection to what they checked
/// (``ClientRequest/pinnedAddresses``).
///
/// `getaddrinfo` blocks, so each lookup runs on a Dispatch worker, not on a Swift concurrency thread.
public enum HostResolver {
    /// The numeric addresses (IPv4 `a.b.c.d`, IPv6 text) `host` resolves to, duplicates removed, in the
    /// resolver's order.
    /// - Throws: `ClientError.connectFailed` when the name does not resolve.
    public static func addresses(of host: String) async throws -> [String] {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try lookUp(host) })
            }
        }
    }

    static func lookUp(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw ClientError(.connectFailed, detail: "the host name did not resolve")
        }
        defer { freeaddrinfo(first) }
        var found: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = current.pointee.ai_addr,
                getnameinfo(address, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
                    == 0
            {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !found.contains(text) { found.append(text) }
            }
            entry = current.pointee.ai_next
        }
        guard !found.isEmpty else { throw ClientError(.connectFailed, detail: "the host name has no address") }
        return found
    }
}
