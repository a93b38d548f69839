import Foundation

/// Which network addresses a picture may be fetched from: public unicast only.
///
/// A host that is on `FBS_PICTURE_HOSTS` only by suffix (`anything.fbcdn.net`) is resolved before the fetch, and
/// every address it resolves to must pass ``isPublic(_:)``; the fetch then connects to exactly those addresses
/// (no second lookup that could answer differently). So a DNS name under an allowed suffix that points at
/// loopback, the metadata service (169.254.169.254), a private network or an IPv6 local range is refused before
/// any connection. A host listed exactly (`127.0.0.1` or `localhost` in the sandbox) is the operator's explicit
/// choice and is not checked.
///
/// Addresses are the numeric text `getnameinfo` writes (`10.0.0.1`, `::ffff:127.0.0.1`, `fe80::1%eth0`);
/// anything that does not parse is not public.
public enum PictureAddressRule {
    /// Whether `address` (numeric IPv4 or IPv6 text) is a public unicast address.
    public static func isPublic(_ address: String) -> Bool {
        if let v4 = ipv4(Substring(address)) { return isPublicIPv4(v4) }
        if let v6 = ipv6(address) { return isPublicIPv6(v6) }
        return false
    }

    /// Whether `text` is a dotted-quad IPv4 address (no lookup needed).
    public static func isIPv4Literal(_ text: String) -> Bool {
        ipv4(Substring(text)) != nil
    }

    static func isPublicIPv4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1], a[2]) {
        case (0, _, _), (10, _, _), (127, _, _): return false  // this network, private, loopback
        case (100, 64...127, _): return false  // shared address space (carrier NAT)
        case (169, 254, _): return false  // link-local, cloud metadata
        case (172, 16...31, _): return false  // private
        case (192, 0, 0), (192, 0, 2), (192, 88, 99): return false  // IETF, TEST-NET-1, 6to4 relay
        case (192, 168, _): return false  // private
        case (198, 18...19, _), (198, 51, 100), (203, 0, 113): return false  // benchmarking, TEST-NET-2/3
        case (224...255, _, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    static func isPublicIPv6(_ a: [UInt8]) -> Bool {
        let firstTen = a[0..<10].allSatisfy { $0 == 0 }
        if firstTen, a[10] == 0xFF, a[11] == 0xFF { return isPublicIPv4(Array(a[12...])) }  // IPv4-mapped
        if firstTen, a[10] == 0, a[11] == 0 { return false }  // ::, ::1, IPv4-compatible (deprecated)
        if a[0] == 0x00, a[1] == 0x64, a[2] == 0xFF, a[3] == 0x9B { return isPublicIPv4(Array(a[12...])) }  // NAT64
        if a[0] == 0x20, a[1] == 0x02 { return isPublicIPv4(Array(a[2..<6])) }  // 6to4
        if a[0] & 0xFE == 0xFC { return false }  // unique local fc00::/7
        if a[0] == 0xFE, a[1] & 0x80 == 0x80 { return false }  // link-local fe80::/10, site-local fec0::/10
        if a[0] == 0xFF { return false }  // multicast
        if a[0] == 0x20, a[1] == 0x01, a[2] == 0x0D, a[3] == 0xB8 { return false }  // documentation
        if a[0] == 0x20, a[1] == 0x01, a[2] == 0x00, a[3] == 0x00 { return false }  // Teredo
        if a[0] == 0x01, a[1] == 0x00, a[2...7].allSatisfy({ $0 == 0 }) { return false }  // discard-only
        return true
    }

    /// Dotted-quad IPv4 (four decimal octets, no leading zeros beyond `0`), or nil.
    static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                part == "0" || !part.hasPrefix("0"), let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// IPv6 text (with `::`, an embedded IPv4 tail, and an optional `%zone`), as 16 bytes, or nil.
    static func ipv6(_ text: String) -> [UInt8]? {
        var body = Substring(text)
        if let percent = body.firstIndex(of: "%") { body = body[..<percent] }
        guard body.contains(":"), body.utf8.count <= 45 else { return nil }
        let halves = body.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = ipv4(piece) else { return nil }
                    bytes += v4
                } else {
                    guard (1...4).contains(piece.utf8.count), let value = UInt16(piece, radix: 16) else { return nil }
                    bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
                }
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
