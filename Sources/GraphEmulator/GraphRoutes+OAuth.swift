/// `GET|POST /oauth/access_token` (docs/facebook-graph.md §4.2, §4.3, §4.6, §4.7, §12.8).
extension GraphRoutes {
    static func accessToken(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        guard request.method == "GET" || request.method == "POST" else {
            return GraphAnswer(.error(.unsupported(request.method, id: "access_token")))
        }
        let grantType = request.parameter("grant_type")
        if grantType == "fb_extend_sso_token" { return extendSSO(request, store: &store) }
        guard grantType == nil || ["authorization_code", "fb_exchange_token", "client_credentials"].contains(grantType)
        else { return GraphAnswer(.error(.invalidGrantType(grantType ?? ""))) }
        guard let clientID = request.parameter("client_id"), !clientID.isEmpty else {
            return GraphAnswer(.error(.missingClientID))
        }
        guard let app = store.apps[clientID] else { return GraphAnswer(.error(.invalidClientID)) }
        guard let secret = request.parameter("client_secret"), secret == app.secret else {
            return GraphAnswer(.error(.invalidClientSecret))
        }
        switch grantType {
        case "client_credentials":
            let token = (try? store.appToken(for: app.id))?.string ?? app.appAccessToken
            return GraphAnswer(.json(.object([("access_token", .string(token)), ("token_type", .string("bearer"))])))
        case "fb_exchange_token":
            return exchange(request, app: app, store: &store)
        default:
            return redeemCode(request, app: app, store: &store)
        }
    }

    /// The code exchange: single use, expires, `redirect_uri` must repeat the dialog's exactly.
    static func redeemCode(_ request: GraphRequest, app: EmulatedApp, store: inout EmulatorStore) -> GraphAnswer {
        guard let code = request.parameter("code"), !code.isEmpty else { return GraphAnswer(.error(.missingCode)) }
        guard code.hasPrefix("AQ"), var record = store.codes[code], record.appID == app.id else {
            return GraphAnswer(.error(.codeMalformed))
        }
        if record.used { return GraphAnswer(.error(.codeUsed)) }
        if store.now - record.createdAt > store.configuration.codeLifetime {
            return GraphAnswer(.error(.codeExpired))
        }
        guard request.parameter("redirect_uri") == record.redirectURI else {
            return GraphAnswer(.error(.redirectMismatch))
        }
        record.used = true
        store.codes[code] = record
        do {
            // A system user's token (Login for Business) does not expire; a user's is short-lived.
            let systemUser = record.kind == .systemUser
            let token = try store.issueUserToken(
                appID: app.id, userID: record.userID, kind: record.kind, longLived: systemUser,
                expiresIn: systemUser ? 0 : nil, dataAccessExpiresIn: nil, granted: record.granted,
                declined: record.declined, expired: [], metadata: record.metadata, targets: record.targets)
            return GraphAnswer(.json(bearer(token, now: store.now)))
        } catch {
            return GraphAnswer(.error(.codeMalformed))
        }
    }

    /// `grant_type=fb_exchange_token`: a new long-lived token; the old one stays valid; an expired or invalid
    /// one is refused with its 190 error.
    static func exchange(_ request: GraphRequest, app: EmulatedApp, store: inout EmulatorStore) -> GraphAnswer {
        guard let input = request.parameter("fb_exchange_token"), !input.isEmpty else {
            return GraphAnswer(.error(.invalidParameter("The parameter fb_exchange_token is required")))
        }
        switch store.resolve(input) {
        case .failed(let error):
            return GraphAnswer(.error(error))
        case .app, .client:
            return GraphAnswer(.error(.unparseableToken))
        case .token(let record):
            if let error = store.failure(of: record, needsData: false) { return GraphAnswer(.error(error)) }
            guard record.appID == app.id else {
                return GraphAnswer(
                    .error(.tokenError("Error validating access token: The token was not issued for this application."))
                )
            }
            let fresh = store.exchangeForLongLived(record)
            return GraphAnswer(.json(bearer(fresh, now: store.now)))
        }
    }

    /// `grant_type=fb_extend_sso_token` (iOS SDK refresh, §4.7): the same token, extended to the long-lived
    /// lifetime; answers `{access_token, expires_at, data_access_expiration_time}`.
    static func extendSSO(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        switch Self.caller(request, store: store, needsData: false) {
        case .failure(let error):
            return GraphAnswer(.error(error))
        case .success(.user(var record)):
            if let clientID = request.parameter("client_id"), clientID != record.appID {
                return GraphAnswer(.error(.invalidClientID))
            }
            record.expiresAt = store.now + store.configuration.longLivedLifetime
            record.isLongLived = true
            store.tokens[record.string] = record
            return GraphAnswer(
                .json(
                    .object([
                        ("access_token", .string(record.string)), ("expires_at", .int(record.expiresAt)),
                        ("data_access_expiration_time", .int(record.dataAccessExpiresAt)),
                    ])))
        case .success:
            return GraphAnswer(.error(.activeTokenRequired))
        }
    }

    /// `{"access_token","token_type":"bearer","expires_in"}` (no `expires_in` for a token that never expires).
    static func bearer(_ token: TokenRecord, now: Int64) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("access_token", .string(token.string)), ("token_type", .string("bearer")),
        ]
        if token.expiresAt > 0 { members.append(("expires_in", .int(token.expiresAt - now))) }
        return .object(members)
    }
}
