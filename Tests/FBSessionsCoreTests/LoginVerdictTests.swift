import FBSessionsAPI
import FBSessionsCore
import Foundation
import Testing
import TestSupport

/// Which answer a login gets is decided by `debug_token`'s verdict (valid, this app, a `USER` token), never by
/// whichever of the four concurrent Graph calls finished first: one test per refusal path, each with the other
/// calls answering differently (and sooner) to show they do not decide.
@Suite struct LoginVerdictTests {
    static let app = App(
        id: "app_1", name: "shop", facebookAppID: "1000000000000001", redirectURIs: [], requiredPermissions: [],
        createdAt: Date())

    /// What a scripted call answers, after `delay` milliseconds.
    struct Answer<T: Sendable>: Sendable {
        var result: Result<T, GraphError>
        var delay: UInt64 = 0
    }

    /// A Graph whose four login calls answer as scripted; nothing else is called by a login.
    struct ScriptedGraph: GraphAPI {
        var debug: Answer<GraphTokenInfo>
        var me = Answer<GraphProfile>(result: .success(GraphProfile(Profile(id: "10000000000000001", name: "Ada Lovelace"))))
        var permissions = Answer<GraphPermissions>(result: .success(GraphPermissions(granted: ["public_profile"])))
        var exchange = Answer<GraphTokenGrant>(
            result: .success(GraphTokenGrant(accessToken: "EAAlonglived", expiresIn: 5_184_000)))

        static func answer<T>(_ answer: Answer<T>) async throws -> T {
            if answer.delay > 0 { try await Task.sleep(nanoseconds: answer.delay * 1_000_000) }
            return try answer.result.get()
        }
        func debugToken(inputToken: String, credentials: GraphCredentials) async throws -> GraphTokenInfo {
            try await Self.answer(debug)
        }
        func me(fields: [String], accessToken: String, credentials: GraphCredentials) async throws -> GraphProfile {
            try await Self.answer(me)
        }
        func permissions(accessToken: String, credentials: GraphCredentials) async throws -> GraphPermissions {
            try await Self.answer(permissions)
        }
        func exchangeForLongLivedToken(accessToken: String, credentials: GraphCredentials) async throws -> GraphTokenGrant {
            try await Self.answer(exchange)
        }
        func revokePermissions(accessToken: String, credentials: GraphCredentials) async throws {
            Issue.record("a login never revokes")
        }
        func exchangeCode(code: String, redirectURI: String, credentials: GraphCredentials) async throws -> GraphTokenGrant {
            throw GraphError.other(GraphErrorDetail(code: 100, message: "not scripted"))
        }
        func pictureURL(size: GraphPictureSize, accessToken: String, credentials: GraphCredentials) async throws -> GraphPicture {
            throw GraphError.other(GraphErrorDetail(code: 100, message: "not scripted"))
        }
        func get(path: String, query: [(name: String, value: String)], authentication: GraphAuthentication,
                 credentials: GraphCredentials) async throws -> [UInt8] {
            throw GraphError.other(GraphErrorDetail(code: 100, message: "not scripted"))
        }
    }

    /// An app store that knows the app's secret, so that credentials can be made.
    struct SecretAppStore: AppStore {
        func addApp(_ draft: AppDraft) async throws -> App { throw ServiceError.databaseUnavailable }
        func apps() async throws -> [App] { [LoginVerdictTests.app] }
        func app(named name: String) async throws -> App? { LoginVerdictTests.app }
        func secret(ofApp appID: String) async throws -> String { "app-secret-for-verdict-tests" }
        func setGraphVersion(_ version: String?, ofAppNamed name: String) async throws -> App {
            throw ServiceError.databaseUnavailable
        }
        func recordServedGraphVersion(_ served: ServedGraphVersion, facebookAppID: String) async throws {}
        func graphVersions(ofApp appID: String) async throws -> (requested: String?, served: ServedGraphVersion?) {
            (nil, nil)
        }
    }

    static func valid(type: String? = "USER", appID: String = "1000000000000001", userID: String? = "10000000000000001")
        -> GraphTokenInfo
    {
        GraphTokenInfo(
            isValid: true, appID: appID, userID: userID, type: type, expiresAt: Date().addingTimeInterval(3600),
            scopes: ["public_profile"])
    }

    static let transient = GraphError.transient(GraphTransientFailure(.unavailable))
    static let activeTokenRequired = GraphError.other(
        GraphErrorDetail(
            code: 2500, type: "OAuthException",
            message: "An active access token must be used to query information about the current user."))
    static func dead(_ subcode: Int) -> GraphError {
        GraphError.classify(GraphErrorDetail(code: 190, subcode: subcode, type: "OAuthException", message: "dead"))
    }

    /// The login's outcome as the client sees it: status, code, and the `graph` detail's code. A login that
    /// passed every check reaches the store, which here answers 503 `database_unavailable`.
    static func outcome(_ graph: ScriptedGraph) async -> (status: Int, code: String, graphCode: Int?) {
        let service = SessionService(
            store: UnusedSessionStore(), graph: graph, apps: SecretAppStore(),
            policy: .init(validateTTL: 300, refreshAfter: 86_400, maxSlots: 8, graphVersion: nil, graphTimeout: 10))
        do {
            _ = try await service.login(app: app, owner: "o", accessToken: "EAAtoken", slot: nil, activate: true)
            return (201, "stored", nil)
        } catch {
            let mapped = APIError.from(error)
            return (mapped.status, mapped.code.rawValue, mapped.graph?.code)
        }
    }

    @Test func aTokenThatPassesEveryCheckReachesTheStore() async {
        let outcome = await Self.outcome(ScriptedGraph(debug: Answer(result: .success(Self.valid()), delay: 30)))
        #expect(outcome.status == 503 && outcome.code == "database_unavailable")
    }

