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
        let failure = PostgresError.cannotDecode([String].self)
        let input = Array(text.unicodeScalars)
        guard input.first == "{", input.last == "}" else { throw failure }
        let body = input.dropFirst().dropLast()
        if body.allSatisfy({ $0 == " " }) {
            return []
        }
        var elements: [String] = []
        var index = body.startIndex
        while true {
            while index < body.endIndex, body[index] == " " {
                index += 1
            }
            var element = String.UnicodeScalarView()
            if index < body.endIndex, body[index] == "\"" {
                index += 1
                while true {
                    guard index < body.endIndex else { throw failure }
                    let scalar = body[index]
                    if scalar == "\"" {
                        index += 1
                        break
                    }
                    if scalar == "\\" {
                        index += 1
                        guard index < body.endIndex else { throw failure }
                    }
                    element.append(body[index])
                    index += 1
                }
                while index < body.endIndex, body[index] == " " {
                    index += 1
                }
            } else {
                var trailingSpaces = 0
                var escaped = false
                while index < body.endIndex, body[index] != "," {
                    var scalar = body[index]
                    if scalar == "{" || scalar == "}" || scalar == "\"" {
                        throw failure
                    }
                    if scalar == "\\" {
                        index += 1
                        guard index < body.endIndex else { throw failure }
                        scalar = body[index]
                        trailingSpaces = 0
                        escaped = true
                    } else {
                        trailingSpaces = scalar == " " ? trailingSpaces + 1 : 0
                    }
                    element.append(scalar)
                    index += 1
                }
                element.removeLast(trailingSpaces)
                if element.isEmpty || (!escaped && String(element).uppercased() == "NULL") {
                    throw failure
                }
            }
            elements.append(String(element))
            if index == body.endIndex {
                return elements
            }
            guard body[index] == "," else { throw failure }
            index += 1
        }
    }
}
