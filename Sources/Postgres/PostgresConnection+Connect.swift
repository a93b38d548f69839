internal import CLibPQ

extension PostgresConnection {
    /// What `PQconninfoParse` found in a connection string.
    struct ParsedConnectionString {
        /// Whether libpq could parse the string at all.
        var isValid: Bool
        /// The `password` setting, if any; scrubbed from every message.
        var password: String?
    }

    /// Parses `connectionString` with `PQconninfoParse` to learn its password.
    ///
    /// - Parameter connectionString: A libpq URI or `key=value` string.
    /// - Returns: Whether it parsed, and its password.
    static func parse(_ connectionString: String) -> ParsedConnectionString {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            if let errorMessage {
                PQfreemem(errorMessage)
            }
            return ParsedConnectionString(isValid: false, password: nil)
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val {
                return ParsedConnectionString(isValid: true, password: String(cString: value))
            }
            option += 1
        }
        return ParsedConnectionString(isValid: true, password: nil)
    }

    /// Opens a `PGconn` with `PQconnectdbParams`.
    ///
    /// The connection string is expanded first; `connect_timeout`, `client_encoding` and `application_name`
    /// follow it in the keyword list, so these settings win over the string's.
    ///
    /// - Parameters:
    ///   - connectionString: A libpq URI or `key=value` string.
    ///   - parsed: What `parse(_:)` found in it.
    ///   - connectTimeout: Passed as `connect_timeout` in whole seconds, at least 1.
    ///   - applicationName: Passed as `application_name` when not `nil`.
    /// - Returns: A connection in state `CONNECTION_OK`.
    /// - Throws: `PostgresError` with code `.connectionFailed`.
    static func connect(
        _ connectionString: String,
        parsed: ParsedConnectionString,
        connectTimeout: Duration,
        applicationName: String?
    ) throws -> OpaquePointer {
        guard parsed.isValid else {
            // libpq's parse errors quote pieces of the string, which may hold the password: say nothing more.
            throw PostgresError(.connectionFailed, detail: "the connection string is not valid")
        }
        let timeout = max(1, Int(connectTimeout.postgresSeconds.rounded(.up)))
        var settings: [(String, String)] = [
            ("dbname", connectionString),
            ("connect_timeout", String(timeout)),
            ("client_encoding", "UTF8"),
        ]
        if let applicationName {
            settings.append(("application_name", applicationName))
        }
        let keywords: [String?] = settings.map { $0.0 } + [nil]
        let values: [String?] = settings.map { $0.1 } + [nil]
        let raw = keywords.withCStringArray { keywordPointers in
            values.withCStringArray { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle = raw else {
            throw PostgresError(.connectionFailed, detail: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = PQerrorMessage(handle).map { String(cString: $0) } ?? "no message"
            PQfinish(handle)
            let secrets = parsed.password.map { [$0] } ?? []
            throw PostgresError(.connectionFailed, detail: PostgresError.scrub(message, removing: secrets))
        }
        return handle
    }
}
