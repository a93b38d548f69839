/// Strict percent-decoding of paths, query strings and `application/x-www-form-urlencoded` bodies, and the
/// matching encoder for the URLs the emulator builds.
enum FormCoding {
    /// Decodes `%XX` escapes (and `+` as a space when `plusIsSpace`). Returns nil for a `%` not followed by two
    /// hex digits or for bytes that are not valid UTF-8.
    static func percentDecode(_ text: some StringProtocol, plusIsSpace: Bool) -> String? {
        var output: [UInt8] = []
        let input = Array(text.utf8)
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < input.count,
                    let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 3
            } else if byte == UInt8(ascii: "+") && plusIsSpace {
                output.append(UInt8(ascii: " "))
                index += 1
            } else {
                output.append(byte)
                index += 1
            }
        }
        return String(strictUTF8: output)
    }

    /// Parses `a=1&b=2` into ordered pairs. Empty pieces are skipped; a piece without `=` has an empty value.
    /// Returns nil when any name or value is badly encoded.
    static func parse(_ text: some StringProtocol) -> [(String, String)]? {
        var pairs: [(String, String)] = []
        for piece in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(parts[0], plusIsSpace: true) else { return nil }
            let value = parts.count > 1 ? percentDecode(parts[1], plusIsSpace: true) : ""
            guard let value else { return nil }
            pairs.append((name, value))
        }
        return pairs
    }

    /// Encodes a name or value for a query string: unreserved characters stay, space becomes `+`, the rest `%XX`.
    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                output += "+"
            default:
                output += "%" + String(hexDigits[Int(byte >> 4)]) + String(hexDigits[Int(byte & 0x0F)])
            }
        }
        return output
    }

    /// Builds `a=1&b=2` from ordered pairs.
    static func query(_ pairs: [(String, String)]) -> String {
        pairs.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    private static let hexDigits = Array("0123456789ABCDEF")

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