    @Test func aFailedDebugTokenCallDecidesEvenWhenMeRefusedTheTokenFirst() async {
        var graph = ScriptedGraph(debug: Answer(result: .failure(Self.transient), delay: 40))
        graph.me = Answer(result: .failure(Self.dead(467)))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 503 && outcome.code == "graph_unavailable")
    }

    @Test func anInvalidTokenIsRefusedWhateverTheOtherCallsSaid() async {
        var info = GraphTokenInfo(isValid: false, appID: "1000000000000001", userID: "10000000000000001", type: "USER")
        info.error = GraphErrorDetail(code: 190, subcode: 460, message: "password changed")
        var graph = ScriptedGraph(debug: Answer(result: .success(info), delay: 40))
        graph.me = Answer(result: .failure(Self.transient))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "token_rejected" && outcome.graphCode == 190)
        // Invalid without an error detail: still refused, with debug_token's own verdict.
        let bare = await Self.outcome(
            ScriptedGraph(debug: Answer(result: .success(GraphTokenInfo(isValid: false, type: "USER")), delay: 20)))
        #expect(bare.status == 422 && bare.code == "token_rejected")
    }

    @Test func anInvalidTokenPastItsExpiryWithoutDetailIsRefusedAsExpired() async {
        let info = GraphTokenInfo(
            isValid: false, appID: "1000000000000001", userID: "10000000000000001", type: "USER",
            expiresAt: Date().addingTimeInterval(-60))
        guard case .invalidToken(.tokenExpired, let detail)? = info.failure() else {
            Issue.record("an invalid token past its expiry is an expired token")
            return
        }
        #expect(detail.code == 190 && detail.subcode == 463)
        var graph = ScriptedGraph(debug: Answer(result: .success(info), delay: 40))
        graph.me = Answer(result: .success(GraphProfile(Profile(id: "10000000000000001", name: "Ada Lovelace"))))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "token_rejected" && outcome.graphCode == 190)
    }

    @Test func aDebugTokenCallFailingForGoodDecidesThoughTheOtherCallsSucceededFirst() async {
        var graph = ScriptedGraph(
            debug: Answer(result: .failure(.other(GraphErrorDetail(code: 100, message: "unsupported"))), delay: 40))
        graph.me = Answer(result: .success(GraphProfile(Profile(id: "10000000000000001", name: "Ada Lovelace"))))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 502 && outcome.code == "graph_error" && outcome.graphCode == 100, "\(outcome)")
    }

    @Test func anotherAppsTokenIsAMismatchEvenWhenMeFailedFirst() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid(appID: "2000000000000002")), delay: 40))
        graph.me = Answer(result: .failure(Self.activeTokenRequired))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "token_app_mismatch")
    }

    @Test func anAppTokenIs422WithGraphsDetailNotA502() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid(type: "APP", userID: nil)), delay: 40))
        graph.me = Answer(result: .failure(Self.activeTokenRequired))
        graph.permissions = Answer(result: .failure(Self.activeTokenRequired))
        graph.exchange = Answer(result: .failure(.other(GraphErrorDetail(code: 100, message: "no user token"))))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "unsupported_token_type" && outcome.graphCode == 2500)
    }

    @Test func aPageTokenIsRefusedThoughMeAnswered() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid(type: "PAGE")), delay: 40))
        graph.me = Answer(result: .success(GraphProfile(Profile(id: "10000000000000001", name: "A Page"))))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "unsupported_token_type" && outcome.graphCode == nil)
        // A missing type is refused too: only a token Graph calls USER is a person's.
        let untyped = await Self.outcome(ScriptedGraph(debug: Answer(result: .success(Self.valid(type: nil)))))
        #expect(untyped.status == 422 && untyped.code == "unsupported_token_type")
        let system = await Self.outcome(ScriptedGraph(debug: Answer(result: .success(Self.valid(type: "SYSTEM_USER")))))
        #expect(system.status == 422 && system.code == "unsupported_token_type")
    }

    @Test func aUserTokenThatMeThenRefusesIsRejected() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid())))
        graph.me = Answer(result: .failure(Self.dead(467)), delay: 40)
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "token_rejected" && outcome.graphCode == 190)
    }

    @Test func aUserTokenWhoseProfileCannotBeReadNowIs503() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid())))
        graph.me = Answer(result: .failure(Self.transient), delay: 40)
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 503 && outcome.code == "graph_unavailable")
    }

    @Test func aUserMismatchIsRefused() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid(userID: "10000000000000009"))))
        graph.me = Answer(result: .success(GraphProfile(Profile(id: "10000000000000001"))))
        let other = await Self.outcome(graph)
        #expect(other.status == 422 && other.code == "token_rejected")
        let missing = await Self.outcome(ScriptedGraph(debug: Answer(result: .success(Self.valid(userID: nil)))))
        #expect(missing.status == 422 && missing.code == "token_rejected")
    }

    @Test func aShortLivedTokenThatCannotBeExtendedIsRefused() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid())))
        graph.exchange = Answer(result: .failure(Self.dead(463)), delay: 40)
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "token_rejected")
        var unreachable = ScriptedGraph(debug: Answer(result: .success(Self.valid())))
        unreachable.exchange = Answer(result: .failure(Self.transient))
        #expect(await Self.outcome(unreachable).code == "graph_unavailable")
    }

    @Test func dataAccessExpiryAtLoginIsRefusedWithTheReauthorizeHint() async {
        var graph = ScriptedGraph(debug: Answer(result: .success(Self.valid())))
        graph.me = Answer(result: .failure(Self.dead(493)))
        let outcome = await Self.outcome(graph)
        #expect(outcome.status == 422 && outcome.code == "token_rejected" && outcome.graphCode == 190)
    }
}
