/// Converts between bytes and PostgreSQL's bytea text forms.
enum PostgresBytea {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The hex form: `\x` followed by two lowercase hex digits per byte.
    ///
    /// - Parameter bytes: The bytes.
    /// - Returns: The text.
    static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        var text: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        text.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses bytea output in the hex form (`\x0aff`) or the older escape form (`a\\b\001`).
    ///
    /// - Parameter text: The column text.
    /// - Returns: The bytes.
    /// - Throws: `PostgresError` with code `.decodingFailed` for malformed text.
    static func decode(_ text: String) throws -> [UInt8] {
        let input = Array(text.utf8)
        if input.starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "x")]) {
            return try decodeHex(input.dropFirst(2))
        }
        return try decodeEscape(input)
    }

    private static func decodeHex(_ input: ArraySlice<UInt8>) throws -> [UInt8] {
        guard input.count % 2 == 0 else { throw PostgresError.cannotDecode([UInt8].self) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count / 2)
        var index = input.startIndex
        while index < input.endIndex {
            guard let high = hexValue(input[index]), let low = hexValue(input[index + 1]) else {
                throw PostgresError.cannotDecode([UInt8].self)
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func decodeEscape(_ input: [UInt8]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            guard byte == UInt8(ascii: "\\") else {
                bytes.append(byte)
                index += 1
                continue
            }
            if index + 1 < input.count, input[index + 1] == UInt8(ascii: "\\") {
                bytes.append(byte)
                index += 2
                continue
            }
            guard index + 3 < input.count, let value = octalValue(input[(index + 1)...(index + 3)]) else {
                throw PostgresError.cannotDecode([UInt8].self)
            }
            bytes.append(value)
            index += 4
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func octalValue(_ digits: ArraySlice<UInt8>) -> UInt8? {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(digit) else { return nil }
            value = value * 8 + Int(digit - UInt8(ascii: "0"))
        }
        return value <= 255 ? UInt8(value) : nil
    }
}
