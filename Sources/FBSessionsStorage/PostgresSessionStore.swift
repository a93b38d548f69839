import FBSessionsCore
import Foundation
import Postgres

/// ``SessionStore`` over PostgreSQL. Tokens are sealed with the key ring, bound to their session id; every change
/// and its events share one transaction; every statement is scoped by app.
///
/// Logins for one owner are serialized by a row lock on `owners`, so the slot rule holds under concurrency; the
/// partial unique indexes on live sessions are the last line of defence.
///
/// Lock order: every transaction that changes an owner's sessions locks the owner's row first, then session rows
/// (``lockOwner(_:appID:on:)``). Two such transactions therefore never wait on each other crosswise; the soak
/// found logins and "log out everyone" deadlocking when logout took the session rows first.
public struct PostgresSessionStore: SessionStore {
    private let database: Database
    private let keyring: Keyring
    private let statusReads: ReadBatcher<SessionRead, Session?>
    private let ownerReads: ReadBatcher<OwnerListRead, [Session]>
    private let tokenReads: ReadBatcher<TokenRead, SealedSession?>
    private let cache: ExactCache?
    /// Seconds before a deadline that `session.expiring` is written (`FBS_EXPIRY_WARNING`; 0: never).
    let expiryWarning: Double

    /// Creates the store.
    ///
    /// - Parameters:
    ///   - cache: The exact cache the status and owner-list reads answer from when it can (nil: every read goes
    ///     to the database).
    ///   - expiryWarning: Seconds before `token.expires_at` or `token.data_access_expires_at` that a standard
    ///     session gets `session.expiring` (`FBS_EXPIRY_WARNING`; 0: never), from the sweep or from a read
    ///     (PostgresSessionStore+Expiry.swift).
    public init(
        database: Database, keyring: Keyring, cache: ExactCache? = nil,
        expiryWarning: Double = Double(Settings.defaultExpiryWarning)
    ) {
        self.database = database
        self.keyring = keyring
        self.cache = cache
        let warning = max(0, expiryWarning)
        self.expiryWarning = warning
        statusReads = ReadBatcher(database: database) { connection, reads in
            try Self.fetchSessions(connection, reads, expiryWarning: warning)
        }
        ownerReads = ReadBatcher(database: database) { connection, reads in
            try Self.fetchOwnerLists(connection, reads, expiryWarning: warning)
        }
        tokenReads = ReadBatcher(database: database) { connection, reads in try Self.fetchTokens(connection, reads) }
    }

