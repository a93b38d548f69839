import Crypto
import Foundation
import Support

/// One forward-only schema change, `migrations/NNNN_name.sql`.
public struct Migration: Sendable, Equatable {
    /// NNNN.
    public let version: Int
    /// The file name without number and extension.
    public let name: String
    /// The SQL, run in one transaction.
    public let sql: String
    /// SHA-256 of the file's bytes, hex.
    public let checksum: String

    /// Creates a migration from a file's name parts and contents.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hexDigest(sql)
    }

    /// `0001_name.sql`.
    public var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name + ".sql"
    }

    /// Reads every `NNNN_name.sql` in a folder; the numbers must run 1, 2, 3… without gaps.
    /// - Throws: ``MigrationError`` naming the first bad file.
    public static func load(from directory: URL) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError("cannot read the migrations folder \(directory.path)")
        }
        var migrations: [Migration] = []
        for file in names.sorted() where file.hasSuffix(".sql") {
            guard let match = file.wholeMatch(of: /([0-9]{4})_([a-z0-9_]+)\.sql/), let version = Int(match.1) else {
                throw MigrationError("\(file): migration names must look like 0001_name.sql")
            }
            guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(file).path),
                let sql = String(data: data, encoding: .utf8)
            else {
                throw MigrationError("\(file): cannot be read as UTF-8")
            }
            migrations.append(Migration(version: version, name: String(match.2), sql: sql))
        }
        for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
            throw MigrationError("\(migration.fileName): expected number \(index + 1); numbers must have no gaps")
        }
        return migrations
    }

    /// Finds the migrations folder: `FBS_MIGRATIONS_DIR`, `./migrations`, the installed
    /// `<prefix>/share/fbsessiond/migrations`, or a `migrations` folder above the executable (a source checkout).
    public static func locateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        let candidates = ResourceLocator.candidates("migrations", setting: "FBS_MIGRATIONS_DIR", environment: environment)
        // A configured folder is taken as it is (a wrong one then fails loudly when read).
        if !environment["FBS_MIGRATIONS_DIR", default: ""].isEmpty { return candidates.first }
        return candidates.first { url in
            (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.contains { $0.hasPrefix("0001_") } ?? false
        }
    }
}

/// A problem with the migration files or the applied history.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, for an operator.
    public let description: String
    init(_ description: String) { self.description = description }
}
