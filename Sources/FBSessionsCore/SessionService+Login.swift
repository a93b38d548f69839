import Crypto
import Foundation

/// Why a login was refused before anything was stored.
public enum LoginError: Error, Sendable, Equatable {
    /// The token is valid but was issued for another Facebook app.
    case tokenForAnotherApp
    /// Graph did not say which user the token belongs to, or `/me` named another user.
    case userMismatch
}

extension SessionService {
    /// Logs a Facebook account in for an owner: checks the token with `debug_token`, exchanges it for a
    /// long-lived one, reads the profile and permissions (all four calls at once), then stores everything in one
    /// transaction. Nothing is stored unless every check passed.
    /// - Throws: `GraphError` (a rejected token, or Graph unavailable), ``LoginError``, ``SessionError/slotsFull``.
    public func login(app: App, owner: String, accessToken: String, slot: Int?, activate: Bool) async throws
        -> StoredLogin
    {
        let credentials = try await self.credentials.credentials(for: app)
        let graph = self.graph
        async let infoCall = capture { try await graph.debugToken(inputToken: accessToken, credentials: credentials) }
        async let exchangeCall = capture {
            try await graph.exchangeForLongLivedToken(accessToken: accessToken, credentials: credentials)
        }
        async let profileCall = capture {
            try await graph.me(fields: GraphProfile.defaultFields, accessToken: accessToken, credentials: credentials)
        }
        async let permissionsCall = capture { try await graph.permissions(accessToken: accessToken, credentials: credentials) }
        let (infoResult, exchangeResult, profileResult, permissionsResult) = await (
            infoCall, exchangeCall, profileCall, permissionsCall
        )

        let now = Date()
        let info = try infoResult.get()
        if let failure = info.failure(now: now) { throw failure }
        guard info.appID == app.facebookAppID else { throw LoginError.tokenForAnotherApp }
        let profile = try profileResult.get()
        guard let userID = info.userID, userID == profile.id else { throw LoginError.userMismatch }
        let permissions = try permissionsResult.get()

        var token = accessToken
        var expiresAt = info.expiresAt
        switch exchangeResult {
        case .success(let grant):
            token = grant.accessToken
            expiresAt = grant.expiresAt(from: now)
        case .failure(let error):
            // A token that already lives for weeks is stored as it is; a short-lived one must be extended.
            let longLived = info.expiresAt.map { $0.timeIntervalSince(now) > 7 * 86_400 } ?? true
            if !longLived { throw error }
        }
        let record = LoginRecord(
            appID: app.id, owner: owner, requestedSlot: slot, activate: activate, maxSlots: policy.maxSlots,
            facebookUserID: userID, token: token, tokenExpiresAt: expiresAt,
            dataAccessExpiresAt: info.dataAccessExpiresAt, permissions: permissions, profile: Profile(profile),
            action: Self.action(permissions: permissions, required: app.requiredPermissions))
        var stored = try await store.storeLogin(record)
        stored.session = present(stored.session, now: Date())
        return stored
    }

    /// Logs one session out (idempotent). With `revoke`, also de-authorizes the app at Facebook; when Graph cannot
    /// take that now, the session closes anyway and the revocation stays pending for the background sweep.
    /// - Returns: nil when unknown to this app.
    public func logout(_ id: String, app: App, revoke: Bool) async throws -> (Session, Revocation?)? {
        var token: String?
        if revoke {
            do {
                token = try await store.sessionWithToken(id: id, appID: app.id)?.token
            } catch is SessionError {
                token = nil  // Unknown or already closed: `close` below answers for it.
            } catch ServiceError.undecryptable {
                token = nil  // A token that no key opens cannot be revoked; the session still closes.
            }
            // Any other failure (the database) is thrown: the logout then changed nothing and the caller retries,
            // instead of closing the session as if it had no token to revoke.
        }
        guard let (session, closedNow) = try await store.close(
            id: id, appID: app.id, reason: .loggedOut, keepRevocation: revoke && token != nil)
        else { return nil }
        guard revoke, closedNow, let token else { return (session, revoke ? .done : nil) }
        do {
            let credentials = try await self.credentials.credentials(for: app)
            try await graph.revokePermissions(accessToken: token, credentials: credentials)
            try await store.completeRevocation(sessionID: id, appID: app.id)
            return (session, .done)
        } catch let error as GraphError where error.closedReason != nil {
            // The token is already dead at Facebook: nothing is left to revoke.
            try await store.completeRevocation(sessionID: id, appID: app.id)
            return (session, .done)
        } catch {
            return (session, .pending)
        }
    }

    /// Logs every session of an owner out.
    public func logoutAll(owner: String, app: App) async throws -> [Session] {
        try await store.closeAll(owner: owner, appID: app.id, reason: .loggedOut)
    }

    /// The owner's live sessions by slot, and the active one's id.
    public func sessions(owner: String, app: App) async throws -> (sessions: [Session], activeID: String?) {
        let now = Date()
        let sessions = try await store.sessions(owner: owner, appID: app.id).map { present($0, now: now) }
        return (sessions, sessions.first(where: \.active)?.id)
    }

    /// Makes a session the owner's active one.
    public func activate(_ id: String, owner: String, app: App) async throws -> Session {
        present(try await store.activate(sessionID: id, owner: owner, appID: app.id), now: Date())
    }

    /// The decrypted token with its `appsecret_proof`, for backends that call Graph themselves.
    /// - Throws: ``SessionError/closed`` for a closed session.
    public func token(_ id: String, app: App) async throws -> (session: Session, token: String, proof: String)? {
        guard let (session, token) = try await store.sessionWithToken(id: id, appID: app.id) else { return nil }
        let credentials = try await self.credentials.credentials(for: app)
        return (present(session, now: Date()), token, credentials.appSecretProof(for: token))
    }
}
