import FBSessionsCore
import Foundation
import Postgres

/// Moves every sealed secret to the key ring's current key, a batch per transaction, so the work can be stopped
/// at any point and resumed: each run continues with the rows still sealed under an older key.
public struct Reencryptor: Sendable {
    /// A table holding sealed values: its key column, box column, and the column whose value is the associated
    /// data (the row's own id, or the session id for pending revocations).
    struct SealedColumn: Sendable {
        let table: StaticString
        let id: StaticString
        let keyColumn: StaticString
        let boxColumn: StaticString
    }

    static let columns = [
        SealedColumn(table: "apps", id: "id", keyColumn: "secret_key_id", boxColumn: "secret_box"),
        SealedColumn(table: "sessions", id: "id", keyColumn: "token_key_id", boxColumn: "token_box"),
        SealedColumn(table: "pending_revocations", id: "session_id", keyColumn: "token_key_id", boxColumn: "token_box"),
        SealedColumn(table: "webhooks", id: "id", keyColumn: "secret_key_id", boxColumn: "secret_box"),
    ]

    private let database: Database
    private let keyring: Keyring

    /// Creates a re-encryptor.
    public init(database: Database, keyring: Keyring) {
        self.database = database
        self.keyring = keyring
    }

    /// Rows still sealed under another key than the current one, by table.
    public func remaining() async throws -> [(table: String, count: Int)] {
        let current = keyring.currentKeyID
        return try await database.run { connection in
            try Self.columns.map { column in
                let rows = try connection.query(
                    """
                    SELECT count(*) AS n FROM \(unsafeSQL: column.table)
                    WHERE \(unsafeSQL: column.keyColumn) IS NOT NULL AND \(unsafeSQL: column.keyColumn) <> \(current)
                    """)
                return (column.table.description, try rows.first?.decode("n", as: Int.self) ?? 0)
            }
        }
    }

    /// Re-seals up to `limit` rows of each table in one transaction; returns how many were re-sealed.
    ///
    /// Rows are locked `FOR NO KEY UPDATE`, not `FOR UPDATE`: every insert into a table that references `apps`
    /// (a login's session row, an event) holds `FOR KEY SHARE` on its app row, which `FOR UPDATE ... SKIP LOCKED`
    /// skips, so under login traffic the app secret was never re-sealed (found by tools/chaos rotation).
    public func step(limit: Int) async throws -> Int {
        let keyring = self.keyring
        return try await database.transaction { connection in
            var done = 0
            for column in Self.columns {
                let rows = try connection.query(
                    """
                    SELECT \(unsafeSQL: column.id) AS id, \(unsafeSQL: column.keyColumn) AS key_id,
                           \(unsafeSQL: column.boxColumn) AS box
                    FROM \(unsafeSQL: column.table)
                    WHERE \(unsafeSQL: column.keyColumn) IS NOT NULL AND \(unsafeSQL: column.keyColumn) <> \(keyring.currentKeyID)
                    LIMIT \(limit) FOR NO KEY UPDATE SKIP LOCKED
                    """)
                for row in rows {
                    let id = try row.decode("id", as: String.self)
                    let sealed = Keyring.Sealed(keyID: try row.decode("key_id"), box: try row.decode("box"))
                    let resealed = try keyring.seal(try keyring.open(sealed, context: id), context: id)
                    try connection.execute(
                        """
                        UPDATE \(unsafeSQL: column.table)
                        SET \(unsafeSQL: column.keyColumn) = \(resealed.keyID), \(unsafeSQL: column.boxColumn) = \(resealed.box)
                        WHERE \(unsafeSQL: column.id) = \(id)
                        """)
                    done += 1
                }
            }
            return done
        }
    }
}
