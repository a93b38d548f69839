/// A control API request body: a JSON object read field by field with type checks; unknown fields are refused so
/// typos do not pass silently.
struct ControlBody {
    private let members: [(String, JSONValue)]

    /// Parses `bytes` (an empty body is `{}`), allowing only `allowed` keys.
    init(_ bytes: [UInt8], allowed: Set<String>) throws {
        if bytes.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            members = []
            return
        }
        guard let value = JSONValue.parse(bytes), let members = value.objectValue else {
            throw ControlError(400, "invalid_json", "The body must be a JSON object.")
        }
        if let unknown = members.first(where: { !allowed.contains($0.0) }) {
            throw ControlError(400, "unknown_field", "Unknown field \(unknown.0).")
        }
        self.members = members
    }

    /// Whether `key` is present (possibly null).
    func has(_ key: String) -> Bool {
        members.contains { $0.0 == key }
    }

    private func value(_ key: String) -> JSONValue? {
        guard let value = members.first(where: { $0.0 == key })?.1, !value.isNull else { return nil }
        return value
    }

    private func wrongType(_ key: String, _ type: String) -> ControlError {
        ControlError(400, "invalid_request", "Field \(key) must be \(type).")
    }

    func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        // Ids may come as JSON numbers too.
        if let number = value.intValue, case .int = value { return String(number) }
        guard let text = value.stringValue else { throw wrongType(key, "a string") }
        return text
    }

    func requiredString(_ key: String) throws -> String {
        guard let text = try string(key), !text.isEmpty else {
            throw ControlError(400, "invalid_request", "Field \(key) is required.")
        }
        return text
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.boolValue else { throw wrongType(key, "true or false") }
        return flag
    }

    func int(_ key: String) throws -> Int64? {
        guard let value = value(key) else { return nil }
        guard let number = value.intValue else { throw wrongType(key, "an integer") }
        return number
    }

    func number(_ key: String) throws -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.doubleValue else { throw wrongType(key, "a number") }
        return number
    }

    /// An object whose members are arrays of strings, e.g. asset ids per permission.
    func stringLists(_ key: String) throws -> [String: [String]]? {
        guard let value = value(key) else { return nil }
        guard let members = value.objectValue else { throw wrongType(key, "an object of string arrays") }
        var lists: [String: [String]] = [:]
        for (name, element) in members {
            guard let array = element.arrayValue else { throw wrongType(key, "an object of string arrays") }
            lists[name] = try array.map { item in
                guard let text = item.stringValue else { throw wrongType(key, "an object of string arrays") }
                return text
            }
        }
        return lists
    }

    func strings(_ key: String) throws -> [String]? {
        guard let value = value(key) else { return nil }
        guard let array = value.arrayValue else { throw wrongType(key, "an array of strings") }
        return try array.map { element in
            guard let text = element.stringValue else { throw wrongType(key, "an array of strings") }
            return text
        }
    }
}

/// A control API failure, answered as `{"error":{"code","message"}}`.
struct ControlError: Error {
    let status: Int
    let code: String
    let message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }
}
