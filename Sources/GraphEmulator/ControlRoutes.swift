import HTTPServer

/// The control API under `/__emulator/` (JSON in, JSON out). Every route calls the same ``Emulator`` methods tests
/// use from Swift; README.md lists the routes and bodies.
struct ControlRoutes {
    let emulator: Emulator

    init(state: EmulatorState) {
        self.emulator = Emulator(sharing: state)
    }

    func respond(to request: Request) -> Response {
        let segments = request.path.split(separator: "/").dropFirst().map {
            FormCoding.percentDecode($0, plusIsSpace: false) ?? ""
        }
        let query = FormCoding.parse(request.head.rawQuery) ?? []
        do {
            let (status, value) = try route(request.method, segments, query: query, body: request.body)
            return Response(
                status: status, headers: ["Content-Type": "application/json; charset=UTF-8"], body: value.bytes)
        } catch let error as ControlError {
            return Self.failure(error)
        } catch let error as EmulatorError {
            return Self.failure(
                ControlError(error.message.hasPrefix("no ") ? 404 : 400, "invalid_request", error.message))
        } catch {
            return Self.failure(ControlError(500, "internal", "Unexpected error."))
        }
    }

    static func failure(_ error: ControlError) -> Response {
        let body: JSONValue = .object([
            ("error", .object([("code", .string(error.code)), ("message", .string(error.message))]))
        ])
        return Response(
            status: error.status, headers: ["Content-Type": "application/json; charset=UTF-8"], body: body.bytes)
    }

    private func route(
        _ method: String, _ segments: [String], query: [(String, String)], body: [UInt8]
    ) throws -> (Int, JSONValue) {
        switch (method, segments) {
        case ("GET", []): return (200, Self.index)
        case ("POST", ["reset"]):
            emulator.reset()
            return (200, .object([("reset", .bool(true))]))
        case ("POST", ["apps"]): return (201, try createApp(body))
        case ("GET", ["apps"]): return (200, .object([("apps", .array(emulator.apps.map(Self.json)))]))
        case ("POST", ["users"]): return (201, try createUser(body))
        case ("GET", ["users"]): return (200, .object([("users", .array(emulator.users.map(Self.json)))]))
        case ("PATCH", let path) where path.count == 2 && path[0] == "users":
            return (200, try updateUser(path[1], body))
        case ("POST", ["tokens"]): return (201, try issueToken(body))
        case ("POST", ["tokens", "inspect"]): return (200, try inspectToken(body))
        case ("POST", ["tokens", "invalidate"]): return (200, try invalidate(body))
        case ("POST", ["codes"]): return (201, try mintCode(body))
        case ("POST", ["business-configs"]): return (201, try defineConfiguration(body))
        case ("GET", ["business-configs"]):
            return (200, .object([("configs", .array(emulator.businessConfigurations.map(Self.json)))]))
        case ("PUT", ["latency"]): return (200, try setLatency(body))
        case ("GET", ["latency"]): return (200, latencyState())
        case ("POST", ["faults"]): return (201, try injectFault(body))
        case ("GET", ["faults"]): return (200, faultState())
        case ("DELETE", ["faults"]):
            emulator.clearFaults()
            return (200, faultState())
        case ("PUT", ["app-usage"]): return (200, try setUsage(body))
        case ("GET", ["clock"]): return (200, clockState())
        case ("POST", ["clock"]): return (200, try moveClock(body))
        case ("GET", ["counters"]): return (200, counterState())
        case ("DELETE", ["counters"]):
            emulator.resetCounters()
            return (200, counterState())
        case ("PUT", ["options"]): return (200, try setOptions(body))
        case ("GET", ["options"]): return (200, optionState())
        case ("POST", ["demo"]): return (200, Self.json(emulator.seedDemo()))
        case (_, let path) where path.first == "limited":
            if let answer = try limitedRoute(method, Array(path.dropFirst()), query: query, body: body) { return answer }
            throw ControlError(
                404, "not_found", "No control route \(method) /__emulator/\(segments.joined(separator: "/")).")
        case ("POST", ["demo-token"]):
            let user = query.first { $0.0 == "user" }?.1 ?? "alice"
            return (201, Self.json(try emulator.issueDemoToken(user: user), now: emulator.now))
        default:
            throw ControlError(
                404, "not_found", "No control route \(method) /__emulator/\(segments.joined(separator: "/")).")
        }
    }

    /// `GET /__emulator/`: the routes, for people exploring by hand.
    static let index: JSONValue = .object([
        ("emulator", .string("fbsessions Graph API emulator")),
        (
            "routes",
            .strings([
                "POST /__emulator/reset", "POST|GET /__emulator/apps", "POST|GET /__emulator/users",
                "PATCH /__emulator/users/{id}", "POST /__emulator/tokens", "POST /__emulator/tokens/inspect",
                "POST /__emulator/tokens/invalidate", "POST /__emulator/codes", "POST|GET /__emulator/business-configs", "PUT|GET /__emulator/latency",
                "POST|GET|DELETE /__emulator/faults", "PUT /__emulator/app-usage", "GET|POST /__emulator/clock",
                "GET|DELETE /__emulator/counters", "PUT|GET /__emulator/options", "POST /__emulator/demo",
                "POST /__emulator/demo-token?user=alice", "POST /__emulator/limited/tokens",
                "POST /__emulator/limited/demo-token?user=alice&nonce=...", "GET|PUT /__emulator/limited/keys",
                "POST /__emulator/limited/keys/rotate", "GET /__emulator/limited/uninstalls",
                "POST /__emulator/limited/refresh",
            ])
        ),
        ("endpoints", .strings(GraphEndpoint.allCases.map(\.rawValue))),
    ])
}
