import Crypto
import Foundation

/// Facebook's own callbacks for a live app: deauthorize (the person removed the app) and data deletion (the person
/// asked for their data to be deleted). Both carry a `signed_request`
/// (https://developers.facebook.com/docs/development/create-an-app/app-dashboard/data-deletion-callback).
///
/// The app is the one the route names (`/v1/facebook/{facebook_app_id}/...`), or, on the app-less paths, the one
/// whose secret signed the request (each registered app's secret is tried, each with a constant-time compare).
/// The payload is parsed only once the signature checked. Anything wrong throws ``SignedRequestError`` before
/// anything changes.
public struct FacebookCallbacks: Sendable {
    let apps: any AppStore
    let users: any FacebookUserStore
    let credentials: CredentialCache
    let publicURL: String

    /// Creates the callbacks.
    /// - Parameters:
    ///   - apps: the registered apps and their secrets.
    ///   - users: where the user's sessions are closed or erased.
    ///   - publicURL: the service's public base URL (`FBS_PUBLIC_URL`), for deletion status links.
    public init(apps: any AppStore, users: any FacebookUserStore, publicURL: String) {
        self.apps = apps
        self.users = users
        self.credentials = CredentialCache(apps: apps, version: nil)
        var base = publicURL
        while base.hasSuffix("/") { base.removeLast() }
        self.publicURL = base
    }

    /// Deauthorize: closes every live session of the user in the app with `app_removed`.
    /// - Returns: the sessions closed now (none when they were closed already: Facebook may call again).
    public func deauthorize(signedRequest: String, facebookAppID: String?) async throws -> [Session] {
        let (app, request) = try await verify(signedRequest, facebookAppID: facebookAppID)
        return try await users.closeSessions(ofFacebookUser: request.userID, appID: app.id, reason: .appRemoved)
    }

    /// Data deletion: erases the user's sessions and pictures and records the request.
    /// - Returns: the recorded deletion and its status URL.
    public func requestDeletion(signedRequest: String, facebookAppID: String?) async throws
        -> (deletion: DataDeletion, statusURL: String)
    {
        let (app, request) = try await verify(signedRequest, facebookAppID: facebookAppID)
        let code = Hex.encode(SecureRandom.bytes(16))
        let deletion = try await users.eraseFacebookUser(request.userID, appID: app.id, confirmationCode: code)
        return (deletion, statusURL(confirmationCode: code))
    }

    /// The status of a deletion, or nil for an unknown (or malformed) code.
    public func deletion(confirmationCode: String) async throws -> DataDeletion? {
        guard DataDeletion.isWellFormedCode(confirmationCode) else { return nil }
        return try await users.dataDeletion(confirmationCode: confirmationCode)
    }

    /// `{FBS_PUBLIC_URL}/v1/facebook/data-deletion/{code}`.
    public func statusURL(confirmationCode: String) -> String {
        "\(publicURL)/v1/facebook/data-deletion/\(confirmationCode)"
    }

    /// Finds the app whose secret signed the request, then parses the payload.
    func verify(_ text: String, facebookAppID: String?) async throws -> (App, SignedRequest) {
        let envelope = try SignedRequest.Envelope(parsing: text)
        var candidates = try await apps.apps()
        if let facebookAppID {
            candidates = candidates.filter { $0.facebookAppID == facebookAppID }
            guard !candidates.isEmpty else { throw SignedRequestError.unknownApp }
        }
        for app in candidates {
            let secret: String
            do {
                secret = try await credentials.credentials(for: app).appSecret
            } catch ServiceError.undecryptable {
                continue  // an app whose secret cannot be opened cannot have signed anything we can check
            }
            if envelope.isSigned(withSecret: secret) {
                return (app, try envelope.contents())
            }
        }
        throw SignedRequestError.badSignature
    }
}
