/// The credential of an `Authorization: Bearer <key>` field (RFC 6750 §2.1): the scheme compared without regard
/// to case, the blanks around the key (spaces and tabs) trimmed. Read over the field's bytes, once per request.
public enum BearerCredential {
    /// The key, or nil when the field is no bearer credential or the key is empty.
    public static func key(in field: String?) -> String? {
        guard var field else { return nil }
        return field.withUTF8 { bytes -> String? in
            let scheme: StaticString = "bearer "
            let schemeLength = scheme.utf8CodeUnitCount
            guard bytes.count > schemeLength else { return nil }
            let expected = scheme.utf8Start
            for index in 0..<schemeLength where lowercased(bytes[index]) != expected[index] {
                return nil
            }
            var start = schemeLength
            var end = bytes.count
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            guard end > start else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09
    }
}
