// GraphEmulator: a faithful, scriptable stand-in for Facebook's Graph API, the login dialog and the picture CDN,
// served by the project's own HTTP server. Tests and `fbsessiond run` use it; nothing in the product depends on it.
//
// Graph surface (graph.facebook.com style, `/vNN.N/...` or unversioned):
//   GET  /me, /{user-id}                      fields selection, picture modifiers, email/link permission rules
//   GET  /debug_token                         USER, SYSTEM_USER, APP and PAGE shapes, granular_scopes with
//                                             target_ids; bad input tokens at HTTP 200
//   GET|POST /oauth/access_token              code exchange, fb_exchange_token, client_credentials,
//                                             fb_extend_sso_token
//   GET|POST /vNN.N/dialog/oauth              the login dialog (an HTML page with plain forms); config_id for
//                                             Facebook Login for Business
//   GET|DELETE /{id}/permissions[/{perm}]     with `permission` and `status` filters
//   GET  /{id}/picture                        302 to /__cdn/... or JSON with redirect=false
//   GET  /__cdn/platform/profilepic/?...      deterministic PNG bytes until `ext`, then 403
//
// Limited Login (limited.facebook.com style):
//   GET  /.well-known/openid-configuration/   the discovery document
//   GET  /.well-known/oauth/openid/jwks/      the RS256 key set, with Cache-Control
//   POST /platform/uninstall/                 id_token + app_id → {"success":true}
//
// Control API (JSON, under /__emulator/, which no Graph path can collide with):
//   GET    /__emulator/                       index of the control endpoints
//   POST   /__emulator/reset                  forget everything
//   POST   /__emulator/apps                   {id?, secret?, name?, require_proof?, client_token?,
//                                             redirect_uris?, developer_ids?} → the app
//   GET    /__emulator/apps
//   POST   /__emulator/users                  {id?, first_name?, middle_name?, last_name?, name?, email?, link?,
//                                             has_picture?} → the user
//   GET    /__emulator/users
//   PATCH  /__emulator/users/{id}             the same fields; null removes one
//   POST   /__emulator/tokens                 {app_id, user_id?, type?: user|system_user|app|page, long_lived?,
//                                             expires_in?, data_access_expires_in?, granted?, declined?, expired?,
//                                             page_id?, page_name?, auth_type?, auth_nonce?, sso?, assets?}
//                                             → the token
//   POST|GET /__emulator/business-configs     {app_id, id?, permissions, assets?, token_type?: user|system_user}
//   POST   /__emulator/tokens/inspect         {access_token} → the token's state
//   POST   /__emulator/tokens/invalidate      {access_token | user_id [+ app_id], subcode}
//   POST   /__emulator/codes                  {app_id, user_id, redirect_uri, granted?, declined?} → {code}
//   PUT    /__emulator/latency                {endpoint?: name or "*", ms}
//   GET    /__emulator/latency
//   POST   /__emulator/faults                 {endpoint, count?, kind, code?, subcode?, type?, message?,
//                                             status?, is_transient?}
//   GET    /__emulator/faults;  DELETE /__emulator/faults
//   PUT    /__emulator/app-usage              {app_id?, call_count, total_cputime, total_time}
//   GET    /__emulator/clock;   POST /__emulator/clock {advance: seconds} or {now: unix seconds}
//   GET    /__emulator/counters; DELETE /__emulator/counters
//   PUT    /__emulator/options                {omit_error_subcode?, bare_true_on_delete?}
//   POST   /__emulator/demo                   seed the demo app and users
//   POST   /__emulator/demo-token?user=alice  a long-lived demo token for a demo user (name or id)
//   POST   /__emulator/limited/tokens         {app_id, user_id, nonce, ...knobs} → a signed AuthenticationToken
//   POST   /__emulator/limited/demo-token?user=bob&nonce=N
//   GET|PUT /__emulator/limited/keys          the kids in the key set; {max_age}
//   POST   /__emulator/limited/keys/rotate    {keep_previous?}
//   GET    /__emulator/limited/uninstalls
//
// Endpoint names for latency, faults and counters: me, user, debug_token, oauth_access_token, permissions,
// picture, cdn, dialog, openid_configuration, jwks, uninstall, other. Sources/GraphEmulator/README.md has the details and every error message.

