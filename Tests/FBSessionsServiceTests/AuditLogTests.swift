import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Testing
import TestSupport

/// The audit log over real HTTP and PostgreSQL: what token reads and revoking logouts write, `GET /v1/audit`
/// (pages, bounds, hostile queries, scopes), the database's refusal of every change but the one deletion path, and
/// retention by the sweep (docs/api-contract.md, "Audit log").
@Suite(.enabled(if: TestDatabase.isEnabled)) struct AuditLogTests {
    /// Every entry the harness's key can read, following cursors, once the given condition holds (an entry becomes
    /// visible once every transaction older than its own has ended).
    static func entries(
        _ harness: SessionHarness, until condition: ([[String: Any]]) -> Bool = { _ in true }
    ) async throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        for _ in 0..<100 {
            all = []
            var cursor: String?
            while true {
                let reply = try await harness.call("GET", "/v1/audit?limit=500" + (cursor.map { "&after=\($0)" } ?? ""))
                try #require(reply.status == 200, "\(reply.text)")
                let page = try #require(reply.json["entries"] as? [[String: Any]])
                all += page
                let next = try #require(reply.json["next_cursor"] as? String)
                if page.isEmpty {
                    #expect(next == (cursor ?? AuditCursor.start.text), "an empty page gives the cursor back")
                    break
                }
                cursor = next
            }
            if condition(all) { return all }
            try await Task.sleep(for: .milliseconds(50))
        }
        return all
    }

    /// Every row of `audit_log` as PostgreSQL's text of the row.
    static func rawRows(_ harness: SessionHarness) async throws -> [String] {
        try await harness.rows("SELECT t::text AS row FROM audit_log t ORDER BY id").map { try $0.decode("row", as: String.self) }
    }

    static func target(_ entry: [String: Any]) -> [String: Any] { entry["target"] as? [String: Any] ?? [:] }
    static func actor(_ entry: [String: Any]) -> [String: Any] { entry["actor"] as? [String: Any] ?? [:] }

    @Test func aTokenReadWritesItsKeyAndRequestAndNeverTheToken() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let read = try await harness.call("GET", "/v1/sessions/\(id)/token")
        #expect(read.status == 200)
        // The login may have exchanged the token for a long-lived one: the entry must hold neither.
        let revealed = try #require(read.json["access_token"] as? String)
        let requestID = try #require(read.header("X-Request-Id"))
        let keyID = try #require(APIKeyText.id(in: harness.key))

        let entries = try await Self.entries(harness) { $0.contains { $0["action"] as? String == "token.read" } }
        let reads = entries.filter { $0["action"] as? String == "token.read" }
        #expect(reads.count == 1, "\(entries)")
        let entry = try #require(reads.first)
        #expect(Self.actor(entry) as? [String: String] == ["kind": "key", "id": keyID])
        #expect(Self.target(entry) as? [String: String] == ["kind": "session", "id": id])
        #expect(entry["request_id"] as? String == requestID)
        #expect((entry["id"] as? String)?.allSatisfy(\.isNumber) == true && entry["at"] is String)

        // A read that hands nothing out writes nothing: an unknown id, a closed session.
        #expect(try await harness.call("GET", "/v1/sessions/ses_nope/token").status == 404)
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)").status == 200)
        #expect(try await harness.call("GET", "/v1/sessions/\(id)/token").status == 410)
        let rows = try await Self.rawRows(harness)
        #expect(rows.count == 1, "\(rows)")
        // No token, key or secret in any row.
        for row in rows {
            #expect(!row.contains(token) && !row.contains(revealed) && !row.contains(harness.key))
            #expect(!row.contains(harness.keyringText))
            #expect(!row.contains(harness.facebookApp.secret))
        }
    }

    /// Concurrent token reads share statements (and so commits), and each still gets its own answer and leaves
    /// exactly its own entry: its request id, its session; none for a read that hands nothing out.
    @Test func concurrentTokenReadsAreBatchedAndEachLeavesItsOwnEntry() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        var ids: [String] = []
        for owner in ["t-1", "t-2", "t-3", "t-closed"] {
            let (_, token) = try harness.userToken()
            ids.append(try #require(try await harness.login(owner: owner, token: token).json["id"] as? String))
        }
        let closed = ids.removeLast()
        #expect(try await harness.call("DELETE", "/v1/sessions/\(closed)").status == 200)
        let otherKey = try await PostgresAppStoreFactory.otherAppKey(harness)
        let entriesBefore = try await Self.rawRows(harness).count

        var requests: [(id: String, key: String, status: Int)] = []
        for round in 0..<30 {
            requests.append((ids[round % ids.count], harness.key, 200))
            if round % 5 == 0 {
                requests.append(("ses_unknownunknown\(1000 + round)", harness.key, 404))
                requests.append((closed, harness.key, 410))
                requests.append((ids[0], otherKey, 404))
            }
        }
        let before = harness.store.tokenReadStatistics
        var served: [String: String] = [:]  // request id -> session id, for every token handed out
        try await withThrowingTaskGroup(of: (Int, SessionHarness.Reply).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { (index, try await harness.call("GET", "/v1/sessions/\(request.id)/token", key: request.key)) }
            }
            for try await (index, reply) in group {
                let request = requests[index]
                #expect(reply.status == request.status, "\(request.id): \(reply.status)")
                if reply.status == 200 {
                    served[try #require(reply.header("X-Request-Id"))] = request.id
                }
            }
        }
        let after = harness.store.tokenReadStatistics
        #expect(after.reads - before.reads == requests.count)
        #expect(after.batches - before.batches < after.reads - before.reads, "the reads were not coalesced")

        let reads = try await Self.entries(harness) { entries in
            entries.filter { $0["action"] as? String == "token.read" }.count >= served.count
        }.filter { $0["action"] as? String == "token.read" }
        #expect(reads.count == served.count)
        for entry in reads {
            let requestID = try #require(entry["request_id"] as? String)
            #expect(served[requestID] != nil && Self.target(entry)["id"] as? String == served[requestID], "\(entry)")
        }
        #expect(Set(reads.compactMap { $0["request_id"] as? String }).count == served.count, "an entry twice")
        // Nothing for the other app either: the reads that found nothing wrote nothing anywhere.
        #expect(try await Self.rawRows(harness).count == entriesBefore + served.count)
    }

    @Test func tokenReadsLeaveNoEntryOnlyWhenTheBenchTurnsThemOff() async throws {
        let harness = try await SessionHarness { parts in parts.settings.auditTokenReads = false }
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        #expect(try await harness.call("GET", "/v1/sessions/\(id)/token").status == 200)
        #expect(try await Self.rawRows(harness).isEmpty)
    }

    @Test func aRevokingLogoutWritesSessionRevokedOnce() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, first) = try harness.userToken(name: "Ada One")
        let (_, second) = try harness.userToken(name: "Bob Two", email: "bob@example.com")
        let revoked = try #require(try await harness.login(owner: "o", token: first).json["id"] as? String)
        let plain = try #require(try await harness.login(owner: "p", token: second).json["id"] as? String)
        let logout = try await harness.call("DELETE", "/v1/sessions/\(revoked)?revoke=true")
        #expect(logout.status == 200 && logout.json["revocation"] as? String == "done")
        let requestID = try #require(logout.header("X-Request-Id"))
        // Again: nothing changes, nothing is written. A plain logout is no revocation.
        #expect(try await harness.call("DELETE", "/v1/sessions/\(revoked)?revoke=true").status == 200)
        #expect(try await harness.call("DELETE", "/v1/sessions/\(plain)").status == 200)

        let entries = try await Self.entries(harness) { !$0.isEmpty }
        #expect(entries.count == 1, "\(entries)")
        let entry = try #require(entries.first)
        #expect(entry["action"] as? String == "session.revoked")
        #expect(Self.target(entry) as? [String: String] == ["kind": "session", "id": revoked])
        #expect(Self.actor(entry)["id"] as? String == APIKeyText.id(in: harness.key))
        #expect(entry["request_id"] as? String == requestID)
        for row in try await Self.rawRows(harness) { #expect(!row.contains(first) && !row.contains(second)) }
    }

    @Test func pagesFollowCursorsWithinBoundsAndHostileQueriesAreRefused() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        for _ in 0..<5 { #expect(try await harness.call("GET", "/v1/sessions/\(id)/token").status == 200) }
        // One entry of no app (seen by every app's key), one of another app (seen by none of this app's).
        let log = PostgresAuditLog(database: Database(pool: harness.pool))
        try await log.append(
            AuditDraft(appID: nil, action: .keysReencrypted, actor: .cli(user: "ops"), target: ["kind": .string("keyring")]))
        try await log.append(
            AuditDraft(appID: "app_other", action: .keyAdded, actor: .cli(user: "ops"), target: ["kind": .string("key")]))

        let all = try await Self.entries(harness) { $0.count >= 6 }
        #expect(all.count == 6, "\(all)")
        #expect(all.filter { $0["action"] as? String == "token.read" }.count == 5)
        #expect(all.last?["action"] as? String == "keys.reencrypted")
        let ids = all.compactMap { ($0["id"] as? String).flatMap { Int($0) } }
        #expect(ids == ids.sorted() && Set(ids).count == 6, "oldest first, each once")

        // Pages of two: the same entries in the same order, none twice.
        var paged: [String] = []
        var cursor: String?
        var pages = 0
        while pages < 10 {
            let reply = try await harness.call("GET", "/v1/audit?limit=2" + (cursor.map { "&after=\($0)" } ?? ""))
            #expect(reply.status == 200 && reply.header("Cache-Control") == "no-store")
            let page = try #require(reply.json["entries"] as? [[String: Any]])
            #expect(page.count <= 2)
            if page.isEmpty { break }
            paged += page.compactMap { $0["id"] as? String }
            cursor = try #require(reply.json["next_cursor"] as? String)
            pages += 1
        }
        #expect(paged == all.compactMap { $0["id"] as? String } && pages == 3)
        let first = try await harness.call("GET", "/v1/audit")
        #expect((first.json["entries"] as? [Any])?.count == 6, "default limit 100")
        #expect((try await harness.call("GET", "/v1/audit?limit=1").json["entries"] as? [Any])?.count == 1)
        #expect(try await harness.call("GET", "/v1/audit?limit=500").status == 200)

        // Bad limits and cursors: 400 invalid_request naming the parameter, as the events feed answers.
        for limit in ["0", "501", "-1", "abc", "1.5", "10000", "00001", "1e2", "%201", "1%00", "+1", ""] {
            let reply = try await harness.call("GET", "/v1/audit?limit=\(limit)")
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "limit=\(limit): \(reply.text)")
            let error = reply.json["error"] as? [String: Any]
            #expect(error?["field"] as? String == "limit" && error?["message"] as? String == "limit must be an integer from 1 to 500.")
        }
        let eventCursor = EventCursor(transactionID: 1, eventID: 1).text
        for after in ["garbage", eventCursor, "", String(repeating: "A", count: 100), "AgAAAAAAAAL4gAAAAAAAATg", "%00"] {
            let reply = try await harness.call("GET", "/v1/audit?after=\(after)")
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "after=\(after): \(reply.text)")
            let error = reply.json["error"] as? [String: Any]
            #expect(error?["field"] as? String == "after", "\(reply.text)")
            #expect(!reply.text.contains(eventCursor) && !reply.text.contains("garbage"), "the text is not repeated")
        }

        // A key without the audit scope: 403, like every scope failure; no key: 401.
        let forbidden = try await harness.call("GET", "/v1/audit", key: harness.sessionsKey)
        #expect(forbidden.status == 403 && forbidden.errorCode == "forbidden" && forbidden.json["entries"] == nil)
        let anonymous = try await harness.call("GET", "/v1/audit", key: "")
        #expect(anonymous.status == 401 && anonymous.json["entries"] == nil)
        // A key of the default scopes has no audit scope.
        let defaultKey = SecretsTranscript.noted(
            "api key", try await harness.service.keys.addKey(appID: harness.app.id, scopes: Scope.defaults).text)
        #expect(try await harness.call("GET", "/v1/audit", key: defaultKey).status == 403)
    }

    @Test func theServiceRoleCanNeitherChangeNorDeleteAnEntry() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let log = PostgresAuditLog(database: Database(pool: harness.pool))
        try await log.append(
            AuditDraft(appID: harness.app.id, action: .appAdded, actor: .cli(user: "ops"), target: ["kind": .string("app")]))
        _ = try await harness.pool.execute(
            "INSERT INTO audit_log (at, app_id, action, actor, target) VALUES (now() - interval '400 days', NULL, 'key.added', '{\"kind\":\"cli\"}', '{\"kind\":\"key\"}')")
        let before = try await Self.rawRows(harness)
        #expect(before.count == 2)
        // The pool's role is the one the service runs as.
        for statement: PostgresQuery in [
            "UPDATE audit_log SET action = 'key.revoked'",
            "UPDATE audit_log SET at = now() - interval '10 years'",
            "DELETE FROM audit_log",
            "DELETE FROM audit_log WHERE at < now() - interval '1 day'",
            "TRUNCATE audit_log",
            "SELECT fbs_prune_audit(0)",
            "SELECT fbs_prune_audit(-5)",
        ] {
            await #expect(throws: PostgresError.self, "\(statement.sql)") { _ = try await harness.pool.execute(statement) }
        }
        // Setting the prune function's mark by hand: without a retention, with one under a day, and with one that the
        // fresh entry is within (the old one alone could go; the statement fails whole).
        let url = harness.databaseURL
        try await onThread {
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            for retention in [nil, "0", "-3", "x", "365"] as [String?] {
                _ = try connection.simpleQuery(unsafeSQL: "BEGIN")
                _ = try connection.simpleQuery(unsafeSQL: "SELECT set_config('fbs.audit_prune', 'on', true)")
                if let retention {
                    _ = try connection.simpleQuery(
                        unsafeSQL: "SELECT set_config('fbs.audit_retention_days', '\(retention)', true)")
                }
                #expect(throws: PostgresError.self, "retention \(retention ?? "unset")") {
                    try connection.simpleQuery(unsafeSQL: "DELETE FROM audit_log")
                }
                _ = try connection.simpleQuery(unsafeSQL: "ROLLBACK")
            }
        }
        #expect(try await Self.rawRows(harness) == before, "nothing changed")
        let refused = await #expect(throws: PostgresError.self) { _ = try await harness.pool.execute("DELETE FROM audit_log") }
        #expect(refused?.sqlState == "42501", "insufficient_privilege")
    }

    @Test func pruningDeletesOnlyEntriesPastRetention() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        for days in [800, 366, 364, 10, 0] {
            _ = try await harness.pool.execute(
                "INSERT INTO audit_log (at, action, actor, target) VALUES (now() - make_interval(days => \(days)::integer) - interval '1 minute', 'key.added', '{\"kind\":\"cli\"}', jsonb_build_object('kind', 'key', 'age', \(days)::integer))")
        }
        func ages() async throws -> [Int] {
            try await harness.rows("SELECT (target->>'age')::int AS age FROM audit_log ORDER BY id").map { try $0.decode("age", as: Int.self) }
        }
        let log = PostgresAuditLog(database: Database(pool: harness.pool))
        #expect(try await log.prune(retentionDays: 365) == 2)
        #expect(try await ages() == [364, 10, 0])
        #expect(try await log.prune(retentionDays: 365) == 0)
        // The sweep prunes with FBS_AUDIT_RETENTION's days.
        var policy = SweepTests.fastPolicy()
        policy.auditRetentionDays = 30
        let report = try await Sweeper(service: harness.sessions, store: harness.store, policy: policy).pass()
        #expect(report.auditEntriesPruned == 1)
        #expect(try await ages() == [10, 0])
        #expect(try await log.prune(retentionDays: 1) == 1)
        #expect(try await ages() == [0], "an entry less than a day old is never deleted")
        await #expect(throws: PostgresError.self) { _ = try await log.prune(retentionDays: 0) }
        // The mark does not outlive the prune: a DELETE after it, in the same session, is refused again.
        await #expect(throws: PostgresError.self) { _ = try await harness.pool.execute("DELETE FROM audit_log") }
        #expect(try await ages() == [0])
    }
}
