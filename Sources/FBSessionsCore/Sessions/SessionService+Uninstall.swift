import Foundation

extension SessionService {
    /// What became of a Limited Login revocation.
    enum UninstallOutcome: Sendable, Equatable {
        /// Facebook confirmed the uninstall.
        case done
        /// It can never happen: the token expired (an hour after login) or Facebook refused it, or no uninstall
        /// endpoint is configured.
        case unavailable
        /// Facebook could not be asked; a later attempt may work.
        case pending
    }

    /// Uninstalls a Limited Login session's person from the app at Facebook (`FBS_LIMITED_UNINSTALL_URL`, with
    /// `id_token` and `app_id`). A token past its `exp` is not sent at all: Facebook would refuse it, so the answer
    /// is `unavailable` at once, never a `pending` that can never succeed.
    /// - Parameters:
    ///   - token: the session's stored `AuthenticationToken`.
    ///   - app: its app.
    func uninstall(token: String, app: App) async -> UninstallOutcome {
        guard let limitedLogin else { return .unavailable }
        if let expiresAt = Self.expiry(ofStoredToken: token), expiresAt <= Date() { return .unavailable }
        do {
            try await limitedLogin.uninstall(authenticationToken: token, facebookAppID: app.facebookAppID)
            return .done
        } catch LimitedUninstallError.refused {
            return .unavailable
        } catch {
            return .pending
        }
    }

    /// The `exp` of a token this service verified and stored (its payload is read without checking the signature
    /// again); nil when it cannot be read.
    static func expiry(ofStoredToken token: String) -> Date? {
        guard let jws = try? CompactJWS(parsing: token), let claims = try? AuthenticationTokenClaims(verifiedPayload: jws.payload)
        else { return nil }
        return claims.expiresAt
    }
}
