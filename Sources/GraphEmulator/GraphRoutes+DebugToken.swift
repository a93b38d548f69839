/// `GET /debug_token` (docs/facebook-graph.md §3, §12.6).
extension GraphRoutes {
    static func debugToken(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        guard request.method == "GET" || request.method == "POST" else {
            return GraphAnswer(.error(.unsupported(request.method, id: "debug_token")))
        }
        // The inspector: an app token, or a valid user token of one of the app's developers.
        switch Self.caller(request, store: store, needsData: false) {
        case .failure(let error):
            return GraphAnswer(.error(error))
        case .success(.anonymous), .success(.client):
            return GraphAnswer(.error(.debugTokenNeedsAppToken))
        case .success(.user(let record)):
            guard let app = store.apps[record.appID], let userID = record.userID,
                app.developerIDs.contains(userID)
            else { return GraphAnswer(.error(.debugTokenNeedsAppToken)) }
        case .success(.app):
            break
        }
        guard let input = request.parameter("input_token"), !input.isEmpty else {
            return GraphAnswer(.error(.inputTokenRequired))
        }
        switch store.resolve(input) {
        case .failed(let error):
            let data: JSONValue = .object([
                ("error", .object([("code", .int(Int64(error.code))), ("message", .string(error.message))])),
                ("is_valid", .bool(false)), ("scopes", .array([])),
            ])
            return GraphAnswer(.json(.object([("data", data)])))
        case .app(let app), .client(let app):
            let data: JSONValue = .object([
                ("app_id", .string(app.id)), ("type", .string(TokenKind.app.rawValue)),
                ("application", .string(app.name)), ("is_valid", .bool(true)), ("scopes", .array([])),
            ])
            return GraphAnswer(.json(.object([("data", data)])))
        case .token(let record):
            return GraphAnswer(.json(.object([("data", tokenData(record, store: store))])))
        }
    }

    /// The USER, SYSTEM_USER or PAGE shape. Invalid tokens keep `app_id` and `user_id` and add `error` (with `subcode`, not
    /// `error_subcode`); tokens invalidated for another reason than expiry show `expires_at: 0`.
    static func tokenData(_ record: TokenRecord, store: EmulatorStore) -> JSONValue {
        let now = store.now
        let failure = record.failure(now: now)
        var members: [(String, JSONValue)] = [
            ("app_id", .string(record.appID)), ("type", .string(record.kind.rawValue)),
            ("application", .string(store.apps[record.appID]?.name ?? "")),
            ("data_access_expires_at", .int(record.dataAccessExpiresAt)),
        ]
        if let failure {
            let message = GraphError.message(for: failure, token: record, now: now)
            let error: JSONValue = .object([
                ("code", .int(190)), ("message", .string(message)), ("subcode", .int(Int64(failure.rawValue))),
            ])
            members.append(("error", error))
        }
        let expiresAt = failure == nil || failure == .expired ? record.expiresAt : 0
        members.append(("expires_at", .int(expiresAt)))
        members.append(("is_valid", .bool(failure == nil)))
        if record.isLongLived { members.append(("issued_at", .int(record.issuedAt))) }
        if !record.metadata.isEmpty {
            members.append(("metadata", .object(record.metadata.map { ($0.0, .string($0.1)) })))
        }
        if record.kind == .page, let pageID = record.pageID { members.append(("profile_id", .string(pageID))) }
        members.append(("scopes", .strings(record.granted)))
        // "If permission applies to all, targets will not be shown": `target_ids` only for permissions granted on
        // chosen assets (Facebook Login for Business, Page tokens made with them).
        members.append(
            (
                "granular_scopes",
                .array(
                    record.granted.map { scope in
                        guard let targets = record.targets[scope], !targets.isEmpty else {
                            return .object([("scope", .string(scope))])
                        }
                        return .object([("scope", .string(scope)), ("target_ids", .strings(targets))])
                    })
            ))
        if let userID = record.userID { members.append(("user_id", .string(userID))) }
        return .object(members)
    }
}
