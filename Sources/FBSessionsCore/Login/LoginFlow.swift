import Crypto
import Foundation

/// Facebook Login from any button (the SDK's `LoginManager`, server side): login URLs for the dialog with an auth
/// type, and the OAuth code flow that turns the dialog's `code` into a session.
///
/// A state is 256 random bits in base64url, single use, bound to app, owner, redirect URI and slot, and expires
/// after ``Configuration/stateLifetime`` seconds. Only its SHA-256 is stored.
public struct LoginFlow: Sendable {
    /// Where the dialog lives and how long states last.
    public struct Configuration: Sendable {
        /// The dialog's base URL (`FBS_DIALOG_URL`), e.g. `https://www.facebook.com`.
        public var dialogURL: String
        /// The Graph version in the dialog path for apps without one of their own (`FBS_GRAPH_VERSION`), e.g. `v25.0`.
        public var graphVersion: String
        /// Seconds a state stays usable. Default 600 (10 minutes, the contract's value).
        public var stateLifetime: Double

        /// Creates a configuration.
        public init(dialogURL: String, graphVersion: String, stateLifetime: Double = 600) {
            self.dialogURL = dialogURL
            self.graphVersion = graphVersion
            self.stateLifetime = stateLifetime
        }
    }

    /// What `POST /v1/login-urls` asks for, already checked for shape.
    public struct URLRequest: Sendable {
        /// The owner the login is for.
        public var owner: String
        /// Must be exactly one of the app's registered redirect URIs.
        public var redirectURI: String
        /// Permissions to ask for, without duplicates. Empty with ``configID``.
        public var scopes: [String]
        /// A Facebook Login for Business configuration id (digits): the configuration fixes the permissions, the
        /// assets and the token type, so the dialog gets `config_id` instead of `scope`.
        public var configID: String?
        /// The dialog's auth type.
        public var authType: AuthType?
        /// The slot the login should take.
        public var slot: Int?

        /// Creates a request.
        public init(
            owner: String, redirectURI: String, scopes: [String], configID: String? = nil, authType: AuthType?,
            slot: Int?
        ) {
            self.owner = owner
            self.redirectURI = redirectURI
            self.scopes = scopes
            self.configID = configID
            self.authType = authType
            self.slot = slot
        }
    }

    /// A made login URL.
    public struct LoginURL: Sendable {
        /// The login dialog URL to send the browser to.
        public var url: String
        /// The state (single use; it comes back with the code).
        public var state: String
        /// When the state expires.
        public var expiresAt: Date
        /// The asked permissions beyond `public_profile` and `email`, which need Facebook's Login Review; empty for
        /// a Login for Business configuration (its permissions are the configuration's, reviewed with the app).
        public var reviewRequired: [String]
    }

    /// Whether `text` can be a Login for Business configuration id: 1 to 32 ASCII digits (Facebook's object ids
    /// are decimal numbers, today 15 to 17 digits long).
    public static func isWellFormedConfigID(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { (48...57).contains($0) }
    }

    /// Permissions every app may ask for without Login Review (docs/facebook-graph.md §10).
    public static let permissionsWithoutReview: Set<String> = ["public_profile", "email"]

    let sessions: SessionService
    let states: any LoginStateStore
    let configuration: Configuration

    /// Creates the flow over the session service (its Graph port, credentials and store) and a state store.
    public init(sessions: SessionService, states: any LoginStateStore, configuration: Configuration) {
        self.sessions = sessions
        self.states = states
        self.configuration = configuration
    }

    /// Makes a login URL and stores its state.
    /// - Throws: ``LoginFlowError/redirectURINotAllowed`` unless the redirect URI equals a registered one byte
    ///   for byte (case and every character count; Unicode equivalence does not).
    public func makeLoginURL(app: App, _ request: URLRequest) async throws -> LoginURL {
        let wanted = Array(request.redirectURI.utf8)
        guard app.redirectURIs.contains(where: { Array($0.utf8) == wanted }) else {
            throw LoginFlowError.redirectURINotAllowed
        }
        let state = SecureRandom.token(byteCount: 32)
        let nonce = request.authType == .reauthenticate ? Hex.encode(SecureRandom.bytes(16)) : nil
        precondition(
            request.configID.map { Self.isWellFormedConfigID($0) && request.scopes.isEmpty } ?? true,
            "the API checks config_id and refuses it together with scopes")
        let draft = LoginStateDraft(
            appID: app.id, owner: request.owner, redirectURI: request.redirectURI, slot: request.slot,
            scopes: request.scopes, authType: request.authType, authNonce: nonce, configID: request.configID)
        let stored = try await states.saveState(
            hash: Self.hash(state), draft: draft, lifetime: configuration.stateLifetime)
        return LoginURL(
            url: dialogURL(app: app, state: state, draft: draft), state: state,
            expiresAt: stored.expiresAt,
            reviewRequired: request.configID != nil
                ? [] : request.scopes.filter { !Self.permissionsWithoutReview.contains($0) })
    }

    /// `{dialog}/{version}/dialog/oauth?client_id&redirect_uri&state&response_type=code&scope&auth_type&auth_nonce`
    /// (docs/facebook-graph.md §4.1), every value percent-encoded outside RFC 3986's unreserved characters. With a
    /// Login for Business configuration, `config_id` and `override_default_response_type=true` take the place of
    /// `scope` (§4.6b; docs/login-flow.md, "Facebook Login for Business"). The version is
    /// the app's own, else the configuration's.
    func dialogURL(app: App, state: String, draft: LoginStateDraft) -> String {
        var pairs = [
            ("client_id", app.facebookAppID), ("redirect_uri", draft.redirectURI), ("state", state),
            ("response_type", "code"),
        ]
        if let configID = draft.configID {
            pairs += [("config_id", configID), ("override_default_response_type", "true")]
        } else if !draft.scopes.isEmpty {
            pairs.append(("scope", draft.scopes.joined(separator: ",")))
        }
        if let authType = draft.authType { pairs.append(("auth_type", authType.rawValue)) }
        if let nonce = draft.authNonce { pairs.append(("auth_nonce", nonce)) }
        var base = configuration.dialogURL
        while base.hasSuffix("/") { base.removeLast() }
        let query = pairs.map { Self.percentEncode($0.0) + "=" + Self.percentEncode($0.1) }.joined(separator: "&")
        return "\(base)/\(app.graphVersion ?? configuration.graphVersion)/dialog/oauth?\(query)"
    }

    /// Whether `text` is shaped like a state this flow issues (43 base64url characters), before any lookup.
    public static func isWellFormedState(_ text: String) -> Bool {
        text.utf8.count == 43 && Base64URL.decode(text)?.count == 32
    }

    static func hash(_ state: String) -> [UInt8] {
        SHA256.hash(state)
    }

    /// Percent-encodes every byte outside `A-Z a-z 0-9 - . _ ~`.
    static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
