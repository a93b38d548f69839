import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import Postgres
import Testing
import TestSupport

/// Issue 39, "Events before users notice": `session.action_required` once per change of `action_required` to a
/// non-null value, and `session.expiring` once per deadline, from the sweep or a read, never twice across sweeps,
/// instances or restarts, armed again by a moved deadline, never for Limited Login. Against the emulator over HTTP
/// and a real database.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct EventsBeforeUsersNoticeTests {
    /// A sweep that claims nothing for validation here (sessions were validated and extended at login, and no
    /// deadline is within a minute): what it does is only the expiry warnings.
    static func warningsOnlyPolicy() -> Sweeper.Policy {
        var policy = Sweeper.Policy()
        policy.sessionsPerSecond = 1000
        policy.maxAge = 86_400
        policy.expiryMargin = 60
        return policy
    }

    /// The events of one type, oldest first: the session and `data`.
    static func events(_ harness: SessionHarness, _ type: String) async throws -> [(session: String, data: [String: Any])] {
        let rows = try await harness.rows(
            "SELECT session_id, data::text AS data FROM events WHERE type = \(type) ORDER BY id")
        var found: [(session: String, data: [String: Any])] = []
        for row in rows {
            let text = try row.decode("data", as: String.self)
            let data = (try JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
            found.append((session: try row.decode("session_id", as: String.self), data: data))
        }
        return found
    }

    static func token(_ session: [String: Any]) -> [String: Any] {
        session["token"] as? [String: Any] ?? [:]
    }

    // MARK: session.action_required

    @Test func actionRequiredIsWrittenOncePerChangeWithItsReason() async throws {
        let harness = try await SessionHarness(requiredPermissions: ["email"])
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        #expect(try await Self.events(harness, "session.action_required").isEmpty)
        // Nothing needed: validations write no such event.
        _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=always")
        #expect(try await Self.events(harness, "session.action_required").isEmpty)

        // The person removes a required permission at Facebook: the next validation asks for rerequest, once.
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        let revoke = try await harness.client.execute(
            ClientRequest(
                method: "DELETE", url: harness.emulator.graphURL("me/permissions/email"),
                headers: [("Authorization", "Bearer " + stored)], body: nil))
        #expect(revoke.status == 200)
        let rerequest = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect(rerequest["action_required"] as? String == "rerequest")
        var written = try await Self.events(harness, "session.action_required")
        #expect(written.count == 1)
        #expect(written.first?.session == id)
        #expect(written.first?.data["action_required"] as? String == "rerequest")
        #expect(written.first?.data["reason"] as? String == "permission_declined")
        // Unchanged: no second event, however often it is validated.
        for _ in 0..<3 {
            _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=always")
        }
        #expect(try await Self.events(harness, "session.action_required").count == 1)

        // Another non-null value: data access expires, and the change is written again with its own reason.
        try harness.emulator.invalidateToken(stored, reason: .dataAccessExpired)
        let reauthorize = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect(reauthorize["action_required"] as? String == "reauthorize")
        _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=always")
        written = try await Self.events(harness, "session.action_required")
        #expect(written.count == 2)
        #expect(written.last?.data["action_required"] as? String == "reauthorize")
        #expect(written.last?.data["reason"] as? String == "data_access_expired")

        // Through the feed like every event, in the order written.
        let feed = try await harness.call("GET", "/v1/events?limit=500").json["events"] as? [[String: Any]] ?? []
        let seen = feed.filter { $0["type"] as? String == "session.action_required" }
        #expect(seen.count == 2 && seen.allSatisfy { $0["session_id"] as? String == id && $0["owner"] as? String == "o" })
        #expect(seen.compactMap { ($0["data"] as? [String: Any])?["reason"] as? String } == [
            "permission_declined", "data_access_expired",
        ])
    }

    @Test func aLoginThatNeedsARerequestSaysSoOnce() async throws {
        let harness = try await SessionHarness(requiredPermissions: ["email"])
        defer { harness.stop() }
        let (user, token) = try harness.userToken(granted: ["public_profile"], declined: ["email"])
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        var written = try await Self.events(harness, "session.action_required")
        #expect(written.count == 1 && written.first?.session == id)
        #expect(written.first?.data["reason"] as? String == "permission_declined")
        // The same person logs in again, still without it: the value did not change, so no event.
        let again = try harness.emulator.issueToken(
            appID: harness.facebookApp.id, userID: user.id, granted: ["public_profile"], declined: ["email"])
        #expect(try await harness.login(owner: "o", token: again.accessToken).status == 200)
        written = try await Self.events(harness, "session.action_required")
        #expect(written.count == 1)
        // A login that grants it clears the action with no event; declining it again is a new change.
        let granted = try harness.emulator.issueToken(
            appID: harness.facebookApp.id, userID: user.id, granted: ["public_profile", "email"])
        #expect(try await harness.login(owner: "o", token: granted.accessToken).json["action_required"] is NSNull)
        #expect(try await Self.events(harness, "session.action_required").count == 1)
        let declined = try harness.emulator.issueToken(
            appID: harness.facebookApp.id, userID: user.id, granted: ["public_profile"], declined: ["email"])
        #expect(try await harness.login(owner: "o", token: declined.accessToken).status == 200)
        #expect(try await Self.events(harness, "session.action_required").count == 2)
    }

    @Test func theReasonNamesWhyARequiredPermissionIsNotGranted() async throws {
        let harness = try await SessionHarness(requiredPermissions: ["email"])
        defer { harness.stop() }
        let missing = try harness.emulator.createUser(firstName: "Mia", lastName: "M", name: "Mia M", email: nil)
        let expired = try harness.emulator.createUser(firstName: "Eli", lastName: "E", name: "Eli E", email: nil)
        let missingToken = try harness.emulator.issueToken(
            appID: harness.facebookApp.id, userID: missing.id, granted: ["public_profile"])
        let expiredToken = try harness.emulator.issueToken(
            appID: harness.facebookApp.id, userID: expired.id, granted: ["public_profile"], expired: ["email"])
        let missingID = try #require(try await harness.login(owner: "m", token: missingToken.accessToken).json["id"] as? String)
        let expiredID = try #require(try await harness.login(owner: "e", token: expiredToken.accessToken).json["id"] as? String)
        let written = try await Self.events(harness, "session.action_required")
        #expect(written.count == 2)
        let reasons = Dictionary(written.map { ($0.session, $0.data["reason"] as? String ?? "?") }) { first, _ in first }
        #expect(reasons[missingID] == "permission_missing")
        #expect(reasons[expiredID] == "permission_expired")
        #expect(written.allSatisfy { $0.data["action_required"] as? String == "rerequest" })
    }

    // MARK: session.expiring

    @Test func theSweepWarnsOncePerDeadlineAndAMovedDeadlineRearms() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let id = try #require(try await harness.login(owner: "o", token: try harness.userToken(name: "Ann A").token).json["id"] as? String)
        let untouched = try #require(try await harness.login(owner: "p", token: try harness.userToken(name: "Bob B").token).json["id"] as? String)
        _ = try await harness.rows(
            "UPDATE sessions SET token_expires_at = now() + interval '3 days' WHERE id = \(id)")
        let sweeper = Sweeper(service: harness.sessions, store: harness.store, policy: Self.warningsOnlyPolicy())
        #expect(try await sweeper.pass().expiring == 1)
        #expect(try await sweeper.pass().expiring == 0)
        var warned = try await Self.events(harness, "session.expiring")
        #expect(warned.count == 1 && warned.first?.session == id)
        #expect(warned.first?.data["field"] as? String == "expires_at")
        let shown = try await harness.call("GET", "/v1/sessions/\(id)?validate=never").json
        #expect(warned.first?.data["at"] as? String == Self.token(shown)["expires_at"] as? String)
        #expect((warned.first?.data["at"] as? String) != nil)
        // A restart (a new store over the same database) finds it warned too.
        let restarted = PostgresSessionStore(database: Database(pool: harness.pool), keyring: harness.keyring)
        #expect(try await Sweeper(service: harness.sessions, store: restarted, policy: Self.warningsOnlyPolicy()).pass().expiring == 0)

        // A re-extension that moves the deadline (still within the window) arms it again, once.
        _ = try await harness.rows(
            "UPDATE sessions SET token_expires_at = token_expires_at + interval '1 day' WHERE id = \(id)")
        #expect(try await sweeper.pass().expiring == 1)
        #expect(try await sweeper.pass().expiring == 0)
        // Data access has its own deadline and its own warning.
        _ = try await harness.rows(
            "UPDATE sessions SET data_access_expires_at = now() + interval '5 days' WHERE id = \(id)")
        #expect(try await sweeper.pass().expiring == 1)
        warned = try await Self.events(harness, "session.expiring")
        #expect(warned.map { $0.data["field"] as? String ?? "?" } == ["expires_at", "expires_at", "data_access_expires_at"])
        #expect(warned.allSatisfy { $0.session == id })
        let reread = try await harness.call("GET", "/v1/sessions/\(id)?validate=never").json
        #expect(warned.last?.data["at"] as? String == Self.token(reread)["data_access_expires_at"] as? String)
        #expect(warned[1].data["at"] as? String == Self.token(reread)["expires_at"] as? String)

        // A deadline already past, or beyond the window, is not warned; nor is a closed session.
        _ = try await harness.rows(
            "UPDATE sessions SET token_expires_at = now() - interval '1 hour' WHERE id = \(untouched)")
        #expect(try await sweeper.pass().expiring == 0)
        _ = try await harness.call("DELETE", "/v1/sessions/\(untouched)")
        _ = try await harness.rows(
            "UPDATE sessions SET token_expires_at = now() + interval '1 day' WHERE id = \(untouched)")
        #expect(try await sweeper.pass().expiring == 0)
        #expect(try await Self.events(harness, "session.expiring").count == 3)
    }

    @Test func aPassDoesNotWarnOfATokenItJustExtended() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let id = try #require(try await harness.login(owner: "o", token: try harness.userToken().token).json["id"] as? String)
        _ = try await harness.rows("UPDATE sessions SET token_expires_at = now() + interval '1 day' WHERE id = \(id)")
        var policy = Sweeper.Policy()
        policy.sessionsPerSecond = 1000
        let report = try await Sweeper(service: harness.sessions, store: harness.store, policy: policy).pass()
        #expect(report.extended == 1 && report.expiring == 0)
        #expect(try await Self.events(harness, "session.expiring").isEmpty)
    }

    @Test func aReadThatNoticesADeadlineWarnsOnce() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let id = try #require(try await harness.login(owner: "o", token: try harness.userToken().token).json["id"] as? String)
        _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
        _ = try await harness.rows(
            "UPDATE sessions SET data_access_expires_at = now() + interval '2 days' WHERE id = \(id)")
        let first = try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
        #expect(first.status == 200)
        var warned = try await Self.events(harness, "session.expiring")
        #expect(warned.count == 1 && warned.first?.session == id)
        #expect(warned.first?.data["field"] as? String == "data_access_expires_at")
        #expect(warned.first?.data["at"] as? String == Self.token(first.json)["data_access_expires_at"] as? String)
        for _ in 0..<3 {
            _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
        }
        #expect(try await Self.events(harness, "session.expiring").count == 1)
        // An owner's list is a read too.
        _ = try await harness.rows(
            "UPDATE sessions SET token_expires_at = now() + interval '2 days' WHERE id = \(id)")
        #expect(try await harness.call("GET", "/v1/owners/o/sessions").status == 200)
        warned = try await Self.events(harness, "session.expiring")
        #expect(warned.map { $0.data["field"] as? String ?? "?" } == ["data_access_expires_at", "expires_at"])
        // The sweep finds nothing left.
        #expect(try await Sweeper(service: harness.sessions, store: harness.store, policy: Self.warningsOnlyPolicy()).pass().expiring == 0)
        // Through the feed like every event.
        let feed = try await harness.call("GET", "/v1/events?limit=500").json["events"] as? [[String: Any]] ?? []
        #expect(feed.filter { $0["type"] as? String == "session.expiring" }.count == 2)
    }

    @Test func twoInstancesSweepingAndReadingAtOnceWarnOncePerDeadline() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let second = try await SecondInstance(harness)
        defer { second.stop() }
        var ids: [String] = []
        for index in 0..<12 {
            let token = try harness.userToken(name: "U \(index)").token
            ids.append(try #require(try await harness.login(owner: "o\(index)", token: token).json["id"] as? String))
        }
        _ = try await harness.rows(
            """
            UPDATE sessions SET token_expires_at = now() + interval '2 days',
                data_access_expires_at = now() + interval '3 days'
            """)
        var policy = Self.warningsOnlyPolicy()
        policy.batchSize = 3
        let sweepers = [
            Sweeper(service: harness.sessions, store: harness.store, policy: policy),
            Sweeper(service: second.service.sessions, store: second.store, policy: policy),
        ]
        let written = try await withThrowingTaskGroup(of: Int.self) { group in
            for sweeper in sweepers {
                group.addTask { try await sweeper.pass().expiring }
            }
            for (index, id) in ids.enumerated() {
                group.addTask {
                    let reply = index % 2 == 0
                        ? try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
                        : try await second.call("GET", "/v1/sessions/\(id)?validate=never")
                    return reply.status == 200 ? 0 : -1000
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(written >= 0 && written <= 24)
        // Whatever was left to the reads or skipped while locked, a last pass on either instance completes it.
        _ = try await sweepers[1].pass()
        _ = try await sweepers[0].pass()
        let counts = try await harness.rows(
            """
            SELECT session_id, data->>'field' AS field, count(*)::int AS n FROM events
            WHERE type = 'session.expiring' GROUP BY session_id, data->>'field'
            """)
        #expect(counts.count == 24)
        #expect(try counts.allSatisfy { try $0.decode("n", as: Int.self) == 1 })
        #expect(Set(try counts.map { try $0.decode("session_id", as: String.self) }) == Set(ids))
    }

    @Test func limitedLoginSessionsAreNeverWarned() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        // A Limited Login token lives an hour: well within the window, and never warned, even with a data-access date.
        let (_, limited) = try await harness.loggedIn(owner: "o")
        let limitedID = try #require(limited["id"] as? String)
        _ = try await harness.base.rows(
            "UPDATE sessions SET data_access_expires_at = now() + interval '1 day' WHERE id = \(limitedID)")
        // A standard session with the same deadlines is warned (so the test would see a warning if one were written).
        let standardID = try #require(
            try await harness.base.login(owner: "p", token: try harness.base.userToken(name: "Sam S").token).json["id"]
                as? String)
        _ = try await harness.base.rows(
            """
            UPDATE sessions s SET token_expires_at = l.token_expires_at, data_access_expires_at = l.data_access_expires_at
            FROM sessions l WHERE s.id = \(standardID) AND l.id = \(limitedID)
            """)
        #expect(try await harness.call("GET", "/v1/sessions/\(limitedID)").status == 200)
        #expect(try await harness.call("GET", "/v1/owners/o/sessions").status == 200)
        let report = try await Sweeper(service: harness.sessions, store: harness.base.store, policy: Self.warningsOnlyPolicy()).pass()
        #expect(report.expiring == 2)
        let warned = try await Self.events(harness.base, "session.expiring")
        #expect(warned.count == 2 && warned.allSatisfy { $0.session == standardID })
    }
}
