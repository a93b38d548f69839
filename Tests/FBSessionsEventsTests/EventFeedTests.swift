import FBSessionsCore
import Foundation
import Postgres
import TestSupport
import Testing

@testable import FBSessionsStorage

extension DatabaseTests {
    /// `GET /v1/events` against a real database: shape, order, paging, late commits, isolation, bad input.
    ///
    /// Serialized: the late-commit test holds a transaction open, which (by design) holds back every feed on the
    /// server, including other tests' in this suite.
    @Suite struct EventFeedTests {
        @Test func eventsOfATransactionAppearInOrderWithTheContractShape() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let empty = try #require(await harness.page("/v1/events"))
            #expect(empty.events.isEmpty && empty.nextCursor == EventCursor.start.text)
            try await harness.write([
                SessionEvent(
                    .sessionClosed, sessionID: "ses_old", owner: "a/b@c", data: ["reason": .string("replaced")]),
                SessionEvent(.sessionOpened, sessionID: "ses_new", owner: "a/b@c"),
                SessionEvent(
                    .tokenChanged, sessionID: "ses_new", owner: "a/b@c",
                    data: ["user_changed": .bool(true), "previous_session_id": .string("ses_old")]),
            ])
            try await harness.write([
                SessionEvent(
                    .profileChanged, sessionID: "ses_new", owner: "a/b@c", data: ["fields": .strings(["name"])])
            ])
            _ = try await harness.page("/v1/events", atLeast: 4)
            let response = await harness.get("/v1/events")
            #expect(response.status == 200 && response.headers["Content-Type"] == "application/json")
            let page = try #require(FeedPage(response))
            #expect(
                page.events.map { $0["type"] as? String } == [
                    "session.closed", "session.opened", "token.changed", "profile.changed",
                ])
            let ids = page.ids.compactMap { Int64($0) }
            #expect(ids.count == 4 && ids == ids.sorted())
            for event in page.events {
                #expect(Set(event.keys) == ["id", "type", "session_id", "owner", "at", "data"])
                #expect(event["owner"] as? String == "a/b@c")
                let at = try #require(event["at"] as? String)
                #expect(at.wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/#) != nil)
            }
            #expect((page.events[0]["data"] as? [String: Any])?["reason"] as? String == "replaced")
            let token = try #require(page.events[2]["data"] as? [String: Any])
            #expect(token["user_changed"] as? Bool == true && token["previous_session_id"] as? String == "ses_old")
            #expect((page.events[3]["data"] as? [String: Any])?["fields"] as? [String] == ["name"])
            // The cursor resumes after the last event; polling with it again gives nothing and keeps it.
            let next = try #require(await harness.page("/v1/events?after=\(page.nextCursor)"))
            #expect(next.events.isEmpty && next.nextCursor == page.nextCursor)
        }

        @Test func pagingByCursorReturnsEachEventExactlyOnce() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            for batch in 0..<5 {
                try await harness.write(EventHarness.opened(batch + 2, prefix: "ses_b\(batch)_"))
            }
            let all = try #require(try await harness.page("/v1/events?limit=500", atLeast: 20))
            #expect(all.events.count == 20)
            var seen: [String] = []
            var cursor: String?
            for _ in 0..<10 {
                let target = "/v1/events?limit=7" + (cursor.map { "&after=\($0)" } ?? "")
                let page = try #require(await harness.page(target))
                if page.events.isEmpty {
                    #expect(page.nextCursor == cursor)
                    break
                }
                #expect(page.events.count <= 7)
                seen += page.ids
                cursor = page.nextCursor
            }
            #expect(seen == all.ids)
            #expect(Set(seen).count == 20)
        }

        @Test func aCursorNeverSkipsAnEventCommittedLate() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            try await harness.write([SessionEvent(.sessionOpened, sessionID: "ses_first", owner: "o")])
            let before = try #require(try await harness.page("/v1/events", atLeast: 1))
            #expect(before.sessionIDs == ["ses_first"])
            let appID = harness.app.id
            let url = harness.databaseURL
            let held = try HeldConnection(url)
            defer { held.connection.close() }
            // A begins and writes first, so its transaction id is lower; B writes and commits while A is open.
            try await onThread {
                let late = held.connection
                try late.simpleQuery(unsafeSQL: "BEGIN")
                try EventWriter.write(
                    [SessionEvent(.sessionOpened, sessionID: "ses_a", owner: "o")], appID: appID, on: late)
                let other = try PostgresConnection(connectionString: url)
                defer { other.close() }
                try other.transaction { connection in
                    try EventWriter.write(
                        [SessionEvent(.sessionOpened, sessionID: "ses_b", owner: "o")], appID: appID, on: connection)
                }
            }
            let blocked = try #require(await harness.page("/v1/events?after=\(before.nextCursor)"))
            #expect(blocked.events.isEmpty, "B must stay invisible while the older transaction A is open")
            #expect(blocked.nextCursor == before.nextCursor)
            let cursor = try EventCursor(parsing: before.nextCursor)
            let pending = try await harness.store.events(appID: appID, after: cursor, limit: 10)
            #expect(pending.events.isEmpty && pending.hasPendingEvents)
            _ = try await onThread { try held.connection.simpleQuery(unsafeSQL: "COMMIT") }
            let after = try await harness.page("/v1/events?after=\(before.nextCursor)", atLeast: 2)
            #expect(after?.sessionIDs == ["ses_a", "ses_b"])
        }

        @Test func eachAppSeesOnlyItsOwnEvents() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            try await harness.write(EventHarness.opened(3, owner: "shop-user", prefix: "ses_shop"))
            try await harness.write(
                EventHarness.opened(2, owner: "blog-user", prefix: "ses_blog"), appID: harness.otherApp.id)
            try await harness.write(EventHarness.opened(1, owner: "shop-user", prefix: "ses_shop_late"))
            let shop = try #require(try await harness.page("/v1/events", atLeast: 4))
            let blog = try #require(try await harness.page("/v1/events", key: harness.otherKey, atLeast: 2))
            #expect(shop.events.count == 4 && shop.events.allSatisfy { $0["owner"] as? String == "shop-user" })
            #expect(blog.events.count == 2 && blog.events.allSatisfy { $0["owner"] as? String == "blog-user" })
            // A cursor from one app's feed, used by another app, still shows only the caller's events.
            let crossed = try #require(await harness.page("/v1/events?after=\(shop.nextCursor)", key: harness.otherKey))
            #expect(crossed.events.allSatisfy { $0["owner"] as? String == "blog-user" })
        }

        @Test func badQueriesAre400NamingTheField() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let cases: [(String, String)] = [
                ("after=garbage!", "after"), ("after=AAAA", "after"), ("after=", "after"),
                ("after=" + String(repeating: "A", count: 200), "after"),
                ("after=" + EventCursor.start.text.dropLast() + "B", "after"),
                ("wait=31", "wait"), ("wait=-1", "wait"), ("wait=abc", "wait"), ("wait=4e1", "wait"), ("wait=", "wait"),
                ("wait=nan", "wait"), ("wait=inf", "wait"), ("wait=0x1p1", "wait"), ("wait=1e999", "wait"), ("limit=0", "limit"), ("limit=501", "limit"), ("limit=x", "limit"),
                ("limit=-5", "limit"), ("limit=1.5", "limit"),
            ]
            for (query, field) in cases {
                let response = await harness.get("/v1/events?\(query)")
                let error = errorOf(response)
                #expect(response.status == 400 && error.code == "invalid_request" && error.field == field, "\(query)")
            }
            #expect(await harness.get("/v1/events?wait=0.25&limit=500").status == 200)
            // Any JSON number in range, as a generator of the spec's `number` would write it.
            #expect(await harness.get("/v1/events?wait=0.016612070063314&limit=1").status == 200)
            #expect(await harness.get("/v1/events?wait=2.5e-3").status == 200)
            #expect(await harness.get("/v1/events", key: harness.sessionsKey).status == 403)
            #expect(await harness.get("/v1/events", key: "fbs_k00000000000_nope").status == 401)
        }
    }
}
