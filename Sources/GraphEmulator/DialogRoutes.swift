import HTTPServer

/// The login dialog, `/vNN.N/dialog/oauth` (docs/facebook-graph.md §4.1, §12.7): `GET` shows a page to pick a user and
/// the permissions to grant; its form `POST`s back here and redirects to `redirect_uri` with a code (or a token), or
/// with the cancel error.
///
/// Posting the form directly works too: without `grants_shown`, every asked permission counts as granted.
enum DialogRoutes {
    static func answer(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        guard request.method == "GET" || request.method == "POST" else {
            return GraphAnswer(.raw(DialogPage.error(status: 405, title: "Error", message: "Unsupported method.")))
        }
        let login: DialogLogin
        switch DialogLogin.validate(request, store: store) {
        case .failure(let failure): return GraphAnswer(.raw(failure.page))
        case .success(let valid): login = valid
        }
        if request.method == "GET" || request.parameter("action") == nil {
            let users = store.userOrder.compactMap { store.users[$0] }
            return GraphAnswer(.raw(DialogPage.login(login, users: users, version: request.version)))
        }
        if request.parameter("action") == "cancel" {
            var pairs = [
                ("error", "access_denied"), ("error_code", "200"), ("error_description", "Permissions error"),
                ("error_reason", "user_denied"),
            ]
            if let state = login.state { pairs.append(("state", state)) }
            return GraphAnswer(.redirect(login.redirect(query: pairs, fragment: nil)))
        }
        guard let userID = request.parameter("user_id"), store.users[userID] != nil else {
            return GraphAnswer(
                .raw(DialogPage.error(status: 400, title: "Error", message: "Choose a person to log in as.")))
        }
        if request.parameter("tracking") == "limited" {
            return limitedApprove(login, userID: userID, request: request, store: &store)
        }
        return GraphAnswer(.redirect(approve(login, userID: userID, request: request, store: &store)))
    }

    /// Limited Login (the person declined tracking): no code and no access token, but an `AuthenticationToken`
    /// carrying the dialog's `nonce`, in the redirect's fragment as `id_token` (the OIDC implicit flow's answer),
    /// with `state`. The grant is recorded as for any login.
    static func limitedApprove(
        _ login: DialogLogin, userID: String, request: GraphRequest, store: inout EmulatorStore
    ) -> GraphAnswer {
        let key = GrantKey(appID: login.app.id, userID: userID)
        let previous = store.grants[key] ?? Grant(granted: [], declined: [], expired: [])
        let asked = login.asked(given: previous)
        let checked = request.parameter("grants_shown") == nil ? Set(asked) : Set(request.parameters(named: "grant"))
        let grant = EmulatorStore.normalized(
            granted: previous.granted + asked.filter { checked.contains($0) },
            declined: previous.declined + asked.filter { !checked.contains($0) }, expired: previous.expired)
        store.grants[key] = grant
        var token = AuthenticationTokenRequest(
            appID: login.app.id, userID: userID, nonce: login.nonce ?? RandomText.alphanumeric(32))
        token.granted = grant.granted
        guard let minted = try? store.mintAuthenticationToken(token, baseURL: request.baseURL) else {
            return GraphAnswer(.raw(DialogPage.error(status: 500, title: "Error", message: "Could not sign the token.")))
        }
        var pairs = [("id_token", minted.token)]
        if let state = login.state { pairs.append(("state", state)) }
        return GraphAnswer(.redirect(login.redirect(query: [], fragment: FormCoding.query(pairs))))
    }

    /// Records the user's choices and builds the success redirect.
    static func approve(
        _ login: DialogLogin, userID: String, request: GraphRequest, store: inout EmulatorStore
    ) -> String {
        let key = GrantKey(appID: login.app.id, userID: userID)
        let previous = store.grants[key] ?? Grant(granted: [], declined: [], expired: [])
        let asked = login.asked(given: previous)
        // A Login for Business configuration is granted whole: the person grants all of it or cancels.
        let checked =
            request.parameter("grants_shown") == nil || login.configuration != nil
            ? Set(asked) : Set(request.parameters(named: "grant"))
        var granted = previous.granted + asked.filter { checked.contains($0) }
        var declined = previous.declined.filter { !granted.contains($0) } + asked.filter { !checked.contains($0) }
        var expired = previous.expired
        if login.authType == "reauthorize" {
            granted += expired
            expired = []
            store.renewDataAccess(appID: login.app.id, userID: userID)
        }
        declined = declined.filter { !granted.contains($0) }
        let grant = EmulatorStore.normalized(granted: granted, declined: declined, expired: expired)
        granted = grant.granted
        store.grants[key] = grant
        var metadata: [(String, String)] = []
        if let authType = login.authType { metadata.append(("auth_type", authType)) }
        if let nonce = request.parameter("auth_nonce"), !nonce.isEmpty { metadata.append(("auth_nonce", nonce)) }

        var pairs: [(String, String)] = []
        let types = login.responseTypes
        if types.contains("code") || !types.contains("token") {
            // With a configuration, the code gives a token of its type, on its assets, with exactly its permissions
            // (and public_profile) whatever the person granted this app before.
            let codeGrant =
                login.configuration.map {
                    EmulatorStore.normalized(granted: $0.permissions, declined: [], expired: [])
                } ?? grant
            if let code = try? store.issueCode(
                appID: login.app.id, userID: userID, redirectURI: login.redirectURI, grant: codeGrant,
                metadata: metadata, kind: login.configuration?.tokenKind ?? .user,
                targets: login.configuration?.assets ?? [:])
            {
                pairs.append(("code", code))
            }
        }
        if types.contains("token"),
            let token = try? store.issueUserToken(
                appID: login.app.id, userID: userID, longLived: false, expiresIn: nil, dataAccessExpiresIn: nil,
                granted: grant.granted, declined: grant.declined, expired: grant.expired, metadata: metadata)
        {
            pairs =
                [
                    ("access_token", token.string), ("data_access_expiration_time", String(token.dataAccessExpiresAt)),
                    ("expires_in", String(token.expiresAt - store.now)),
                ] + pairs
        }
        if types.contains("granted_scopes") {
            pairs.append(("granted_scopes", grant.granted.joined(separator: ",")))
            pairs.append(("denied_scopes", grant.declined.joined(separator: ",")))
        }
        if let state = login.state { pairs.append(("state", state)) }
        if types.contains("token") { return login.redirect(query: [], fragment: FormCoding.query(pairs)) }
        return login.redirect(query: pairs, fragment: "_=_")
    }
}

