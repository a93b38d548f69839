import FBSessionsStorage
import Foundation
import LocalCluster
import Support
import TestSupport
import Testing

@testable import fbsessiond

/// Requests a webhook peer received, with when each arrived.
final class WebhookInbox: Sendable {
    private let received = Locked<[(at: ContinuousClock.Instant, eventID: String)]>([])

    func take(_ request: PeerRequest) -> PeerAction {
        received.withLock { $0.append((ContinuousClock.now, request.header("X-FBS-Event-Id") ?? "")) }
        return .text("ok")
    }

    var deliveries: [(at: ContinuousClock.Instant, eventID: String)] { received.withLock { $0 } }
}

/// The whole service behind Debian's PgBouncer 1.18 in transaction mode, the event listener on
/// `FBS_DIRECT_DATABASE_URL`, several clients at once: every answer is what the request deserves (no 5xx, no
/// 401 for the live key, no 404 for a live session), and long polls and webhooks wake within a second of a commit.
@Suite("The service behind PgBouncer in transaction mode", .serialized, .enabled(if: TestPooler.isEnabled))
struct PoolerFlowTests {
    /// Every status the flow saw, with what it was.
    final class Statuses: Sendable {
        private let seen = Locked<[(String, Int)]>([])
        func record(_ what: String, _ reply: ServiceStack.Reply) { seen.withLock { $0.append((what, reply.status)) } }
        var all: [(String, Int)] { seen.withLock { $0 } }
    }

    /// One owner's whole life: two accounts in two slots, status every way, list, switch, log out one, then all.
    private static func flow(_ stack: ServiceStack, owner: String, statuses: Statuses) async throws {
        func send(_ what: String, _ method: String, _ path: String, json: [String: any Sendable]? = nil) async throws
            -> ServiceStack.Reply
        {
            let reply = try await stack.call(method, path, json: json)
            statuses.record(what, reply)
            return reply
        }
        let first = try stack.userToken(name: "First \(owner)")
        let login = try await stack.login(owner: owner, token: first.token)
        statuses.record("login", login)
        let id = try #require(login.json["id"] as? String)
        for mode in ["never", "auto", "always", "never"] {
            let status = try await send("status", "GET", "/v1/sessions/\(id)?validate=\(mode)")
            #expect(status.json["state"] as? String != "closed")
        }
        let second = try stack.userToken(name: "Second \(owner)")
        var body: [String: any Sendable] = ["owner": owner, "access_token": second.token, "slot": 2]
        body["activate"] = false
        let other = try await send("login slot 2", "POST", "/v1/sessions", json: body)
        let otherID = try #require(other.json["id"] as? String)
        let list = try await send("list", "GET", "/v1/owners/\(owner)/sessions")
        #expect((list.json["sessions"] as? [Any])?.count == 2)
        _ = try await send("activate", "PUT", "/v1/owners/\(owner)/active", json: ["session_id": otherID])
        _ = try await send("status", "GET", "/v1/sessions/\(otherID)")
        _ = try await send("logout", "DELETE", "/v1/sessions/\(otherID)")
        let closed = try await send("status of closed", "GET", "/v1/sessions/\(otherID)")
        #expect(closed.json["state"] as? String == "closed")
        _ = try await send("list", "GET", "/v1/owners/\(owner)/sessions")
        _ = try await send("logout all", "DELETE", "/v1/owners/\(owner)/sessions")
    }

    @Test(.serialized, arguments: [false, nil] as [Bool?])
    func theWholeFlowWorksAndEventsWakeAtOnce(preparedStatements: Bool?) async throws {
        let bouncer = try TestPooler.start(poolSize: 3)
        defer { bouncer.remove() }
        let directURL = try TestDatabase.create()
        let stack = try await ServiceStack(
            .init(
                databaseURL: directURL, poolURL: TestPooler.url(directURL, through: bouncer),
                preparedStatements: preparedStatements))
        let inbox = WebhookInbox()
        let peer = try ScriptedPeer { inbox.take($0) }
        defer { peer.stop() }
        // Events as they are now; the webhook and the long poll start after them.
        let start = try await stack.call("GET", "/v1/events")
        let cursor = try #require(start.json["next_cursor"] as? String)
        let webhooks = PostgresWebhookStore(database: stack.runtime.database, keyring: stack.keyring)
        let (_, secret) = try await webhooks.addWebhook(appID: stack.app.id, url: peer.baseURL + "/h")
        SecretsTranscript.noted("webhook secret", secret)
        let poll = Task { try await stack.call("GET", "/v1/events?after=\(cursor)&wait=25") }
        try await Task.sleep(for: .milliseconds(300))  // the long poll is waiting

        let probe = try await stack.login(owner: "probe", token: try stack.userToken(name: "Probe").token)
        let committed = ContinuousClock.now
        #expect(probe.status == 201)
        let woken = try await poll.value
        let wokeAfter = ContinuousClock.now - committed
        #expect(woken.status == 200 && ((woken.json["events"] as? [Any])?.isEmpty == false))
        #expect(wokeAfter < .seconds(1), "the long poll woke \(wokeAfter) after the commit")
        let delivered = await waitUntil(timeout: .seconds(1)) { !inbox.deliveries.isEmpty }
        #expect(delivered, "a webhook went out within a second of the commit (the dispatcher's own poll is 5 s)")

        let statuses = Statuses()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<6 {
                group.addTask { try await Self.flow(stack, owner: "owner-\(client)", statuses: statuses) }
            }
            try await group.waitForAll()
        }
        let bad = statuses.all.filter { $0.1 >= 500 || $0.1 == 401 || $0.1 == 404 }
        #expect(bad.isEmpty, "\(bad)")
        #expect(statuses.all.count == 6 * 13)

        // Every committed event in the feed once, and at the webhook at least once.
        let feed = try await stack.call("GET", "/v1/events?after=\(cursor)&limit=500")
        let ids = ((feed.json["events"] as? [[String: any Sendable]]) ?? []).compactMap { $0["id"] as? String }
        #expect(Set(ids).count == ids.count && ids.count >= 1 + 6 * 4, "opened twice and closed twice per owner")
        let allDelivered = await waitUntil(timeout: .seconds(20)) {
            Set(ids).isSubset(of: Set(inbox.deliveries.map(\.eventID)))
        }
        #expect(allDelivered)

        // Who is connected, by name: the listener directly, the pool through PgBouncer.
        let names = try await stack.admin(
            "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()"
        ).map { try $0.decode("application_name", as: String.self) }
        #expect(names.contains("fbsessiond-listener") && names.contains("fbsessiond"), "\(names)")
        if preparedStatements == nil {
            #expect(!stack.runtime.database.pool.preparesStatements, "the automatic pool found the pooler")
        }
        await stack.stop()
        TestDatabase.drop(directURL)
    }
}