    public func storeLogin(_ login: LoginRecord) async throws -> StoredLogin {
        let keyring = self.keyring
        return try await database.transaction { connection in
            // The nonce first (its row lock is taken before the owner's by every login, so the lock order holds).
            var nonceSlot: Int?
            if let nonce = login.nonce {
                nonceSlot = try Self.useNonce(nonce, appID: login.appID, on: connection)
                    .flatMap { (0..<login.maxSlots).contains($0) ? $0 : nil }
            }
            try connection.execute(
                "INSERT INTO owners (app_id, owner) VALUES (\(login.appID), \(login.owner)) ON CONFLICT DO NOTHING")
            let activeID = try connection.query(
                "SELECT active_session_id FROM owners WHERE app_id = \(login.appID) AND owner = \(login.owner) FOR UPDATE"
            ).first?.decode("active_session_id", as: String?.self)
            let live = try connection.query(
                """
                SELECT id, slot, facebook_user_id FROM sessions
                WHERE app_id = \(login.appID) AND owner = \(login.owner) AND state <> 'closed'
                """
            ).map { (id: try $0.decode("id", as: String.self), slot: try $0.decode("slot", as: Int.self),
                     user: try $0.decode("facebook_user_id", as: String.self)) }
            var events: [SessionEvent] = []
            var replaced: Session?
            let sessionID: String
            let created: Bool
            if let existing = live.first(where: { $0.user == login.facebookUserID }) {
                sessionID = existing.id
                created = false
                let stored = try Self.read(existing.id, appID: login.appID, on: connection)
                let before = stored?.profile
                try Self.writeToken(login, sessionID: sessionID, keyring: keyring, insert: false, slot: existing.slot, on: connection)
                if login.kind == .limited, before?.pictureURL != login.profile.pictureURL {
                    try Self.dropLimitedPicture(appID: login.appID, facebookUserID: login.facebookUserID, on: connection)
                }
                events.append(
                    SessionEvent(
                        .tokenChanged, sessionID: sessionID, owner: login.owner,
                        data: ["user_changed": .bool(false), "login_kind": .string(login.kind.rawValue)]))
                let fields = before.map { login.profile.changedFields(from: $0) } ?? []
                if !fields.isEmpty {
                    events.append(SessionEvent(.profileChanged, sessionID: sessionID, owner: login.owner, data: ["fields": .strings(fields)]))
                }
                events += Self.actionEvents(
                    login.action, reason: login.actionReason, before: stored?.storedAction, sessionID: sessionID,
                    owner: login.owner)
            } else {
                let taken = Set(live.map(\.slot))
                let slot: Int
                if let requested = login.requestedSlot ?? nonceSlot {
                    slot = requested
                } else if let free = (0..<login.maxSlots).first(where: { !taken.contains($0) }) {
                    slot = free
                } else {
                    throw SessionError.slotsFull(login.maxSlots)
                }
                if let holder = live.first(where: { $0.slot == slot }) {
                    replaced = try Self.closeRow(holder.id, appID: login.appID, reason: .replaced, on: connection)
                    if let replaced {
                        events.append(SessionEvent(.sessionClosed, sessionID: replaced.id, owner: login.owner, data: ["reason": .string("replaced")]))
                    }
                }
                sessionID = Session.newID()
                created = true
                try Self.writeToken(login, sessionID: sessionID, keyring: keyring, insert: true, slot: slot, on: connection)
                events.append(SessionEvent(.sessionOpened, sessionID: sessionID, owner: login.owner))
                var data: [String: SessionEvent.Value] = [
                    "user_changed": .bool(true), "login_kind": .string(login.kind.rawValue),
                ]
                if let replaced { data["previous_session_id"] = .string(replaced.id) }
                events.append(SessionEvent(.tokenChanged, sessionID: sessionID, owner: login.owner, data: data))
                events += Self.actionEvents(
                    login.action, reason: login.actionReason, before: nil, sessionID: sessionID, owner: login.owner)
            }
            var active = activeID
            if replaced != nil, activeID == replaced?.id { active = nil }
            if login.activate { active = sessionID }
            if active != activeID {
                try connection.execute(
                    "UPDATE owners SET active_session_id = \(active) WHERE app_id = \(login.appID) AND owner = \(login.owner)")
                if active == sessionID {
                    events.append(SessionEvent(.sessionActivated, sessionID: sessionID, owner: login.owner))
                }
            }
            try EventWriter.write(events, appID: login.appID, on: connection)
            guard let session = try Self.read(sessionID, appID: login.appID, on: connection) else {
                throw SessionError.notFound
            }
            return StoredLogin(session: session, created: created, replaced: replaced)
        }
    }

    /// From the exact cache when it can answer (after its fence), else batched with other requests' status reads
    /// (``ReadBatcher``), filling the cache.
    public func session(id: String, appID: String) async throws -> Session? {
        let read = SessionRead(id: id, appID: appID)
        guard let cache else { return try await statusReads.load(read) }
        return try await cache.read(
            id, cached: { cache.session(id: id, appID: appID) },
            load: { try await statusReads.load(read) },
            fill: { session, mark in if let session { cache.fill(session, since: mark) } })
    }

    /// Statements run and requests answered by the batched status and list reads (tests, diagnostics).
    public var batchStatistics: (batches: Int, reads: Int) {
        let (status, lists) = (statusReads.statistics, ownerReads.statistics)
        return (status.batches + lists.batches, status.reads + lists.reads)
    }

    /// Statements run and requests answered by the batched token reads (tests, diagnostics).
    public var tokenReadStatistics: (batches: Int, reads: Int) { tokenReads.statistics }

