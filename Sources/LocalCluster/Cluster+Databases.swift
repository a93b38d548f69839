import Foundation

extension Cluster {
    /// Creates a database with `createdb`, connecting as a client over TCP.
    /// - Parameters:
    ///   - name: the new database's name, `[a-z0-9_]+`.
    ///   - template: the database to copy, `[a-z0-9_]+`; nil for PostgreSQL's default (`template1`).
    /// - Throws: `ClusterError.invalidName` for a bad name, `.commandFailed` when `createdb` fails
    ///   (for example because the database exists).
    public func createDatabase(_ name: String, template: String? = nil) throws {
        try Cluster.validateName(name)
        var arguments = ["-w", "-h", Cluster.host, "-p", String(port), "-U", Cluster.user, "--maintenance-db=postgres"]
        if let template {
            try Cluster.validateName(template)
            arguments += ["-T", template]
        }
        arguments.append(name)
        try Command(executable: binaries.createdb, arguments: arguments).check("could not create database \(name)")
    }

    /// Drops a database if it exists, disconnecting its clients (`DROP DATABASE ... WITH (FORCE)`).
    /// - Parameter name: the database's name, `[a-z0-9_]+`.
    /// - Throws: `ClusterError.invalidName` for a bad name, `.commandFailed` when `psql` fails.
    public func dropDatabase(_ name: String) throws {
        try Cluster.validateName(name)
        try runSQL("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }

    /// Whether a database exists.
    /// - Parameter name: the database's name, `[a-z0-9_]+`.
    /// - Returns: true when `pg_database` has a row of that name.
    /// - Throws: `ClusterError.invalidName` for a bad name, `.commandFailed` when `psql` fails.
    public func databaseExists(_ name: String) throws -> Bool {
        try Cluster.validateName(name)
        return try runSQL("SELECT count(*) FROM pg_database WHERE datname = '\(name)'") == "1"
    }

    /// Runs SQL with `psql` as the superuser, stopping at the first error.
    ///
    /// For administration and tests: the text is sent as it is, so never build it from untrusted input.
    /// - Parameters:
    ///   - sql: one or more statements.
    ///   - database: the database to connect to.
    /// - Returns: the unaligned, tuples-only output, trimmed (`select 1` gives `"1"`).
    /// - Throws: `ClusterError.commandFailed` with `psql`'s error output.
    @discardableResult
    public func runSQL(_ sql: String, database: String = "postgres") throws -> String {
        let arguments = [
            "-X", "-w", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", connectionURL(database: database), "-c", sql,
        ]
        let command = Command(executable: binaries.psql, arguments: arguments)
        let result = try command.check("psql failed on database \(database)")
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Checks that `name` is a plain identifier: 1 to 63 bytes of `[a-z0-9_]`.
    /// - Parameter name: a database name.
    /// - Throws: `ClusterError.invalidName` otherwise.
    public static func validateName(_ name: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_".utf8)
        guard !name.isEmpty, name.utf8.count <= 63, name.utf8.allSatisfy({ allowed.contains($0) }) else {
            throw ClusterError(.invalidName, "database name \(String(reflecting: name)) must match [a-z0-9_]{1,63}")
        }
    }
}