import HTTPServer

/// A Graph API emulator: holds apps, users, tokens and codes, answers Graph requests like graph.facebook.com,
/// and can be scripted from Swift (the methods below) or over HTTP (the control API under `/__emulator/`).
///
/// ```swift
/// let emulator = Emulator()
/// let server = try emulator.start()
/// let app = try emulator.registerApp()
/// let user = try emulator.createUser(firstName: "Jane", lastName: "Doe", email: "jane@example.com")
/// let token = try emulator.issueToken(appID: app.id, userID: user.id, granted: ["public_profile", "email"])
/// // GET \(emulator.baseURL)/v25.0/me?access_token=\(token.accessToken)
/// ```
///
/// Thread safety: every method may be called from any thread; state sits behind one lock, and requests never
/// hold a server thread while injected latency elapses.
public final class Emulator: Sendable {
    /// The configuration the emulator was created with.
    public let configuration: Configuration
    let state: EmulatorState

    /// Creates an emulator with no apps, users or tokens.
    /// - Parameter configuration: versions, base URL and lifetimes.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.state = EmulatorState(configuration: configuration)
    }

    /// Another handle on existing state (the control routes use the public API through it).
    init(sharing state: EmulatorState) {
        self.configuration = state.configuration
        self.state = state
    }

    /// The request handler, to serve the emulator from a server of one's own (then set
    /// ``Configuration/publicBaseURL`` or let generated URLs follow each request's `Host` header).
    public var handler: some RequestHandler {
        EmulatorHandler(state: state)
    }

    /// Starts a server for the emulator.
    /// - Parameters:
    ///   - host: the address to listen on.
    ///   - port: the port; 0 picks a free one (read it from the returned server's `port`).
    /// - Returns: the running server; call `shutdown()` on it when done.
    /// - Throws: `ServerError` when the server cannot start.
    public func start(host: String = "127.0.0.1", port: Int = 0) throws -> Server {
        var serverConfiguration = ServerConfiguration()
        serverConfiguration.host = host
        serverConfiguration.port = port
        serverConfiguration.connectionTimeout = 30
        let server = try Server(configuration: serverConfiguration, handler: handler)
        let shownHost = host == "0.0.0.0" ? "127.0.0.1" : host
        state.withStore { $0.startedBaseURL = "http://\(shownHost):\(server.port)" }
        return server
    }

    /// The Graph base URL without a version, e.g. `http://127.0.0.1:41234`: the configured
    /// ``Configuration/publicBaseURL``, else the started server's address, else `http://localhost`.
    public var baseURL: String {
        configuration.publicBaseURL ?? state.withStore { $0.startedBaseURL } ?? "http://localhost"
    }

    /// The login dialog base URL (the same server; Facebook's is `https://www.facebook.com`).
    public var dialogBaseURL: String { baseURL }

    /// The Graph URL of `path` at the default version, e.g. `graphURL("me")`.
    public func graphURL(_ path: String) -> String {
        baseURL + "/" + configuration.defaultVersion + "/" + path
    }

    /// Forgets every app, user, token, code, fault, latency, counter, usage level and option, and resets the
    /// clock to the host's.
    public func reset() {
        state.withStore { store in
            let started = store.startedBaseURL
            store = EmulatorStore(configuration: configuration)
            store.startedBaseURL = started
        }
    }

    // MARK: Clock

    /// The emulator's clock in Unix seconds (the host clock plus any advance).
    public var now: Int64 {
        state.withStore { $0.now }
    }

    /// Moves the emulator's clock forward (or back, with a negative value).
    /// - Parameter seconds: how far.
    public func advanceClock(by seconds: Int64) {
        state.withStore { $0.clockOffset += seconds }
    }

    /// Sets the emulator's clock to `unixSeconds`.
    public func setClock(to unixSeconds: Int64) {
        state.withStore { $0.clockOffset = unixSeconds - ($0.now - $0.clockOffset) }
    }
}