    /// From the exact cache or batched with other requests' list reads, like ``session(id:appID:)``.
    public func sessions(owner: String, appID: String) async throws -> [Session] {
        let read = OwnerListRead(owner: owner, appID: appID)
        guard let cache else { return try await ownerReads.load(read) }
        return try await cache.read(
            cache.ownerKey(appID: appID, owner: owner), cached: { cache.sessions(owner: owner, appID: appID) },
            load: { try await ownerReads.load(read) },
            fill: { list, mark in cache.fill(list, owner: owner, appID: appID, since: mark) })
    }

    public func sessionWithToken(id: String, appID: String) async throws -> (session: Session, token: String)? {
        try await sessionWithToken(id: id, appID: appID, readBy: nil)
    }

    /// With a `stamp`, the read and its `token.read` entry are one statement, batched with other requests' token
    /// reads (``fetchTokens(_:_:)``): the entry costs no round trip of its own, and no token is handed out without it.
    public func sessionWithToken(id: String, appID: String, readBy stamp: AuditStamp?) async throws
        -> (session: Session, token: String)?
    {
        let found = try await tokenReads.load(TokenRead(id: id, appID: appID, stamp: stamp))
        guard let (session, sealed) = found else { return nil }
        guard session.state != .closed, let sealed else { throw SessionError.closed }
        return (session, try open(sealed, sessionID: session.id))
    }

