import Crypto
import Foundation

/// Why a login was refused before anything was stored.
public enum LoginError: Error, Sendable, Equatable {
    /// The token is valid but was issued for another Facebook app.
    case tokenForAnotherApp
    /// The token is valid and this app's, but `debug_token` says it is not a person's user token (`APP`, `PAGE`,
    /// `SYSTEM_USER`, or no type at all), with what Graph answered the other calls of the login, if one of them
    /// failed. The API answers 422 `unsupported_token_type`.
    case notAUserToken(type: String?, graph: GraphErrorDetail?)
    /// Graph did not say which user the token belongs to, or `/me` named another user.
    case userMismatch
}

extension SessionService {
    /// Logs a Facebook account in for an owner: checks the token with `debug_token`, exchanges it for a
    /// long-lived one, reads the profile and permissions (all four calls at once), then stores everything in one
    /// transaction. Nothing is stored unless every check passed.
    ///
    /// `debug_token`'s verdict decides whether the token is refused, whichever call finished first: a failed
    /// `debug_token` call is its error (503 when transient); then the token must be valid, issued for this app
    /// and a `USER` token, in that order. Only a token that passed all three can fail on the other calls' errors.
    /// A token of a system user, a Page or an app (or one whose `type` Graph left out) is refused before anything
    /// is stored. The session keeps `debug_token`'s `granular_scopes` (the assets a Login for Business granted).
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
        guard info.isUserToken else {
            let failed = [profileResult.failure, permissionsResult.failure, exchangeResult.failure]
                .lazy.compactMap { ($0 as? GraphError)?.detail }.first
            throw LoginError.notAUserToken(type: info.type, graph: failed)
        }
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
        let needed = Self.actionNeeded(permissions: permissions, required: app.requiredPermissions)
        let record = LoginRecord(
            appID: app.id, owner: owner, requestedSlot: slot, activate: activate, maxSlots: policy.maxSlots,
            facebookUserID: userID, token: token, tokenExpiresAt: expiresAt,
            dataAccessExpiresAt: info.dataAccessExpiresAt, permissions: permissions, profile: Profile(profile),
            action: needed?.action, granularScopes: info.granularScopes, actionReason: needed?.reason)
        var stored = try await store.storeLogin(record)
        stored.session = present(stored.session, now: Date())
        return stored
    }

    /// Logs one session out (idempotent). With `revoke`, also de-authorizes the app at Facebook and says how that
    /// went (``Revocation``): `done` only when Facebook confirmed it, now or at an earlier logout of the session;
    /// `pending` when Graph cannot take it now (the session closes anyway and the background sweep retries);
    /// `unavailable` when the token is gone (erased before, or refused by Facebook now).
    ///
    /// A Limited Login session is revoked at the uninstall endpoint instead (``uninstall(token:app:)``), with the
    /// same answers: `done` when Facebook took it, `pending` when it could not be asked, `unavailable` when the
    /// token expired (an hour after login) or Facebook refused it.
    /// - Returns: nil when unknown to this app; the revocation is nil without `revoke`.
    ///
    /// A logout with `revoke` that closes the session writes `session.revoked` to the audit log in the closing
    /// transaction, stamped with `stamp` (the key and the request).
    public func logout(_ id: String, app: App, revoke: Bool, stamp: AuditStamp? = nil) async throws -> (Session, Revocation?)? {
        var token: String?
        var kind = LoginKind.standard
        if revoke {
            do {
                if let found = try await store.sessionWithToken(id: id, appID: app.id) {
                    token = found.token
                    kind = found.session.loginKind
                }
            } catch is SessionError {
                token = nil  // Unknown or closed before (its token is erased): `close` and the revocation read below answer.
            } catch ServiceError.undecryptable {
                token = nil  // A token that no key opens cannot be revoked; the session still closes.
            }
            // Any other failure (the database) is thrown: the logout then changed nothing and the caller retries,
            // instead of closing the session as if it had no token to revoke.
        }
        guard let (session, closedNow) = try await store.close(
            id: id, appID: app.id, reason: .loggedOut, keepRevocation: revoke && token != nil,
            revokedBy: revoke ? stamp : nil)
        else { return nil }
        guard revoke else { return (session, nil) }
        guard closedNow, let token else {
            return (session, try await store.revocation(sessionID: id, appID: app.id))
        }
        if kind == .limited {
            switch await uninstall(token: token, app: app) {
            case .done:
                try await store.completeRevocation(sessionID: id, appID: app.id, confirmed: true)
                return (session, .done)
            case .unavailable:
                try await store.completeRevocation(sessionID: id, appID: app.id, confirmed: false)
                return (session, .unavailable)
            case .pending:
                return (session, .pending)
            }
        }
        do {
            let credentials = try await self.credentials.credentials(for: app)
            try await graph.revokePermissions(accessToken: token, credentials: credentials)
            try await store.completeRevocation(sessionID: id, appID: app.id, confirmed: true)
            return (session, .done)
        } catch let error as GraphError where error.closedReason != nil {
            // Facebook refused the token: the grant is gone already (458, 466), or the token is dead for another
            // reason and can revoke nothing. Either way nothing is left to retry with.
            let confirmed = error.confirmsRevocation
            try await store.completeRevocation(sessionID: id, appID: app.id, confirmed: confirmed)
            return (session, confirmed ? .done : .unavailable)
        } catch {
            return (session, .pending)
        }
    }

    /// Logs every session of an owner out.
    public func logoutAll(owner: String, app: App) async throws -> [Session] {
        try await store.closeAll(owner: owner, appID: app.id, reason: .loggedOut)
    }

    /// The owner's live sessions by slot, each shown in its state now, and the active one.
    public func sessions(owner: String, app: App) async throws -> OwnerList {
        shown(try await store.sessions(owner: owner, appID: app.id))
    }

    /// The stored list with each session's state now: the one presentation rule for every list answer.
    public func shown(_ stored: [Session]) -> OwnerList {
        let now = Date()
        return OwnerList(stored: stored, states: stored.map { shownState(of: $0, now: now) })
    }

    /// Makes a session the owner's active one.
    public func activate(_ id: String, owner: String, app: App) async throws -> Session {
        present(try await store.activate(sessionID: id, owner: owner, appID: app.id), now: Date())
    }

    /// The decrypted token with its `appsecret_proof`, for backends that call Graph themselves.
    ///
    /// The read writes `token.read` to the audit log, stamped with `stamp` (the key and the request), in the same
    /// statement that reads the sealed token (no round trip of its own), when the session is live and standard.
    /// - Throws: ``SessionError/closed`` for a closed session; ``SessionError/noGraphToken`` for a Limited Login
    ///   session, whose token Graph does not accept.
    public func token(_ id: String, app: App, stamp: AuditStamp? = nil) async throws
        -> (session: Session, token: String, proof: String)?
    {
        let audited = policy.auditsTokenReads ? stamp : nil
        guard let (session, token) = try await store.sessionWithToken(id: id, appID: app.id, readBy: audited) else {
            return nil
        }
        guard session.loginKind == .standard else { throw SessionError.noGraphToken }
        let credentials = try await self.credentials.credentials(for: app)
        return (present(session, now: Date()), token, credentials.appSecretProof(for: token))
    }
}

/// An owner's list as stored, and the state each session shows now.
///
/// The sessions are kept as stored, not copied (``sessions`` makes the copies it shows), so two lists read from
/// the same stored array compare equal by the array's storage identity and their few states: a caller that keeps
/// what it rendered from one checks it in constant time.
public struct OwnerList: Sendable, Equatable {
    /// The sessions as stored, in slot order.
    public let stored: [Session]
    /// The state each of ``stored`` shows now (``SessionService``'s presentation rule).
    public let states: [SessionState]

    /// The sessions as shown: each stored one with its state now.
    public var sessions: [Session] {
        zip(stored, states).map { session, state in
            var shown = session
            shown.state = state
            return shown
        }
    }

    /// The owner's active session.
    public var activeID: String? { stored.first(where: \.active)?.id }
}
