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

    /// Opens a `PGconn` with `PQconnectdbParams` and makes its socket non-blocking.
    ///
    /// The keyword list holds the defaults first (`connect_timeout`, the keepalives and `tcp_user_timeout`), then
    /// the connection string as `dbname` (expanded), then `client_encoding` and `application_name`. libpq keeps
    /// the last value of a keyword, so the string's own `connect_timeout` and keepalive settings win over the
    /// defaults, and the encoding and the name win over the string's.
    ///
    /// - Parameters:
    ///   - connectionString: A libpq URI or `key=value` string.
    ///   - parsed: What `parse(_:)` found in it.
    ///   - options: The connect timeout, keepalives and application name.
    /// - Returns: A connection in state `CONNECTION_OK`, in non-blocking mode.
    /// - Throws: `PostgresError` with code `.connectionFailed`.
    static func connect(_ connectionString: String, parsed: ParsedConnectionString, options: Options) throws
        -> OpaquePointer
    {
        guard parsed.isValid else {
            // libpq's parse errors quote pieces of the string, which may hold the password: say nothing more.
            throw PostgresError(.connectionFailed, detail: "the connection string is not valid")
        }
        let timeout = max(1, Int(options.connectTimeout.postgresSeconds.rounded(.up)))
        var settings: [(String, String)] = [("connect_timeout", String(timeout))] + options.keepalives.settings
        settings += [("dbname", connectionString), ("client_encoding", "UTF8")]
        if let applicationName = options.applicationName {
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
        let secrets = parsed.password.map { [$0] } ?? []
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = PQerrorMessage(handle).map { String(cString: $0) } ?? "no message"
            PQfinish(handle)
            throw PostgresError(.connectionFailed, detail: PostgresError.scrub(message, removing: secrets))
        }
        guard PQsetnonblocking(handle, 1) == 0 else {
            let message = PQerrorMessage(handle).map { String(cString: $0) } ?? "no message"
            PQfinish(handle)
            throw PostgresError(.connectionFailed, detail: PostgresError.scrub(message, removing: secrets))
        }
        return handle
    }

    /// The connection settings libpq uses for this connection (`PQconninfo`), by keyword, without the password:
    /// what the defaults and the connection string came to.
    ///
    /// - Returns: Every keyword with a value; empty when the connection is closed.
    func settingsInEffect() -> [String: String] {
        guard let handle, let options = PQconninfo(handle) else { return [:] }
        defer { PQconninfoFree(options) }
        var found: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            if name != "password", let value = option.pointee.val {
                found[name] = String(cString: value)
            }
            option += 1
        }
        return found
    }
}