    public func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool) async throws
        -> (session: Session, closedNow: Bool)?
    {
        try await close(id: id, appID: appID, reason: reason, keepRevocation: keepRevocation, revokedBy: nil)
    }

    public func close(
        id: String, appID: String, reason: ClosedReason, keepRevocation: Bool, revokedBy stamp: AuditStamp?
    ) async throws -> (session: Session, closedNow: Bool)? {
        try await database.transaction { connection in
            try Self.lockOwner(ofSession: id, appID: appID, on: connection)
            guard let current = try Self.read(id, appID: appID, on: connection, lock: true) else { return nil }
            guard current.state != .closed else { return (current, false) }
            if keepRevocation {
                try connection.execute(
                    """
                    INSERT INTO pending_revocations (session_id, app_id, token_key_id, token_box, login_kind)
                    SELECT id, app_id, token_key_id, token_box, login_kind FROM sessions
                    WHERE id = \(id) AND app_id = \(appID)
                    ON CONFLICT (session_id) DO NOTHING
                    """)
            }
            guard let closed = try Self.closeRow(id, appID: appID, reason: reason, on: connection) else { return nil }
            try EventWriter.write(
                [SessionEvent(.sessionClosed, sessionID: id, owner: closed.owner, data: ["reason": .string(reason.rawValue)])],
                appID: appID, on: connection)
            if let stamp {
                try PostgresAuditLog.append(
                    AuditDraft(
                        appID: appID, action: .sessionRevoked, actor: stamp.actor,
                        target: ["kind": .string("session"), "id": .string(id)], requestID: stamp.requestID),
                    on: connection)
            }
            return (closed, true)
        }
    }

    public func completeRevocation(sessionID: String, appID: String, confirmed: Bool) async throws {
        try await database.transaction { connection in
            _ = try connection.execute(
                "DELETE FROM pending_revocations WHERE session_id = \(sessionID) AND app_id = \(appID)")
            if confirmed {
                _ = try connection.execute(
                    """
                    UPDATE sessions SET revoked_at = coalesce(revoked_at, now())
                    WHERE id = \(sessionID) AND app_id = \(appID)
                    """)
            }
        }
    }

    public func revocation(sessionID: String, appID: String) async throws -> SessionService.Revocation {
        let row = try await database.run { connection in
            try connection.query(
                """
                SELECT s.revoked_at IS NOT NULL AS confirmed,
                    EXISTS (SELECT 1 FROM pending_revocations p WHERE p.session_id = s.id AND p.app_id = s.app_id) AS owed
                FROM sessions s WHERE s.id = \(sessionID) AND s.app_id = \(appID)
                """
            ).first
        }
        guard let row else { return .unavailable }
        if try row.decode("confirmed", as: Bool.self) { return .done }
        return try row.decode("owed", as: Bool.self) ? .pending : .unavailable
    }

    public func closeAll(owner: String, appID: String, reason: ClosedReason) async throws -> [Session] {
        try await database.transaction { connection in
            try Self.lockOwner(owner, appID: appID, on: connection)
            let ids = try connection.query(
                """
                SELECT id FROM sessions WHERE app_id = \(appID) AND owner = \(owner) AND state <> 'closed'
                ORDER BY slot FOR UPDATE
                """
            ).map { try $0.decode("id", as: String.self) }
            var closed: [Session] = []
            for id in ids {
                if let session = try Self.closeRow(id, appID: appID, reason: reason, on: connection) { closed.append(session) }
            }
            try EventWriter.write(
                closed.map { SessionEvent(.sessionClosed, sessionID: $0.id, owner: owner, data: ["reason": .string(reason.rawValue)]) },
                appID: appID, on: connection)
            return closed
        }
    }

    public func activate(sessionID: String, owner: String, appID: String) async throws -> Session {
        try await database.transaction { connection in
            try Self.lockOwner(owner, appID: appID, on: connection)
            guard let session = try Self.read(sessionID, appID: appID, on: connection, lock: true), session.owner == owner
            else { throw SessionError.notFound }
            guard session.state != .closed else { throw SessionError.closed }
            if session.active { return session }
            try connection.execute(
                """
                INSERT INTO owners (app_id, owner, active_session_id) VALUES (\(appID), \(owner), \(sessionID))
                ON CONFLICT (app_id, owner) DO UPDATE SET active_session_id = excluded.active_session_id
                """)
            try EventWriter.write([SessionEvent(.sessionActivated, sessionID: sessionID, owner: owner)], appID: appID, on: connection)
            guard let updated = try Self.read(sessionID, appID: appID, on: connection) else { throw SessionError.notFound }
            return updated
        }
    }

    // MARK: Rows

    /// `session.action_required` when a session's `action_required` becomes `action` from `before`: only when
    /// `action` is non-null and differs (once per change; none while it stays the same, none when it clears).
    /// The caller holds the owner's lock, so `before` is what it replaces.
    static func actionEvents(
        _ action: ActionRequired?, reason: ActionReason?, before: ActionRequired?, sessionID: String, owner: String
    ) -> [SessionEvent] {
        guard let action, action != before else { return [] }
        return [
            .actionRequired(action, reason: reason ?? .usual(for: action), sessionID: sessionID, owner: owner)
        ]
    }

    /// Locks the owner's row (if the owner has one): the first lock of every transaction that changes the
    /// owner's sessions.
    static func lockOwner(_ owner: String, appID: String, on connection: PostgresConnection) throws {
        _ = try connection.query("SELECT 1 FROM owners WHERE app_id = \(appID) AND owner = \(owner) FOR UPDATE")
    }

    /// Locks the row of the owner of session `id`, before the session's own row (a session's owner never
    /// changes, so reading it unlocked is safe).
    static func lockOwner(ofSession id: String, appID: String, on connection: PostgresConnection) throws {
        _ = try connection.query(
            """
            SELECT 1 FROM owners o JOIN sessions s ON s.app_id = o.app_id AND s.owner = o.owner
            WHERE s.id = \(id) AND s.app_id = \(appID) FOR UPDATE OF o
            """)
    }

    static func read(_ id: String, appID: String, on connection: PostgresConnection, lock: Bool = false) throws -> Session? {
        let rows = try lock
            ? connection.query(
                """
                SELECT \(unsafeSQL: SessionRow.columns) \(unsafeSQL: SessionRow.from)
                WHERE s.id = \(id) AND s.app_id = \(appID) FOR UPDATE OF s
                """)
            : connection.query(
                """
                SELECT \(unsafeSQL: SessionRow.columns) \(unsafeSQL: SessionRow.from)
                WHERE s.id = \(id) AND s.app_id = \(appID)
                """)
        return try rows.first.map(SessionRow.session)
    }

    /// Closes one live session row: erases token, profile and granted assets, releases the owner's active pointer. No event.
    static func closeRow(_ id: String, appID: String, reason: ClosedReason, on connection: PostgresConnection) throws -> Session? {
        let changed = try connection.execute(
            """
            UPDATE sessions SET state = 'closed', closed_reason = \(reason.rawValue), closed_at = now(),
                token_key_id = NULL, token_box = NULL, profile = NULL, granular_scopes = '[]',
                action_required = NULL, validating_until = NULL, updated_at = now()
            WHERE id = \(id) AND app_id = \(appID) AND state <> 'closed'
            """)
        guard changed > 0 else { return nil }
        try connection.execute(
            "UPDATE owners SET active_session_id = NULL WHERE app_id = \(appID) AND active_session_id = \(id)")
        if [.loggedOut, .appRemoved, .dataDeletion].contains(reason) {
            // The user's cached pictures go with the login (migration 0005; PostgresPictureStore.erase is the same).
            try connection.execute(
                """
                DELETE FROM picture_cache WHERE app_id = \(appID)
                    AND facebook_user_id = (SELECT facebook_user_id FROM sessions WHERE id = \(id) AND app_id = \(appID))
                """)
        }
        return try read(id, appID: appID, on: connection)
    }

    private static func writeToken(
        _ login: LoginRecord, sessionID: String, keyring: Keyring, insert: Bool, slot: Int, on connection: PostgresConnection
    ) throws {
        let sealed = try keyring.seal(Array(login.token.utf8), context: sessionID)
        let profile = SessionRow.profileJSON(login.profile)
        let granularScopes = SessionRow.granularScopesJSON(login.granularScopes)
        if insert {
            try connection.execute(
                """
                INSERT INTO sessions (id, app_id, owner, slot, facebook_user_id, state, action_required, token_key_id,
                    token_box, token_expires_at, data_access_expires_at, token_refreshed_at, permissions,
                    declined_permissions, expired_permissions, granular_scopes, profile, profile_refreshed_at,
                    validated_at, login_kind, token_issued_at, token_binding)
                VALUES (\(sessionID), \(login.appID), \(login.owner), \(slot), \(login.facebookUserID), 'open',
                    \(login.action?.rawValue), \(sealed.keyID), \(sealed.box), \(login.tokenExpiresAt),
                    \(login.dataAccessExpiresAt), now(), \(login.permissions.granted), \(login.permissions.declined),
                    \(login.permissions.expired), \(granularScopes)::jsonb, \(profile)::jsonb, now(), now(),
                    \(login.kind.rawValue), \(login.tokenIssuedAt), \(login.deviceKeyThumbprint))
                """)
        } else {
            try connection.execute(
                """
                UPDATE sessions SET action_required = \(login.action?.rawValue), token_key_id = \(sealed.keyID),
                    token_box = \(sealed.box), token_expires_at = \(login.tokenExpiresAt),
                    data_access_expires_at = \(login.dataAccessExpiresAt), token_refreshed_at = now(),
                    permissions = \(login.permissions.granted), declined_permissions = \(login.permissions.declined),
                    expired_permissions = \(login.permissions.expired), granular_scopes = \(granularScopes)::jsonb,
                    profile = \(profile)::jsonb,
                    profile_refreshed_at = now(), validated_at = now(), updated_at = now(),
                    login_kind = \(login.kind.rawValue), token_issued_at = \(login.tokenIssuedAt),
                    token_binding = \(login.deviceKeyThumbprint)
                WHERE id = \(sessionID) AND app_id = \(login.appID)
                """)
        }
    }

    func keyringSeal(_ token: String, sessionID: String) throws -> Keyring.Sealed {
        try keyring.seal(Array(token.utf8), context: sessionID)
    }

    func databaseRun<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await database.run(body)
    }

    func databaseTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await database.transaction(body)
    }

    func open(_ sealed: Keyring.Sealed, sessionID: String) throws -> String {
        do {
            return String(decoding: try keyring.open(sealed, context: sessionID), as: UTF8.self)
        } catch {
            throw ServiceError.undecryptable
        }
    }
}
