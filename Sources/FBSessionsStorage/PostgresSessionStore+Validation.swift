import FBSessionsCore
import Foundation
import Postgres

extension PostgresSessionStore {
    public func claimValidation(id: String, appID: String, staleAfter: Double, lease: Double) async throws
        -> ValidationClaim
    {
        let claimed: (Session, Keyring.Sealed)? = try await databaseRun { connection in
            let rows = try connection.query(
                """
                UPDATE sessions s SET validating_until = now() + make_interval(secs => \(lease))
                WHERE s.id = \(id) AND s.app_id = \(appID) AND s.state <> 'closed' AND s.login_kind = 'standard'
                  AND (s.validated_at IS NULL OR s.validated_at <= now() - make_interval(secs => \(staleAfter)))
                  AND (s.validating_until IS NULL OR s.validating_until < now())
                RETURNING s.token_key_id, s.token_box
                """)
            guard let row = rows.first, let keyID = try row.decode("token_key_id", as: String?.self),
                let session = try Self.read(id, appID: appID, on: connection)
            else { return nil }
            return (session, Keyring.Sealed(keyID: keyID, box: try row.decode("token_box", as: [UInt8].self)))
        }
        if let (session, sealed) = claimed {
            return .claimed(session, token: try open(sealed, sessionID: id))
        }
        let current: (Session, Bool)? = try await databaseRun { connection in
            guard let row = try connection.query(
                """
                SELECT \(unsafeSQL: SessionRow.columns),
                       (s.validating_until IS NOT NULL AND s.validating_until >= now()) AS busy
                \(unsafeSQL: SessionRow.from) WHERE s.id = \(id) AND s.app_id = \(appID)
                """
            ).first else { return nil }
            return (try SessionRow.session(from: row), try row.decode("busy", as: Bool.self))
        }
        guard let (session, busy) = current else { return .notFound }
        return busy && session.state != .closed ? .busy(session) : .settled(session)
    }

    public func finishValidation(id: String, appID: String, result: ValidationResult) async throws -> Session? {
        let sealedExtension: Keyring.Sealed?
        if case .valid(_, _, _, _, let extended?, _, _) = result {
            sealedExtension = try keyringSeal(extended, sessionID: id)
        } else {
            sealedExtension = nil
        }
        return try await databaseTransaction { connection in
            try Self.lockOwner(ofSession: id, appID: appID, on: connection) // before the session: see the lock order
            guard let current = try Self.read(id, appID: appID, on: connection, lock: true) else { return nil }
            guard current.state != .closed else { return current }
            var events: [SessionEvent] = []
            switch result {
            case .deferred:
                try connection.execute("UPDATE sessions SET validating_until = NULL WHERE id = \(id) AND app_id = \(appID)")
            case .dataAccessExpired:
                try connection.execute(
                    """
                    UPDATE sessions SET validating_until = NULL, validated_at = now(), action_required = 'reauthorize',
                        updated_at = now()
                    WHERE id = \(id) AND app_id = \(appID)
                    """)
                events += Self.actionEvents(
                    .reauthorize, reason: .dataAccessExpired, before: current.storedAction, sessionID: id,
                    owner: current.owner)
            case .invalid(let reason):
                _ = try Self.closeRow(id, appID: appID, reason: reason, on: connection)
                events.append(SessionEvent(.sessionClosed, sessionID: id, owner: current.owner, data: ["reason": .string(reason.rawValue)]))
            case .valid(
                let expiresAt, let dataAccessExpiresAt, let permissions, let profile, _, let action, let actionReason):
                try connection.execute(
                    """
                    UPDATE sessions SET validating_until = NULL, validated_at = now(), updated_at = now(),
                        token_expires_at = \(expiresAt), data_access_expires_at = \(dataAccessExpiresAt),
                        action_required = \(action?.rawValue)
                    WHERE id = \(id) AND app_id = \(appID)
                    """)
                if let permissions {
                    try connection.execute(
                        """
                        UPDATE sessions SET permissions = \(permissions.granted),
                            declined_permissions = \(permissions.declined), expired_permissions = \(permissions.expired)
                        WHERE id = \(id) AND app_id = \(appID)
                        """)
                }
                if let profile {
                    try connection.execute(
                        """
                        UPDATE sessions SET profile = \(SessionRow.profileJSON(profile))::jsonb, profile_refreshed_at = now()
                        WHERE id = \(id) AND app_id = \(appID)
                        """)
                    let fields = current.profile.map { profile.changedFields(from: $0) } ?? []
                    if !fields.isEmpty {
                        events.append(SessionEvent(.profileChanged, sessionID: id, owner: current.owner, data: ["fields": .strings(fields)]))
                    }
                }
                if let sealedExtension {
                    try connection.execute(
                        """
                        UPDATE sessions SET token_key_id = \(sealedExtension.keyID), token_box = \(sealedExtension.box),
                            token_refreshed_at = now()
                        WHERE id = \(id) AND app_id = \(appID)
                        """)
                    events.append(SessionEvent(.tokenChanged, sessionID: id, owner: current.owner, data: ["user_changed": .bool(false)]))
                }
                events += Self.actionEvents(
                    action, reason: actionReason, before: current.storedAction, sessionID: id, owner: current.owner)
            }
            try EventWriter.write(events, appID: appID, on: connection)
            return try Self.read(id, appID: appID, on: connection)
        }
    }
}
