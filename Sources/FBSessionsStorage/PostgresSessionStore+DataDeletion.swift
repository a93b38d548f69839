import FBSessionsCore
import Foundation
import Postgres

/// Facebook's deauthorize and data-deletion callbacks: every session of one Facebook user in one app, across
/// owners, in one transaction with its events.
extension PostgresSessionStore: FacebookUserStore {
    public func closeSessions(ofFacebookUser userID: String, appID: String, reason: ClosedReason) async throws
        -> [Session]
    {
        try await databaseTransaction { connection in
            try Self.closeFacebookUser(userID, appID: appID, reason: reason, on: connection)
        }
    }

    public func eraseFacebookUser(_ userID: String, appID: String, confirmationCode: String) async throws
        -> DataDeletion
    {
        try await databaseTransaction { connection in
            _ = try Self.closeFacebookUser(userID, appID: appID, reason: .dataDeletion, on: connection)
            // Every cached picture of the user goes too, whether or not a session was still open to close.
            try connection.execute("DELETE FROM picture_cache WHERE app_id = \(appID) AND facebook_user_id = \(userID)")
            let rows = try connection.query(
                """
                INSERT INTO data_deletions (confirmation_code, app_id, status, completed_at)
                VALUES (\(confirmationCode), \(appID), 'completed', now())
                RETURNING \(unsafeSQL: Self.deletionColumns)
                """)
            guard let row = rows.first else { throw MigrationError("INSERT returned no row") }
            return try Self.deletion(from: row)
        }
    }

    public func dataDeletion(confirmationCode: String) async throws -> DataDeletion? {
        try await databaseRun { connection in
            try connection.query(
                """
                SELECT \(unsafeSQL: Self.deletionColumns) FROM data_deletions
                WHERE confirmation_code = \(confirmationCode)
                """
            ).first.map(Self.deletion)
        }
    }

    /// Closes the user's live sessions (all owners) with their events, and drops the user's pending
    /// revocations: the app is removed at Facebook already, and each holds a token.
    private static func closeFacebookUser(
        _ userID: String, appID: String, reason: ClosedReason, on connection: PostgresConnection
    ) throws -> [Session] {
        // The owners first, in one order, then their sessions (the store's lock order).
        _ = try connection.query(
            """
            SELECT 1 FROM owners
            WHERE app_id = \(appID) AND owner IN (
                SELECT owner FROM sessions WHERE app_id = \(appID) AND facebook_user_id = \(userID) AND state <> 'closed')
            ORDER BY owner FOR UPDATE
            """)
        let ids = try connection.query(
            """
            SELECT id FROM sessions
            WHERE app_id = \(appID) AND facebook_user_id = \(userID) AND state <> 'closed'
            ORDER BY owner, slot FOR UPDATE
            """
        ).map { try $0.decode("id", as: String.self) }
        var closed: [Session] = []
        for id in ids {
            if let session = try closeRow(id, appID: appID, reason: reason, on: connection) { closed.append(session) }
        }
        try connection.execute(
            """
            DELETE FROM pending_revocations
            WHERE app_id = \(appID)
              AND session_id IN (SELECT id FROM sessions WHERE app_id = \(appID) AND facebook_user_id = \(userID))
            """)
        try EventWriter.write(
            closed.map {
                SessionEvent(.sessionClosed, sessionID: $0.id, owner: $0.owner, data: ["reason": .string(reason.rawValue)])
            },
            appID: appID, on: connection)
        return closed
    }

    private static let deletionColumns: StaticString = "confirmation_code, status, requested_at, completed_at"

    private static func deletion(from row: PostgresRow) throws -> DataDeletion {
        DataDeletion(
            confirmationCode: try row.decode("confirmation_code"),
            status: DataDeletion.Status(rawValue: try row.decode("status", as: String.self)) ?? .completed,
            requestedAt: try row.decode("requested_at"), completedAt: try row.decode("completed_at", as: Date?.self))
    }
}
