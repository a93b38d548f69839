import FBSessionsCore
import Foundation
import GraphEmulator
import Postgres
import Testing
import TestSupport

/// `GET /v1/sessions/{id}/picture` end to end: bytes through the cache, 304s, single flight, stale-on-error,
/// the JSON description, input bounds and erasure at logout.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct PictureTests {
    @Test(arguments: [true, false]) func servesTheEmulatorsBytesAndASecondRequestStaysInTheCache(memory: Bool)
        async throws
    {
        let harness = try await PictureHarness(.init(memory: memory))
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let first = try await harness.picture(session, "type=large")
        #expect(first.status == 200)
        #expect(first.header("Content-Type") == "image/png" && first.header("X-Content-Type-Options") == "nosniff")
        #expect(first.header("Cache-Control") == "private, max-age=3600" && first.header("Age") == "0")
        let etag = try #require(first.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.count == 34)
        #expect(harness.emulator.callCount(.picture) == 1 && harness.emulator.callCount(.cdn) == 1)

        let second = try await harness.picture(session, "type=large")
        #expect(second.status == 200 && second.body == first.body && second.header("ETag") == etag)
        #expect(harness.emulator.callCount(.picture) == 1 && harness.emulator.callCount(.cdn) == 1)
        #expect(second.header("Warning") == nil)

        // The same bytes the emulator's CDN serves for that URL.
        let description = try await harness.picture(session, "type=large&redirect=false")
        let url = try #require(description.json["url"] as? String)
        #expect(try await harness.cdnBytes(url) == first.body)
        #expect(Array(first.body.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])

        // Another size is another cache entry.
        let small = try await harness.picture(session, "width=64&height=64")
        #expect(small.status == 200 && small.body != first.body && harness.emulator.callCount(.picture) == 2)
        let stored = try await harness.rows("SELECT size_key FROM picture_cache ORDER BY size_key")
        #expect(try stored.map { try $0.decode("size_key", as: String.self) } == ["type=large", "w=64,h=64"])
    }

    @Test func ifNoneMatchGivesA304WithoutGraphOrTheCDN() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let first = try await harness.picture(session)
        let etag = try #require(first.header("ETag"))
        harness.emulator.resetCounters()
        for condition in [etag, "W/" + etag, "\"other\", " + etag, "*"] {
            let again = try await harness.picture(session, ifNoneMatch: condition)
            #expect(again.status == 304 && again.body.isEmpty, "\(condition)")
            #expect(again.header("ETag") == etag && again.header("Cache-Control") == "private, max-age=3600")
        }
        #expect(harness.emulator.callCounts.values.reduce(0, +) == 0)
        let changed = try await harness.picture(session, ifNoneMatch: "\"something-else\"")
        #expect(changed.status == 200 && changed.body == first.body)
        #expect(harness.emulator.callCounts.values.reduce(0, +) == 0)
        let metrics = harness.service.metrics.render().split(separator: "\n")
        let counted = ["miss", "not_modified", "hit"].map { outcome in
            metrics.first { $0.hasPrefix(#"fbs_picture_requests_total{outcome="\#(outcome)"} "#) }?.split(separator: " ").last
        }
        #expect(counted == ["1", "4", "1"], "each answer counted once, by its outcome")
    }

    @Test func fiftyConcurrentMissesMakeOneGraphCallAndOneFetch() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        harness.emulator.setLatency(.milliseconds(150), for: .picture)
        let replies = try await withThrowingTaskGroup(of: PictureHarness.Reply.self) { group in
            for _ in 0..<50 { group.addTask { try await harness.picture(session, "type=normal") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.count == 50 && replies.allSatisfy { $0.status == 200 })
        #expect(Set(replies.map(\.body)).count == 1)
        #expect(harness.emulator.callCount(.picture) == 1 && harness.emulator.callCount(.cdn) == 1)
    }

    @Test func twoInstancesShareOneFillThroughTheDatabaseLease() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        harness.emulator.setLatency(.milliseconds(150), for: .picture)
        let instances = [harness.pictures, harness.secondInstance()]
        let app = harness.app
        let etags = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                let service = instances[index % 2]
                group.addTask {
                    try await service.picture(sessionID: session, app: app, size: .default, ifNoneMatch: nil).picture.etag
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(etags.count == 1)
        #expect(harness.emulator.callCount(.picture) == 1 && harness.emulator.callCount(.cdn) == 1)
        let leases = try await harness.rows("SELECT count(*) AS n FROM picture_cache WHERE fill_token IS NOT NULL")
        #expect(try leases.first?.decode("n", as: Int.self) == 0)
    }

    @Test func aStalePictureIsServedWithWarningAndAgeWhileGraphOrTheCDNIsDown() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let first = try await harness.picture(session)
        let etag = try #require(first.header("ETag"))
        _ = try await harness.rows(
            "UPDATE picture_cache SET fetched_at = now() - interval '2 hours', fresh_until = now() - interval '1 hour'")

        harness.emulator.injectFault(.httpStatus(500), endpoint: .picture, count: 10)
        let graphDown = try await harness.picture(session)
        #expect(graphDown.status == 200 && graphDown.body == first.body && graphDown.header("ETag") == etag)
        #expect(graphDown.header("Warning")?.hasPrefix("110 ") == true)
        #expect((Int(graphDown.header("Age") ?? "") ?? 0) >= 7200)
        let conditional = try await harness.picture(session, ifNoneMatch: etag)
        #expect(conditional.status == 304 && conditional.header("Warning") != nil)

        harness.emulator.clearFaults()
        harness.emulator.injectFault(.httpStatus(500), endpoint: .cdn, count: 10)
        let cdnDown = try await harness.picture(session)
        #expect(cdnDown.status == 200 && cdnDown.body == first.body && cdnDown.header("Warning") != nil)
        let description = try await harness.picture(session, "redirect=false")
        #expect(description.status == 200 && description.header("Warning") != nil)

        harness.emulator.clearFaults()
        let recovered = try await harness.picture(session)
        #expect(recovered.status == 200 && recovered.header("Warning") == nil && recovered.header("Age") == "0")
    }

    @Test func nothingCachedAndFacebookDownIs503() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        harness.emulator.injectFault(.httpStatus(500), endpoint: .picture, count: 10)
        let graphDown = try await harness.picture(session)
        #expect(graphDown.status == 503 && graphDown.errorCode == "graph_unavailable")
        #expect(graphDown.header("Retry-After") != nil)

        harness.emulator.clearFaults()
        harness.emulator.injectFault(.httpStatus(500), endpoint: .cdn, count: 10)
        let cdnDown = try await harness.picture(session)
        #expect(cdnDown.status == 503 && cdnDown.errorCode == "picture_unavailable")
        #expect(cdnDown.header("Retry-After") != nil)
        let rows = try await harness.rows("SELECT count(*) AS n FROM picture_cache")
        #expect(try rows.first?.decode("n", as: Int.self) == 0)
    }

    @Test func redirectFalseDescribesThePictureAsJSON() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let reply = try await harness.picture(session, "type=large&redirect=false")
        #expect(reply.status == 200 && reply.header("Content-Type") == "application/json")
        #expect(Set(reply.json.keys) == ["url", "width", "height", "is_silhouette"])
        #expect(reply.json["width"] as? Int == 200 && reply.json["height"] as? Int == 200)
        #expect(reply.json["is_silhouette"] as? Bool == false)
        #expect((reply.json["url"] as? String)?.hasPrefix("http://127.0.0.1:\(harness.emulatorServer.port)/") == true)
        #expect(reply.header("Cache-Control") == "private, max-age=3600")
        let again = try await harness.picture(session, "type=large&redirect=0")
        #expect(again.json["url"] as? String == reply.json["url"] as? String)
        #expect(harness.emulator.callCount(.picture) == 1)

        let (_, faceless) = try await harness.loggedIn(owner: "owner-2", hasPicture: false)
        let silhouette = try await harness.picture(faceless, "redirect=false")
        #expect(silhouette.json["is_silhouette"] as? Bool == true)
    }

    /// `GET .../picture/description`: the same JSON as `redirect=false`, from the same cache entry, with one
    /// answer type for generated clients; sizes are checked as on the bytes path.
    @Test func theDescriptionHasAPathOfItsOwn() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let bytes = try await harness.picture(session, "type=large")
        #expect(bytes.status == 200 && bytes.header("Content-Type") == "image/png")
        let reply = try await harness.call("GET", "/v1/sessions/\(session)/picture/description?type=large")
        #expect(reply.status == 200 && reply.header("Content-Type") == "application/json")
        #expect(Set(reply.json.keys) == ["url", "width", "height", "is_silhouette"])
        #expect(reply.json["width"] as? Int == 200 && reply.json["is_silhouette"] as? Bool == false)
        #expect(reply.header("Cache-Control") == "private, max-age=3600" && reply.header("Age") != nil)
        let legacy = try await harness.picture(session, "type=large&redirect=false")
        #expect(legacy.json["url"] as? String == reply.json["url"] as? String)
        #expect(harness.emulator.callCount(.picture) == 1 && harness.emulator.callCount(.cdn) == 1)
        let url = try #require(reply.json["url"] as? String)
        #expect(try await harness.cdnBytes(url) == bytes.body)

        let bad = try await harness.call("GET", "/v1/sessions/\(session)/picture/description?width=0")
        #expect(bad.status == 400 && (bad.json["error"] as? [String: Any])?["field"] as? String == "width")
        for id in ["nope", "ses_", "0", "ses_not-a-real-session-id-000"] {
            let missing = try await harness.call("GET", "/v1/sessions/\(id)/picture/description")
            #expect(missing.status == 404 && missing.errorCode == "session_not_found", "\(id)")
        }
        #expect(try await harness.call("DELETE", "/v1/sessions/\(session)").status == 200)
        let closed = try await harness.call("GET", "/v1/sessions/\(session)/picture/description")
        #expect(closed.status == 410 && closed.errorCode == "session_closed")
    }

    @Test func sizesTypesAndFlagsAreChecked() async throws {
        var options = PictureHarness.Options()
        // The largest size makes the emulator draw a 2048-pixel PNG: under AddressSanitizer on a loaded machine that
        // can take longer than the default 3 s fetch timeout, which this test is not about.
        options.fetchTimeout = 15
        let harness = try await PictureHarness(options)
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let bad = [
            ("width=0", "width"), ("width=2049", "width"), ("height=-1", "height"), ("height=abc", "height"),
            ("width=", "width"), ("width=+12", "width"), ("type=huge", "type"), ("type=", "type"),
            ("redirect=maybe", "redirect"),
        ]
        for (query, field) in bad {
            let reply = try await harness.picture(session, query)
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(query)")
            #expect((reply.json["error"] as? [String: Any])?["field"] as? String == field, "\(query)")
        }
        #expect(harness.emulator.callCounts.values.reduce(0, +) == 0)
        for query in ["width=1", "height=2048", "type=square", "type=album&width=30", "type=small"] {
            let reply = try await harness.picture(session, query)
            #expect(reply.status == 200, "\(query): \(reply.status) \(reply.text)")
        }
        #expect(try await harness.picture("ses_not-a-real-session-id-000").errorCode == "session_not_found")
        // A path id that cannot be a session id names no session: 404, as an unknown one.
        for id in ["nope", "ses_", "0"] {
            let missing = try await harness.picture(id)
            #expect(missing.status == 404 && missing.errorCode == "session_not_found", "\(id)")
        }
    }

    @Test func logoutErasesTheUsersPicturesAndClosedSessionsAnswer410() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (user, session) = try await harness.loggedIn()
        let (other, otherSession) = try await harness.loggedIn(owner: "owner-2")
        for query in ["", "type=large", "width=80"] {
            #expect(try await harness.picture(session, query).status == 200)
        }
        #expect(try await harness.picture(otherSession).status == 200)
        func count(_ userID: String) async throws -> Int {
            try await harness.rows("SELECT count(*) AS n FROM picture_cache WHERE facebook_user_id = \(userID)")
                .first?.decode("n", as: Int.self) ?? -1
        }
        #expect(try await count(user.id) == 3)
        #expect(try await count(other.id) == 1)

        #expect(try await harness.call("DELETE", "/v1/sessions/\(session)").status == 200)
        #expect(try await count(user.id) == 0)
        #expect(try await count(other.id) == 1)
        let closed = try await harness.picture(session)
        #expect(closed.status == 410 && closed.errorCode == "session_closed")
        #expect(try await harness.picture(session, "redirect=false").status == 410)
        #expect(try await harness.picture(otherSession).status == 200)
    }

    @Test func aTokenGraphRejectsClosesTheSession() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (user, session) = try await harness.loggedIn()
        _ = harness.emulator.invalidateTokens(userID: user.id, reason: .passwordChanged)
        let reply = try await harness.picture(session)
        #expect(reply.status == 410 && reply.errorCode == "session_closed")
        let status = try await harness.call("GET", "/v1/sessions/\(session)?validate=never")
        #expect(status.json["closed_reason"] as? String == "password_changed")
    }
}
