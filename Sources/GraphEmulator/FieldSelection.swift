/// One requested field: `picture.type(large)` is `picture` with modifier `type=large`; `picture{url}` has
/// subfields.
struct FieldRequest: Sendable, Equatable {
    let name: String
    let modifiers: [String: String]
    let subfields: [FieldRequest]?
}

/// Parses Graph's `fields` syntax: `a,b.mod(v).mod2(w),c{x,y}`.
enum FieldSelection {
    /// The requested fields in order, or a 2500 syntax error as Graph words it.
    static func parse(_ text: String) -> Result<[FieldRequest], GraphError> {
        var parser = Parser(characters: Array(text), text: text)
        do {
            let fields = try parser.list()
            parser.skipSpaces()
            if parser.index < parser.characters.count { throw parser.failure("end of string") }
            return .success(fields)
        } catch let error as SyntaxError {
            return .failure(GraphError(error.message, code: 2500))
        } catch {
            return .failure(GraphError("Syntax error", code: 2500))
        }
    }

    private struct SyntaxError: Error {
        let message: String
    }

    private struct Parser {
        let characters: [Character]
        let text: String
        var index = 0

        init(characters: [Character], text: String) {
            self.characters = characters
            self.text = text
        }

        mutating func skipSpaces() {
            while index < characters.count, characters[index] == " " { index += 1 }
        }

        func failure(_ expected: String) -> SyntaxError {
            let found = index < characters.count ? "\"\(characters[index])\"" : "end of string"
            return SyntaxError(
                message: "Syntax error \"Expected \(expected) instead of \(found).\" at character \(index): \(text)")
        }

        mutating func list() throws -> [FieldRequest] {
            var fields: [FieldRequest] = []
            skipSpaces()
            if index == characters.count { return fields }
            while true {
                fields.append(try field())
                skipSpaces()
                guard index < characters.count, characters[index] == "," else { return fields }
                index += 1
            }
        }

        mutating func field() throws -> FieldRequest {
            skipSpaces()
            let name = try identifier()
            var modifiers: [String: String] = [:]
            while index < characters.count, characters[index] == "." {
                index += 1
                let modifier = try identifier()
                guard index < characters.count, characters[index] == "(" else { throw failure("\"(\"") }
                index += 1
                var value = ""
                while index < characters.count, characters[index] != ")" {
                    value.append(characters[index])
                    index += 1
                }
                guard index < characters.count else { throw failure("\")\"") }
                index += 1
                modifiers[modifier] = value
            }
            skipSpaces()
            var subfields: [FieldRequest]?
            if index < characters.count, characters[index] == "{" {
                index += 1
                subfields = try list()
                skipSpaces()
                guard index < characters.count, characters[index] == "}" else { throw failure("\"}\"") }
                index += 1
            }
            return FieldRequest(name: name, modifiers: modifiers, subfields: subfields)
        }

        mutating func identifier() throws -> String {
            var name = ""
            while index < characters.count,
                characters[index].isLetter || characters[index].isNumber
                    || characters[index] == "_"
            {
                name.append(characters[index])
                index += 1
            }
            guard !name.isEmpty else { throw failure("key") }
            return name
        }
    }
}
