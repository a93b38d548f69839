import Crypto

/// What a Graph call needs to know about the app it is made for: the Facebook app id, the app secret and,
/// optionally, the Graph API version the app pins. Passed to every `GraphAPI` call; never stored globally.
///
/// `description`, `debugDescription` and reflection (`dump`) show the app id and version only, never the secret.
public struct GraphCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The Facebook app id (digits).
    public var appID: String
    /// The Facebook app secret.
    public var appSecret: String
    /// The Graph API version for this app's calls, for example `v21.0`; `nil` uses the client's default.
    public var version: String?

    /// Creates credentials.
    /// - Parameters:
    ///   - appID: the Facebook app id.
    ///   - appSecret: the app secret.
    ///   - version: a `vMAJOR.MINOR` Graph version, or `nil` for the client's default.
    public init(appID: String, appSecret: String, version: String? = nil) {
        self.appID = appID
        self.appSecret = appSecret
        self.version = version
    }

    /// The app access token, `APP_ID|APP_SECRET` (docs/facebook-graph.md §4.6). It is a secret: never log it.
    public var appAccessToken: String {
        "\(appID)|\(appSecret)"
    }

    /// The `appsecret_proof` for a user access token: lowercase hex HMAC-SHA256 with the app secret as the key and
    /// the token as the message (docs/facebook-graph.md §8.1). It is derived from secrets: never log it.
    /// - Parameter accessToken: the user access token the call carries.
    /// - Returns: 64 lowercase hex digits.
    public func appSecretProof(for accessToken: String) -> String {
        Hex.encode(HMACSHA256.authenticationCode(for: accessToken, key: Array(appSecret.utf8)))
    }

    /// The app id and version; the secret is left out.
    public var description: String {
        "GraphCredentials(appID: \(appID), version: \(version ?? "default"), appSecret: <redacted>)"
    }

    /// Same as `description`.
    public var debugDescription: String {
        description
    }

    /// Reflection without the secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["appID": appID, "version": version as Any, "appSecret": "<redacted>"])
    }
}

/// How a generic Graph call authenticates.
///
/// `description`, `debugDescription` and reflection name the kind only, never the token.
public enum GraphAuthentication: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// With a user access token, plus its `appsecret_proof`.
    case user(accessToken: String)
    /// With the app access token `APP_ID|APP_SECRET`.
    case app
    /// Without a token (for example a picture by app-scoped id).
    case none

    /// The kind only; never the token.
    public var description: String {
        switch self {
        case .user: "user"
        case .app: "app"
        case .none: "none"
        }
    }

    /// Same as `description`.
    public var debugDescription: String {
        description
    }

    /// Reflection without the token.
    public var customMirror: Mirror {
        Mirror(self, children: ["kind": description])
    }
}
