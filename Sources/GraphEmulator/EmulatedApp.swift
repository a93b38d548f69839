/// A Facebook app registered with the emulator.
public struct EmulatedApp: Sendable, Equatable {
    /// The app id, a string of digits.
    public var id: String
    /// The app secret.
    public var secret: String
    /// The app's name, shown by `debug_token` as `application`.
    public var name: String
    /// Whether every user-token call must carry `appsecret_proof` (App Dashboard › Advanced › Require App Secret).
    public var requiresProof: Bool
    /// The client token, usable as `APP_ID|CLIENT_TOKEN` (pictures only).
    public var clientToken: String
    /// The valid OAuth redirect URIs: the dialog refuses any other (Facebook's strict mode, which every app has
    /// had since 2018), so an app without any refuses every redirect; the code exchange then requires the very URI
    /// of the dialog.
    public var redirectURIs: [String]
    /// Users with a developer role: their user tokens may call `debug_token` instead of an app token.
    public var developerIDs: [String]

    /// Creates an app description.
    /// - Parameters:
    ///   - id: the app id (digits).
    ///   - secret: the app secret.
    ///   - name: the display name.
    ///   - requiresProof: whether `appsecret_proof` is mandatory.
    ///   - clientToken: the client token.
    ///   - redirectURIs: the valid OAuth redirect URIs (exact match; none registered refuses every redirect).
    ///   - developerIDs: user ids with a developer role.
    public init(
        id: String, secret: String, name: String = "Emulated App", requiresProof: Bool = false,
        clientToken: String, redirectURIs: [String] = [], developerIDs: [String] = []
    ) {
        self.id = id
        self.secret = secret
        self.name = name
        self.requiresProof = requiresProof
        self.clientToken = clientToken
        self.redirectURIs = redirectURIs
        self.developerIDs = developerIDs
    }

    /// The app access token `APP_ID|APP_SECRET`.
    public var appAccessToken: String { id + "|" + secret }
}
