import HTTPServer

/// Limited Login's endpoints, as `limited.facebook.com` serves them (Meta's "OIDC Token for Limited Login" page;
/// README.md, "Limited Login"):
///
/// - `GET /.well-known/openid-configuration/`: the discovery document, shaped like Facebook's (issuer
///   `https://www.facebook.com`, RS256 only, the claims Facebook lists), pointing at this emulator's key set and
///   dialog;
/// - `GET /.well-known/oauth/openid/jwks/`: the key set, `{"keys": [{kid, kty, alg, use, n, e}]}`, with
///   `Cache-Control: public, max-age=N` (3600 unless set otherwise; none at all when set to nil);
/// - `POST /platform/uninstall/` with `id_token` and `app_id`: `{"success":true}` for a token this emulator
///   signed for that app and not expired; otherwise a Graph error (190 `Invalid id_token.`, 190/463 when expired,
///   100 for a missing parameter);
/// - `POST /limited_login/refresh/` with `id_token_hint` and `app_id` and a `DPoP` header (iOS SDK 18.1's direct
///   refresh): `{"id_token", "expires_in"}`, a new token for the same person; the same errors for a hint it does
///   not take, and 100 without a `DPoP` header.
enum LimitedLoginRoutes {
    static func answer(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        switch request.endpoint {
        case .openIDConfiguration:
            guard request.method == "GET" else { return GraphAnswer(.error(.unsupported(request.method, id: ""))) }
            return GraphAnswer(.raw(json(discovery(baseURL: request.baseURL), cacheControl: "public, max-age=86400")))
        case .jwks:
            guard request.method == "GET" else { return GraphAnswer(.error(.unsupported(request.method, id: ""))) }
            if store.limited.keys.isEmpty { _ = try? store.limited.signingKey() }
            let set = JSONValue.object([("keys", .array(store.limited.keys.map(\.jwk)))])
            return GraphAnswer(.raw(json(set, cacheControl: store.limited.maxAge.map { "public, max-age=\($0)" })))
        case .limitedRefresh:
            return refresh(request, store: &store)
        default:
            return uninstall(request, store: &store)
        }
    }

    /// The SDK's direct refresh: a form `POST` with `id_token_hint` (the current token) and `app_id`, and a `DPoP`
    /// proof header. The header must be there and non-empty; it is not verified (the emulator has no device key to
    /// check it against, and the service never sees it: the app makes this call, not the backend). Answers
    /// `{"id_token", "expires_in"}` with a new token for the same person (``EmulatorStore/refreshAuthenticationToken``),
    /// or the errors of the uninstall endpoint for a hint it does not take.
    private static func refresh(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        guard request.method == "POST" else { return GraphAnswer(.error(.unsupported(request.method, id: "refresh"))) }
        guard let hint = request.parameter("id_token_hint"), !hint.isEmpty else {
            return GraphAnswer(.error(.missingParameter("id_token_hint")))
        }
        guard let appID = request.parameter("app_id"), !appID.isEmpty else {
            return GraphAnswer(.error(.missingParameter("app_id")))
        }
        guard let proof = request.dpopProof, proof.contains(where: { $0 != " " && $0 != "\t" }) else {
            return GraphAnswer(.error(.missingDPoPProof))
        }
        guard store.apps[appID] != nil else { return GraphAnswer(.error(.invalidClientID)) }
        switch store.refreshAuthenticationToken(
            LimitedRefreshRequest(hint: hint, appID: appID), baseURL: request.baseURL)
        {
        case .failure(let error):
            return GraphAnswer(.error(error))
        case .success(let minted):
            return GraphAnswer(
                .json(.object([("id_token", .string(minted.token)), ("expires_in", .int(minted.expiresAt - minted.issuedAt))])))
        }
    }

    private static func uninstall(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        guard request.method == "POST" else { return GraphAnswer(.error(.unsupported(request.method, id: "uninstall"))) }
        guard let idToken = request.parameter("id_token"), !idToken.isEmpty else {
            return GraphAnswer(.error(.missingParameter("id_token")))
        }
        guard let appID = request.parameter("app_id"), !appID.isEmpty else {
            return GraphAnswer(.error(.missingParameter("app_id")))
        }
        guard store.apps[appID] != nil else { return GraphAnswer(.error(.invalidClientID)) }
        switch store.checkUninstall(idToken: idToken, appID: appID) {
        case .refused(let error):
            return GraphAnswer(.error(error))
        case .accepted(let userID, let tokenID):
            store.limited.uninstalls.append(LimitedUninstall(appID: appID, userID: userID, tokenID: tokenID, at: store.now))
            return GraphAnswer(.success)
        }
    }

    /// The discovery document (Facebook's members, in its order; this emulator's URLs).
    static func discovery(baseURL: String) -> JSONValue {
        .object([
            ("issuer", .string("https://www.facebook.com")),
            ("authorization_endpoint", .string(baseURL + "/dialog/oauth/")),
            ("jwks_uri", .string(baseURL + "/.well-known/oauth/openid/jwks/")),
            ("response_types_supported", .strings(["id_token", "token id_token"])),
            ("subject_types_supported", .strings(["pairwise"])),
            ("id_token_signing_alg_values_supported", .strings(["RS256"])),
            (
                "claims_supported",
                .strings([
                    "iss", "aud", "sub", "iat", "exp", "jti", "nonce", "at_hash", "name", "given_name", "middle_name",
                    "family_name", "email", "picture", "user_friends", "user_birthday", "user_age_range", "user_link",
                    "user_hometown", "user_location", "user_gender",
                ])
            ),
        ])
    }

    private static func json(_ value: JSONValue, cacheControl: String?) -> Response {
        var response = Response(status: 200, headers: ["Content-Type": "application/json"], body: value.bytes)
        if let cacheControl { response.headers.add("Cache-Control", cacheControl) }
        response.headers.add("Access-Control-Allow-Origin", "*")
        return response
    }
}
