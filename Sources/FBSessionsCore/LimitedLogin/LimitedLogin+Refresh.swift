import Foundation

/// Limited Login refresh (iOS SDK 18.1): the SDK refreshes its `AuthenticationToken` by itself, with a nonce of its
/// own, and the backend hands the new token to `PUT /v1/sessions/{id}/authentication-token` (docs/limited-login.md,
/// "Refresh").
extension LimitedLogin {
    /// The session a refresh names: this app's. The route asks this before it reads the body, so that another
    /// app's key gets 404 whatever it sends.
    /// - Throws: ``SessionError/notFound`` (unknown or another app's).
    public func sessionToRefresh(_ sessionID: String, app: App) async throws -> Session {
        guard let session = try await sessions.store.session(id: sessionID, appID: app.id) else {
            throw SessionError.notFound
        }
        return session
    }

    /// Whether `session` can take a refreshed token: open and limited. The route asks this once the body is read,
    /// so that a malformed body is always 400. It decides nothing for the write:
    /// ``refresh(sessionID:app:authenticationToken:)`` checks all of it again in its one conditional write (the
    /// session may close meanwhile).
    /// - Throws: ``SessionError/closed``, ``SessionError/notLimited``.
    public static func checkRefreshable(_ session: Session) throws {
        guard session.state != .closed else { throw SessionError.closed }
        guard session.loginKind == .limited else { throw SessionError.notLimited }
    }

    /// Replaces a limited session's token with a refreshed one.
    ///
    /// The token is verified as at login (size, compact JWS, `alg`, `kid`, signature, claims, `iss`, `aud`, `exp`,
    /// `iat`) except its nonce, which the SDK made. Then one conditional write in the store takes it only if the
    /// session is open, limited, of the token's `sub`, and holds a token issued earlier than this one: of refreshes
    /// racing with one token, on any number of instances, exactly one wins. A refusal changes nothing.
    /// - Parameters:
    ///   - sessionID: the session.
    ///   - app: the caller's app.
    ///   - authenticationToken: the refreshed token.
    /// - Returns: the session as stored now, presented as status shows it.
    /// - Throws: ``AuthenticationTokenError`` (a check of the token, or `wrong_subject`, `not_newer`),
    ///   ``SigningKeyError``, ``SessionError/notFound``, ``SessionError/closed``, ``SessionError/notLimited``.
    public func refresh(sessionID: String, app: App, authenticationToken: String) async throws -> Session {
        let claims = try await verify(authenticationToken, app: app, nonceRule: .notChecked)
        let record = RefreshRecord(claims: claims, token: authenticationToken, sessionID: sessionID, appID: app.id)
        let stored = try await sessions.store.storeRefresh(record)
        return sessions.present(stored, now: Date())
    }
}