/// A validated dialog request.
struct DialogLogin {
    let app: EmulatedApp
    let redirectURI: String
    let state: String?
    let scopes: [String]
    let responseTypes: Set<String>
    let authType: String?
    let authNonce: String?
    /// `tracking=limited` asks for Limited Login (the SDK's `LoginConfiguration(tracking: .limited)`).
    let limitedTracking: Bool
    /// The OIDC `nonce` a Limited Login token carries.
    let nonce: String?
    /// The Facebook Login for Business configuration named by `config_id`; its permissions replace `scope`.
    var configuration: BusinessConfiguration? = nil

    /// The permissions the dialog asks about: the requested ones not yet granted, leaving out previously declined
    /// ones unless `auth_type=rerequest`. `public_profile` is always granted and never asked.
    func asked(given previous: Grant) -> [String] {
        scopes.filter { scope in
            scope != "public_profile" && !previous.granted.contains(scope)
                && (authType == "rerequest" || !previous.declined.contains(scope))
        }
    }

    /// `redirect_uri` plus a query (appended with `?` or `&`) and a fragment.
    func redirect(query: [(String, String)], fragment: String?) -> String {
        var url = redirectURI
        if !query.isEmpty { url += (url.contains("?") ? "&" : "?") + FormCoding.query(query) }
        if let fragment { url += "#" + fragment }
        return url
    }

    /// Checks `client_id`, `redirect_uri` and `response_type`; a failure is the dialog's error page.
    static func validate(_ request: GraphRequest, store: EmulatorStore) -> Result<DialogLogin, DialogFailure> {
        guard let clientID = request.parameter("client_id"), let app = store.apps[clientID] else {
            return .failure(
                DialogFailure(
                    status: 400, title: "Invalid App ID",
                    message: "The provided app ID does not look like a valid app ID."))
        }
        let redirectURI = request.parameter("redirect_uri") ?? ""
        let lowered = redirectURI.lowercased()
        let wellFormed =
            (lowered.hasPrefix("http://") || lowered.hasPrefix("https://")) && !redirectURI.contains("#")
            && !redirectURI.contains(" ")
        // Strict mode (docs/facebook-graph.md §4.1): exactly one of the app's valid OAuth redirect URIs, or blocked.
        guard wellFormed, app.redirectURIs.contains(redirectURI) else {
            return .failure(
                DialogFailure(
                    status: 400, title: "URL Blocked",
                    message: "This redirect failed because the redirect URI is not whitelisted in the app\u{2019}s"
                        + " Client OAuth Settings. Make sure Client and Web OAuth Login are on and add all your app"
                        + " domains as Valid OAuth Redirect URIs."))
        }
        let types = Set(
            (request.parameter("response_type") ?? "code").split(whereSeparator: { $0 == "," || $0 == " " })
                .map(String.init))
        guard !types.isEmpty, types.isSubset(of: ["code", "token", "granted_scopes", "id_token"]) else {
            return .failure(
                DialogFailure(status: 400, title: "Error", message: "The response_type parameter is not supported."))
        }
        var scopes = (request.parameter("scope") ?? "").split(whereSeparator: { $0 == "," || $0 == " " })
            .map(String.init)
        var configuration: BusinessConfiguration?
        if let configID = request.parameter("config_id") {
            // Login for Business (docs/facebook-graph.md §4.6b): the configuration must be this app's, and the
            // dialog is asked for a code with override_default_response_type=true; its permissions replace scope.
            guard let found = store.businessConfigurations[configID], found.appID == app.id else {
                return .failure(
                    DialogFailure(
                        status: 400, title: "Error",
                        message: "The configuration \(configID) does not exist or does not belong to this app."))
            }
            guard types == ["code"], request.parameter("override_default_response_type") == "true" else {
                return .failure(
                    DialogFailure(
                        status: 400, title: "Error",
                        message: "config_id needs response_type=code and override_default_response_type=true."))
            }
            configuration = found
            scopes = found.permissions
        }
        let authType = request.parameter("auth_type").flatMap {
            ["rerequest", "reauthenticate", "reauthorize"].contains($0) ? $0 : nil
        }
        return .success(
            DialogLogin(
                app: app, redirectURI: redirectURI, state: request.parameter("state"), scopes: scopes,
                responseTypes: types, authType: authType, authNonce: request.parameter("auth_nonce"),
                limitedTracking: request.parameter("tracking") == "limited", nonce: request.parameter("nonce"),
                configuration: configuration))
    }
}

/// A dialog request that cannot proceed; `page` is the error page to show.
struct DialogFailure: Error {
    let page: Response

    init(status: Int, title: String, message: String) {
        page = DialogPage.error(status: status, title: title, message: message)
    }
}
