import Foundation

/// The PostgreSQL programs a local cluster needs: `initdb`, `pg_ctl`, `postgres`, `psql` and `createdb`.
///
/// Thread safety: an immutable value; share it freely.
public struct PostgresBinaries: Sendable, Hashable {
    /// The names of the programs that must all be found.
    public static let requiredPrograms = ["initdb", "pg_ctl", "postgres", "psql", "createdb"]

    /// Path of `initdb`.
    public let initdb: String
    /// Path of `pg_ctl`.
    public let pgCtl: String
    /// Path of `postgres`.
    public let postgres: String
    /// Path of `psql`.
    public let psql: String
    /// Path of `createdb`.
    public let createdb: String

    /// The directory holding the server programs (`initdb`, `pg_ctl`, `postgres`).
    public var directory: String {
        URL(fileURLWithPath: initdb).deletingLastPathComponent().path
    }

    /// Uses the programs in one directory.
    /// - Parameter directory: a PostgreSQL `bin` directory, such as `/usr/lib/postgresql/15/bin`.
    /// - Throws: `ClusterError.binariesNotFound` naming the programs missing from it.
    public init(directory: String) throws {
        let missing = Self.missingPrograms(in: directory)
        guard missing.isEmpty else {
            throw ClusterError(
                .binariesNotFound,
                "\(directory) lacks \(missing.joined(separator: ", ")); "
                    + "install the Debian package postgresql-15 or point PG_BIN at a PostgreSQL bin directory"
            )
        }
        self.init(
            initdb: "\(directory)/initdb",
            pgCtl: "\(directory)/pg_ctl",
            postgres: "\(directory)/postgres",
            psql: "\(directory)/psql",
            createdb: "\(directory)/createdb"
        )
    }

    private init(initdb: String, pgCtl: String, postgres: String, psql: String, createdb: String) {
        self.initdb = initdb
        self.pgCtl = pgCtl
        self.postgres = postgres
        self.psql = psql
        self.createdb = createdb
    }

    /// Finds the programs, looking in this order:
    /// 1. the directory in the `PG_BIN` environment variable, when it is set (and only there);
    /// 2. the newest `/usr/lib/postgresql/<version>/bin` (Debian and Ubuntu);
    /// 3. the directory printed by `pg_config --bindir`;
    /// 4. the directories of `PATH`.
    /// - Parameter environment: the environment to read `PG_BIN` and `PATH` from; this process's when nil.
    /// - Returns: the programs found.
    /// - Throws: `ClusterError.binariesNotFound` listing every place looked at.
    public static func locate(environment: [String: String]? = nil) throws -> PostgresBinaries {
        let environment = environment ?? ProcessInfo.processInfo.environment
        if let pgBin = environment["PG_BIN"], !pgBin.isEmpty {
            return try PostgresBinaries(directory: pgBin)
        }
        var looked = ["PG_BIN (not set)"]

        let debianRoot = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: debianRoot)) ?? []
        let newestFirst = versions.sorted { versionKey($0).lexicographicallyPrecedes(versionKey($1)) }.reversed()
        for version in newestFirst {
            let directory = "\(debianRoot)/\(version)/bin"
            if missingPrograms(in: directory).isEmpty {
                return try PostgresBinaries(directory: directory)
            }
        }
        let debianNote = versions.isEmpty ? "none" : "incomplete: " + versions.joined(separator: ", ")
        looked.append("\(debianRoot)/*/bin (\(debianNote))")

        let searchPath = environment["PATH"]
        if let pgConfig = Command.findInPath("pg_config", searchPath: searchPath) {
            let result = try? Command(executable: pgConfig, arguments: ["--bindir"], timeout: .seconds(10)).run()
            let directory = result?.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if result?.status == 0, !directory.isEmpty, missingPrograms(in: directory).isEmpty {
                return try PostgresBinaries(directory: directory)
            }
            looked.append("\(pgConfig) --bindir (\(directory.isEmpty ? "no answer" : directory + ": incomplete"))")
        } else {
            looked.append("pg_config --bindir (pg_config not on PATH)")
        }

        let found = requiredPrograms.map { Command.findInPath($0, searchPath: searchPath) }
        let paths = found.compactMap { $0 }
        if paths.count == requiredPrograms.count {
            return PostgresBinaries(
                initdb: paths[0],
                pgCtl: paths[1],
                postgres: paths[2],
                psql: paths[3],
                createdb: paths[4]
            )
        }
        let missing = zip(requiredPrograms, found).filter { $0.1 == nil }.map(\.0)
        looked.append("PATH (missing \(missing.joined(separator: ", ")))")

        throw ClusterError(
            .binariesNotFound,
            "PostgreSQL server programs not found. Looked at: \(looked.joined(separator: "; ")). "
                + "Install them with `apt-get install postgresql-15` or set PG_BIN to a PostgreSQL bin directory."
        )
    }

    /// Whether `locate()` would succeed with the current environment.
    public static var isAvailable: Bool {
        (try? locate()) != nil
    }

    /// The required programs that are not executable files in `directory`.
    static func missingPrograms(in directory: String) -> [String] {
        requiredPrograms.filter { !FileManager.default.isExecutableFile(atPath: "\(directory)/\($0)") }
    }

    /// `"15"` → `[15]`, `"9.6"` → `[9, 6]`: numeric parts, for ordering version directory names.
    private static func versionKey(_ name: String) -> [Int] {
        name.split(whereSeparator: { !$0.isNumber }).map { Int($0) ?? 0 }
    }
}
