/// The control routes' bodies and answers.
extension ControlRoutes {
    func createApp(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(
            bytes,
            allowed: ["id", "secret", "name", "require_proof", "client_token", "redirect_uris", "developer_ids"])
        let app = try emulator.registerApp(
            id: body.string("id"), secret: body.string("secret"), name: body.string("name"),
            requiresProof: body.bool("require_proof") ?? false, clientToken: body.string("client_token"),
            redirectURIs: body.strings("redirect_uris") ?? [], developerIDs: body.strings("developer_ids") ?? [])
        return Self.json(app)
    }

    static let userFields: Set<String> = [
        "id", "first_name", "middle_name", "last_name", "name", "email", "link", "has_picture",
    ]

    func createUser(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: Self.userFields)
        let user = try emulator.createUser(
            id: body.string("id"), firstName: body.string("first_name"), middleName: body.string("middle_name"),
            lastName: body.string("last_name"), name: body.string("name"), email: body.string("email"),
            link: body.string("link"), hasPicture: body.bool("has_picture") ?? true)
        return Self.json(user)
    }

    func updateUser(_ id: String, _ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: Self.userFields.subtracting(["id"]))
        let firstName = try body.string("first_name")
        let middleName = try body.string("middle_name")
        let lastName = try body.string("last_name")
        let name = try body.string("name")
        let email = try body.string("email")
        let link = try body.string("link")
        let hasPicture = try body.bool("has_picture")
        let user = try emulator.updateUser(id) { user in
            if body.has("first_name") { user.firstName = firstName }
            if body.has("middle_name") { user.middleName = middleName }
            if body.has("last_name") { user.lastName = lastName }
            if body.has("name") { user.name = name }
            if body.has("email") { user.email = email }
            if body.has("link") { user.link = link }
            if let hasPicture { user.hasPicture = hasPicture }
        }
        return Self.json(user)
    }

    func issueToken(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(
            bytes,
            allowed: [
                "app_id", "user_id", "type", "long_lived", "expires_in", "data_access_expires_in", "granted",
                "declined", "expired", "page_id", "page_name", "auth_type", "auth_nonce", "sso", "assets",
            ])
        let appID = try body.requiredString("app_id")
        switch try body.string("type")?.lowercased() ?? "user" {
        case "app":
            let token = try emulator.appToken(for: appID)
            return .object([("access_token", .string(token)), ("app_id", .string(appID)), ("type", .string("APP"))])
        case "page":
            let token = try emulator.issuePageToken(
                appID: appID, userID: body.requiredString("user_id"), pageID: body.requiredString("page_id"),
                pageName: body.string("page_name") ?? "Emulated Page",
                granted: body.strings("granted") ?? ["pages_show_list"])
            return Self.json(token, now: emulator.now)
        case "system_user":
            let token = try emulator.issueSystemUserToken(
                appID: appID, userID: body.requiredString("user_id"),
                granted: body.strings("granted") ?? ["business_management"], assets: body.stringLists("assets") ?? [:])
            return Self.json(token, now: emulator.now)
        case "user":
            let token = try emulator.issueToken(
                appID: appID, userID: body.requiredString("user_id"), longLived: body.bool("long_lived") ?? false,
                expiresIn: body.int("expires_in"), dataAccessExpiresIn: body.int("data_access_expires_in"),
                granted: body.strings("granted") ?? ["public_profile"], declined: body.strings("declined") ?? [],
                expired: body.strings("expired") ?? [], authType: body.string("auth_type"),
                authNonce: body.string("auth_nonce"), sso: body.string("sso"), assets: body.stringLists("assets") ?? [:])
            return Self.json(token, now: emulator.now)
        default:
            throw ControlError(400, "invalid_request", "Field type must be user, system_user, app or page.")
        }
    }

    /// `POST /__emulator/business-configs`: `{app_id, id?, permissions, assets?: {permission: [ids]},
    /// token_type?: "user" | "system_user"}`.
    func defineConfiguration(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["id", "app_id", "permissions", "assets", "token_type"])
        let kind: TokenKind
        switch try body.string("token_type") ?? "user" {
        case "user": kind = .user
        case "system_user": kind = .systemUser
        default: throw ControlError(400, "invalid_request", "Field token_type must be user or system_user.")
        }
        guard let permissions = try body.strings("permissions") else {
            throw ControlError(400, "invalid_request", "Field permissions is required.")
        }
        let configuration = try emulator.defineConfiguration(
            id: body.string("id"), appID: body.requiredString("app_id"), permissions: permissions,
            assets: body.stringLists("assets") ?? [:], tokenKind: kind)
        return Self.json(configuration)
    }

    func inspectToken(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["access_token"])
        guard let token = emulator.token(try body.requiredString("access_token")) else {
            throw ControlError(404, "not_found", "No such token.")
        }
        return Self.json(token, now: emulator.now)
    }

    func invalidate(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["access_token", "user_id", "app_id", "subcode"])
        guard let subcode = try body.int("subcode"), let reason = TokenInvalidation(rawValue: Int(subcode)) else {
            throw ControlError(
                400, "invalid_request", "Field subcode must be one of 458, 459, 460, 463, 464, 466, 467, 493.")
        }
        if let token = try body.string("access_token") {
            return Self.json(try emulator.invalidateToken(token, reason: reason), now: emulator.now)
        }
        let count = emulator.invalidateTokens(
            userID: try body.requiredString("user_id"), appID: try body.string("app_id"), reason: reason)
        return .object([("invalidated", .int(Int64(count)))])
    }

    func mintCode(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["app_id", "user_id", "redirect_uri", "granted", "declined"])
        let code = try emulator.authorizationCode(
            appID: body.requiredString("app_id"), userID: body.requiredString("user_id"),
            redirectURI: body.requiredString("redirect_uri"), granted: body.strings("granted") ?? ["public_profile"],
            declined: body.strings("declined") ?? [])
        return .object([("code", .string(code))])
    }

    func endpoint(_ name: String?) throws -> GraphEndpoint? {
        guard let name, name != "*" else { return nil }
        guard let endpoint = GraphEndpoint(rawValue: name) else {
            let names = GraphEndpoint.allCases.map(\.rawValue).joined(separator: ", ")
            throw ControlError(400, "invalid_request", "Field endpoint must be \"*\" or one of \(names).")
        }
        return endpoint
    }

    func setLatency(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["endpoint", "ms"])
        guard let milliseconds = try body.number("ms"), milliseconds >= 0, milliseconds <= 600_000 else {
            throw ControlError(400, "invalid_request", "Field ms must be a number from 0 to 600000.")
        }
        emulator.setLatency(.milliseconds(milliseconds), for: try endpoint(body.string("endpoint")))
        return latencyState()
    }

    func latencyState() -> JSONValue {
        let (values, fallback) = emulator.state.withStore { ($0.latency, $0.defaultLatency) }
        var members: [(String, JSONValue)] = [("*", .double(Self.milliseconds(fallback)))]
        for endpoint in GraphEndpoint.allCases {
            if let value = values[endpoint] { members.append((endpoint.rawValue, .double(Self.milliseconds(value)))) }
        }
        return .object(members)
    }

    static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    func injectFault(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(
            bytes,
            allowed: ["endpoint", "count", "kind", "code", "subcode", "type", "message", "status", "is_transient"])
        guard let endpoint = try endpoint(body.requiredString("endpoint")) else {
            throw ControlError(400, "invalid_request", "Faults need one endpoint, not \"*\".")
        }
        let count = try body.int("count") ?? 1
        guard (1...1_000_000).contains(count) else {
            throw ControlError(400, "invalid_request", "Field count must be from 1 to 1000000.")
        }
        let fault: GraphFault
        switch try body.string("kind") ?? "graph_error" {
        case "graph_error":
            guard let code = try body.int("code") else {
                throw ControlError(400, "invalid_request", "A graph_error fault needs a code.")
            }
            fault = .graphError(
                GraphErrorSpec(
                    code: Int(code), subcode: try body.int("subcode").map { Int($0) },
                    type: try body.string("type") ?? "OAuthException", message: try body.string("message"),
                    status: try body.int("status").map { Int($0) }, isTransient: try body.bool("is_transient")))
        case "http_status", "http_500":
            let status = try body.int("status") ?? 500
            guard (200...599).contains(status) else {
                throw ControlError(400, "invalid_request", "Field status must be from 200 to 599.")
            }
            fault = .httpStatus(Int(status))
        case "malformed": fault = .malformedBody
        case "empty": fault = .emptyBody
        case "html": fault = .htmlPage
        case "drop": fault = .dropConnection
        default:
            throw ControlError(
                400, "invalid_request", "Field kind must be graph_error, http_status, malformed, empty, html or drop.")
        }
        emulator.injectFault(fault, endpoint: endpoint, count: Int(count))
        return faultState()
    }

    func faultState() -> JSONValue {
        var members: [(String, JSONValue)] = []
        for endpoint in GraphEndpoint.allCases {
            let pending = emulator.pendingFaults(for: endpoint)
            guard !pending.isEmpty else { continue }
            members.append(
                (
                    endpoint.rawValue,
                    .array(
                        pending.map {
                            .object([("kind", .string(Self.kind($0.fault))), ("remaining", .int(Int64($0.remaining)))])
                        })
                ))
        }
        return .object([("faults", .object(members))])
    }

    static func kind(_ fault: GraphFault) -> String {
        switch fault {
        case .graphError(let spec): return "graph_error \(spec.code)" + (spec.subcode.map { "/\($0)" } ?? "")
        case .httpStatus(let status): return "http_status \(status)"
        case .malformedBody: return "malformed"
        case .emptyBody: return "empty"
        case .htmlPage: return "html"
        case .dropConnection: return "drop"
        }
    }

    func setUsage(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["app_id", "call_count", "total_cputime", "total_time"])
        let usage = AppUsage(
            callCount: Int(try body.int("call_count") ?? 0), totalCPUTime: Int(try body.int("total_cputime") ?? 0),
            totalTime: Int(try body.int("total_time") ?? 0))
        emulator.setAppUsage(usage, appID: try body.string("app_id"))
        return .object([("x-app-usage", .string(usage.headerValue))])
    }

    func clockState() -> JSONValue {
        let (now, offset) = emulator.state.withStore { ($0.now, $0.clockOffset) }
        return .object([("now", .int(now)), ("offset", .int(offset))])
    }

    func moveClock(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["advance", "now"])
        if let advance = try body.int("advance") {
            emulator.advanceClock(by: advance)
        } else if let now = try body.int("now") {
            emulator.setClock(to: now)
        } else {
            throw ControlError(400, "invalid_request", "Give advance (seconds) or now (Unix seconds).")
        }
        return clockState()
    }

    func counterState() -> JSONValue {
        let counts = emulator.callCounts
        return .object(GraphEndpoint.allCases.map { ($0.rawValue, .int(Int64(counts[$0] ?? 0))) })
    }

    func setOptions(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["omit_error_subcode", "bare_true_on_delete"])
        if let omit = try body.bool("omit_error_subcode") { emulator.omitsErrorSubcode = omit }
        if let bare = try body.bool("bare_true_on_delete") { emulator.answersBareTrueOnDelete = bare }
        return optionState()
    }

    func optionState() -> JSONValue {
        .object([
            ("omit_error_subcode", .bool(emulator.omitsErrorSubcode)),
            ("bare_true_on_delete", .bool(emulator.answersBareTrueOnDelete)),
        ])
    }
}
