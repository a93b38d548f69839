/// Converts between `[String]` and PostgreSQL one-dimensional text[] literals.
enum PostgresTextArray {
    /// A text[] literal with every element double-quoted and `"` and `\` backslash-escaped, so that empty
    /// strings, spaces, commas, braces and the word `NULL` all stay plain data: `["a", "b c"]` →
    /// `{"a","b c"}`.
    ///
    /// - Parameter elements: The strings.
    /// - Returns: The literal.
    static func encode(_ elements: [String]) -> String {
        // Byte-wise: `"` and `\` are ASCII, so they never occur inside a multi-byte UTF-8 sequence.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 + elements.reduce(0) { $0 + $1.utf8.count + 3 })
        bytes.append(UInt8(ascii: "{"))
        for (index, element) in elements.enumerated() {
            if index > 0 {
                bytes.append(UInt8(ascii: ","))
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    bytes.append(UInt8(ascii: "\\"))
                }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses a one-dimensional array literal as PostgreSQL prints it, such as `{a,"b c",""}`.
    ///
    /// - Parameter text: The column text.
    /// - Returns: The elements.
    /// - Throws: `PostgresError` with code `.decodingFailed` for malformed text, nested arrays, explicit
    ///   bounds (`[0:1]={…}`) or a `NULL` element.
    static func decode(_ text: String) throws -> [String] {
        var text = text
        return try text.withUTF8 { try decode($0) }
    }

    /// ``decode(_:)-(String)`` over UTF-8 bytes. Every character with a meaning here (`{`, `}`, `"`, `\`, `,` and
    /// the space) is ASCII, so it never occurs inside a multi-byte sequence and the bytes can be read one by one.
    static func decode(_ input: UnsafeBufferPointer<UInt8>) throws -> [String] {
        let failure = PostgresError.cannotDecode([String].self)
        let (open, close, quote, backslash, comma, space) = (
            UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: ","),
            UInt8(ascii: " ")
        )
        guard input.count >= 2, input.first == open, input.last == close else { throw failure }
        let end = input.count - 1
        var index = 1
        if input[index..<end].allSatisfy({ $0 == space }) {
            return []
        }
        var elements: [String] = []
        var element: [UInt8] = []
        while true {
            while index < end, input[index] == space {
                index += 1
            }
            element.removeAll(keepingCapacity: true)
            if index < end, input[index] == quote {
                index += 1
                while true {
                    guard index < end else { throw failure }
                    let byte = input[index]
                    if byte == quote {
                        index += 1
                        break
                    }
                    if byte == backslash {
                        index += 1
                        guard index < end else { throw failure }
                    }
                    element.append(input[index])
                    index += 1
                }
                while index < end, input[index] == space {
                    index += 1
                }
            } else {
                var trailingSpaces = 0
                var escaped = false
                while index < end, input[index] != comma {
                    var byte = input[index]
                    if byte == open || byte == close || byte == quote {
                        throw failure
                    }
                    if byte == backslash {
                        index += 1
                        guard index < end else { throw failure }
                        byte = input[index]
                        trailingSpaces = 0
                        escaped = true
                    } else {
                        trailingSpaces = byte == space ? trailingSpaces + 1 : 0
                    }
                    element.append(byte)
                    index += 1
                }
                element.removeLast(trailingSpaces)
                if element.isEmpty || (!escaped && isNull(element)) {
                    throw failure
                }
            }
            elements.append(String(decoding: element, as: UTF8.self))
            if index == end {
                return elements
            }
            guard input[index] == comma else { throw failure }
            index += 1
        }
    }

    /// `NULL` in any letter case (an unquoted element that PostgreSQL would print for a NULL).
    private static func isNull(_ bytes: [UInt8]) -> Bool {
        bytes.count == 4 && zip(bytes, "NULL".utf8).allSatisfy { $0 & 0xDF == $1 }
    }
}
