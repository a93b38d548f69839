import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Support
import Testing
import TestSupport

/// Keeps killing the listening connections (`pg_terminate_backend` on every `fbsessiond-listener` and every event
/// loop's `fbsessiond-fence` of the test database) at random short intervals until stopped, as a failing network or
/// an operator would.
private final class ListenerKiller: Sendable {
    private struct State {
        var stopped = false
        var killed = 0
        var task: Task<Void, Never>?
    }

    private let state = Locked(State())

    init(pool: PostgresPool) {
        let task = Task.detached { [self] in
            while !isStopped {
                let rows = try? await pool.query(
                    """
                    SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
                    WHERE application_name IN ('fbsessiond-listener', 'fbsessiond-fence') AND datname = current_database()
                    """)
                let count = (try? rows?.first?.decode("n", as: Int.self)) ?? 0
                state.withLock { $0.killed += count }
                try? await Task.sleep(for: .milliseconds(Int.random(in: 5...120)))
            }
        }
        state.withLock { $0.task = task }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    /// Stops killing; returns how many connections were killed.
    func stop() async -> Int {
        let task = state.withLock { state in
            state.stopped = true
            return state.task
        }
        await task?.value
        return state.withLock { $0.killed }
    }
}

/// Two instances on one database, each with its own exact cache and listener (docs/caching.md, "Exact caches
/// across instances"): a change committed through one is never contradicted by the other's next answer, calm and
/// while the listeners' connections keep being killed. Every trial first makes the reading instance cache what
/// the writing instance then changes; the stale answers are counted and must be zero.
///
/// The instances' caches are as big as `FBS_CACHE_BYTES` says (``TestCache/configuredBytes``, 32 MiB by default):
/// `scripts/test` runs the trials again with no cache (0) and with one that evicts all the time (4096), and they
/// must find no stale answer either. The tests of what the cache itself answers need a cache that holds their
/// entries, so they run only with one of at least 1 MiB.
@Suite(.enabled(if: TestDatabase.isEnabled), .serialized) struct ExactCacheAcrossInstancesTests {
    /// Whether the caches hold what a trial puts in them (a cache of at least 1 MiB), so that hits can be counted.
    static let cacheHolds = TestCache.configuredBytes >= 1 << 20

    /// Two cached instances beside a harness (which provides the database, the emulator and the keys).
    private struct Pair {
        let harness: SessionHarness
        let first: SecondInstance
        let second: SecondInstance

        static func make() async throws -> Pair {
            let harness = try await SessionHarness(validateTTL: 300, keyCacheTTL: 3600)
            return Pair(
                harness: harness,
                first: try await SecondInstance(harness, keyCacheTTL: 3600, validateTTL: 300),
                second: try await SecondInstance(harness, keyCacheTTL: 3600, validateTTL: 300))
        }

        func stop() {
            first.stop()
            second.stop()
            harness.stop()
        }

        /// The two instances, the writer first: alternating by trial.
        func roles(_ trial: Int) -> (writer: SecondInstance, reader: SecondInstance) {
            trial % 2 == 0 ? (first, second) : (second, first)
        }

        var hits: Int {
            [first, second].reduce(0) { $0 + ($1.testCache.cache?.currentStatistics.hits ?? 0) }
        }

        /// Runs `body`, with a listener killer running throughout when `killing`; returns the kills.
        func run(killing: Bool, _ body: () async throws -> Void) async throws -> Int {
            let killer = killing ? ListenerKiller(pool: harness.pool) : nil
            do {
                try await body()
            } catch {
                _ = await killer?.stop()
                throw error
            }
            return await killer?.stop() ?? 0
        }
    }

    @Test(arguments: [false, true]) func aThousandLogoutsThenStatusOnTheOtherInstance(killing: Bool) async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let user = try pair.harness.emulator.createUser(firstName: "Ada", lastName: "Lovelace")
        var stale: [String] = []
        var failures: [String] = []
        let kills = try await pair.run(killing: killing) {
            for trial in 0..<1000 {
                let (writer, reader) = pair.roles(trial)
                let token = try pair.harness.emulator.issueToken(appID: pair.harness.facebookApp.id, userID: user.id)
                let login = try await writer.call(
                    "POST", "/v1/sessions", json: ["owner": "owner-\(trial % 7)", "access_token": token.accessToken])
                guard login.status == 201 || login.status == 200, let id = login.json["id"] as? String else {
                    failures.append("trial \(trial): login \(login.status) \(login.errorCode ?? "")")
                    continue
                }
                // The reader caches the open session (twice: a fill, then usually a hit).
                for _ in 0..<2 {
                    let open = try await reader.call("GET", "/v1/sessions/\(id)?validate=auto")
                    if open.status != 200 || open.json["state"] as? String != "open" {
                        failures.append("trial \(trial): open read \(open.status) \(open.json["state"] ?? "-")")
                    }
                }
                let logout = try await writer.call("DELETE", "/v1/sessions/\(id)?revoke=false")
                guard logout.status == 200 else {
                    failures.append("trial \(trial): logout \(logout.status) \(logout.errorCode ?? "")")
                    continue
                }
                let after = try await reader.call("GET", "/v1/sessions/\(id)?validate=auto")
                if after.status != 200 {
                    failures.append("trial \(trial): status after logout \(after.status)")
                } else if after.json["state"] as? String != "closed" {
                    stale.append("trial \(trial): \(after.json["state"] ?? "-")")
                }
            }
        }
        #expect(stale.isEmpty, "\(stale.count) stale answers of 1000 (listener kills: \(kills)): \(stale.prefix(5))")
        #expect(failures.isEmpty, "\(failures.count) failed requests: \(failures.prefix(5))")
        // Without a cache (FBS_CACHE_BYTES=0) an instance has no listener of its own to kill.
        #expect(!killing || TestCache.configuredBytes == 0 || kills > 0, "the killer found no listener to kill")
        #expect(killing || !Self.cacheHolds || pair.hits >= 500, "the readers' caches answered only \(pair.hits) reads")
    }

    @Test(arguments: [false, true]) func aKeyRevokedThroughTheCLIIsRefusedByTheNextRequestOnTheOther(killing: Bool)
        async throws
    {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let stored = PostgresKeyStore(database: Database(pool: pair.harness.pool))
        var stale: [String] = []
        var failures: [String] = []
        let kills = try await pair.run(killing: killing) {
            for round in 0..<6 {
                let made = try await stored.addKey(appID: pair.harness.app.id, scopes: [.sessions])
                let key = SecretsTranscript.noted("api key", made.text)
                let (_, reader) = pair.roles(round)
                // The reader knows the key (its app and scopes) and has found it live (twice: a fill, then a hit).
                for _ in 0..<2 {
                    let known = try await reader.call("GET", "/v1/owners/k-\(round)/sessions", key: key)
                    if known.status != 200 { failures.append("round \(round): before \(known.status)") }
                }
                let revoke = try CommandLineTests.run(
                    ["key", "revoke", made.key.id], environment: ["DATABASE_URL": pair.harness.databaseURL])
                guard revoke.status == 0 else {
                    failures.append("round \(round): key revoke exited \(revoke.status): \(revoke.errors)")
                    continue
                }
                let after = try await reader.call("GET", "/v1/owners/k-\(round)/sessions", key: key)
                if after.status != 401 { stale.append("round \(round): \(after.status)") }
            }
        }
        #expect(stale.isEmpty, "\(stale.count) revoked keys let in (listener kills: \(kills)): \(stale)")
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test(arguments: [false, true]) func aProfileChangedThroughOneIsReadThroughTheOther(killing: Bool) async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let harness = pair.harness
        let user = try harness.emulator.createUser(firstName: "Ada", lastName: "Lovelace")
        let token = try harness.emulator.issueToken(appID: harness.facebookApp.id, userID: user.id)
        let login = try await pair.first.call("POST", "/v1/sessions", json: ["owner": "p-1", "access_token": token.accessToken])
        let id = try #require(login.json["id"] as? String)
        var stale: [String] = []
        var failures: [String] = []
        let kills = try await pair.run(killing: killing) {
            for round in 0..<40 {
                let (writer, reader) = pair.roles(round)
                for _ in 0..<2 { _ = try await reader.call("GET", "/v1/sessions/\(id)?validate=never") }
                let name = "Ada Round\(round)"
                _ = try harness.emulator.updateUser(user.id) { $0.name = name }
                // The writer validates against Graph now, and stores the new profile.
                let fresh = try await writer.call("GET", "/v1/sessions/\(id)?validate=always")
                guard fresh.status == 200, (fresh.json["profile"] as? [String: Any])?["name"] as? String == name else {
                    failures.append("round \(round): writer \(fresh.status) \(fresh.text.prefix(120))")
                    continue
                }
                let read = try await reader.call("GET", "/v1/sessions/\(id)?validate=never")
                let seen = (read.json["profile"] as? [String: Any])?["name"] as? String
                if seen != name { stale.append("round \(round): \(seen ?? "-")") }
            }
        }
        #expect(stale.isEmpty, "\(stale.count) old profiles of 40 (listener kills: \(kills)): \(stale.prefix(5))")
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    @Test(arguments: [false, true]) func theActiveAccountSwitchedOnOneIsListedByTheOther(killing: Bool) async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let harness = pair.harness
        var ids: [String] = []
        for slot in 0..<2 {
            let (_, token) = try harness.userToken(name: "Slot \(slot)")
            let login = try await pair.first.call(
                "POST", "/v1/sessions", json: ["owner": "a-1", "access_token": token, "slot": slot])
            ids.append(try #require(login.json["id"] as? String))
        }
        var stale: [String] = []
        var failures: [String] = []
        let kills = try await pair.run(killing: killing) {
            for round in 0..<60 {
                let (writer, reader) = pair.roles(round)
                for _ in 0..<2 { _ = try await reader.call("GET", "/v1/owners/a-1/sessions") }
                let target = ids[round % 2]
                let switched = try await writer.call("PUT", "/v1/owners/a-1/active", json: ["session_id": target])
                guard switched.status == 200 else {
                    failures.append("round \(round): switch \(switched.status) \(switched.errorCode ?? "")")
                    continue
                }
                let list = try await reader.call("GET", "/v1/owners/a-1/sessions")
                let active = list.json["active_session_id"] as? String
                let flagged = (list.json["sessions"] as? [[String: Any]])?.first { $0["active"] as? Bool == true }?["id"]
                if active != target || flagged as? String != target {
                    stale.append("round \(round): active \(active ?? "-")")
                }
                // The session's own status says the same.
                let status = try await reader.call("GET", "/v1/sessions/\(target)?validate=never")
                if status.json["active"] as? Bool != true { stale.append("round \(round): status not active") }
            }
        }
        #expect(stale.isEmpty, "\(stale.count) old active accounts of 60 (listener kills: \(kills)): \(stale.prefix(5))")
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    /// A picture replaced through one instance (its row made stale by hand, then filled again from the CDN with
    /// other bytes) is never answered by the other from the description it cached, with the old bytes or a 304 for
    /// the old ETag (migration 0009 announces `picture_cache`), not even by a thread that answered that very 304
    /// just before (``PictureService``'s memo of its last 304).
    @Test(arguments: [false, true]) func aPictureReplacedThroughOneIsServedByTheOther(killing: Bool) async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let harness = pair.harness
        let (user, token) = try harness.userToken()
        let login = try await pair.first.call("POST", "/v1/sessions", json: ["owner": "pic-1", "access_token": token])
        let id = try #require(login.json["id"] as? String)
        var stale: [String] = []
        var failures: [String] = []
        let kills = try await pair.run(killing: killing) {
            for round in 0..<30 {
                let (writer, reader) = pair.roles(round)
                _ = try await reader.call("GET", "/v1/sessions/\(id)?validate=never")
                var old: String?
                for _ in 0..<2 {
                    let picture = try await reader.call("GET", "/v1/sessions/\(id)/picture")
                    old = picture.header("ETag")
                    if picture.status != 200 { failures.append("round \(round): reader \(picture.status)") }
                }
                guard let old else { continue }
                // The reader revalidates its copy: 304s, remembered by the threads that answer them.
                for _ in 0..<3 {
                    let revalidated = try await reader.call(
                        "GET", "/v1/sessions/\(id)/picture", headers: [("If-None-Match", old)])
                    if revalidated.status != 304 { failures.append("round \(round): revalidation \(revalidated.status)") }
                }
                _ = try harness.emulator.updateUser(user.id) { $0.hasPicture.toggle() }
                _ = try await harness.rows(
                    "UPDATE picture_cache SET fresh_until = now() - interval '1 second' WHERE facebook_user_id = \(user.id)")
                let refilled = try await writer.call("GET", "/v1/sessions/\(id)/picture")
                guard refilled.status == 200, let new = refilled.header("ETag"), new != old else {
                    failures.append("round \(round): writer \(refilled.status) \(refilled.header("ETag") ?? "-")")
                    continue
                }
                let conditional = try await reader.call(
                    "GET", "/v1/sessions/\(id)/picture", headers: [("If-None-Match", old)])
                if conditional.status != 200 || conditional.header("ETag") != new {
                    stale.append("round \(round): \(conditional.status) \(conditional.header("ETag") ?? "-")")
                }
                let description = try await reader.call("GET", "/v1/sessions/\(id)/picture/description")
                let silhouette = description.json["is_silhouette"] as? Bool
                let expected = harness.emulator.user(user.id)?.hasPicture == false
                if silhouette != expected { stale.append("round \(round): description silhouette \(silhouette as Any)") }
            }
        }
        #expect(stale.isEmpty, "\(stale.count) old pictures (listener kills: \(kills)): \(stale.prefix(5))")
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    /// Once warm, a picture, its 304 and its description are answered from memory: cache hits for the key, the
    /// session and the picture, and no miss. Picture requests alone warm it (no status request first).
    @Test(.enabled(if: cacheHolds)) func aWarmPictureIsAnsweredFromTheCache() async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let (_, token) = try pair.harness.userToken()
        let login = try await pair.first.call("POST", "/v1/sessions", json: ["owner": "pic-2", "access_token": token])
        let id = try #require(login.json["id"] as? String)
        let first = try await pair.second.call("GET", "/v1/sessions/\(id)/picture")
        _ = try await pair.second.call("GET", "/v1/sessions/\(id)/picture/description")
        let etag = try #require(first.header("ETag"))
        let cache = try #require(pair.second.testCache.cache)
        let before = cache.currentStatistics
        for _ in 0..<10 {
            let bytes = try await pair.second.call("GET", "/v1/sessions/\(id)/picture")
            #expect(bytes.status == 200 && bytes.body == first.body && bytes.header("ETag") == etag)
            let notModified = try await pair.second.call(
                "GET", "/v1/sessions/\(id)/picture", headers: [("If-None-Match", etag)])
            #expect(notModified.status == 304 && notModified.header("ETag") == etag)
            let description = try await pair.second.call("GET", "/v1/sessions/\(id)/picture/description")
            #expect(description.status == 200 && description.json["url"] is String)
        }
        let after = cache.currentStatistics
        #expect(after.misses == before.misses, "misses \(before.misses) → \(after.misses)")
        // Three hits a request (the key, the session, the picture), but two for a 304 its thread remembers.
        #expect(after.hits - before.hits >= 3 * 20 + 2 * 10, "hits \(before.hits) → \(after.hits)")
    }

    /// A client revalidating its copy is answered by its thread's memo of the last 304 (no lookup of the picture:
    /// two cache hits a request, the key and the session, not three), and the memo never outlives what it was made
    /// from: a new picture, another `If-None-Match`, another size, and a closed session are each answered anew.
    @Test(.enabled(if: cacheHolds)) func aRevalidationIsAnsweredFromTheMemoUntilAnythingChanges() async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let harness = pair.harness
        let (user, token) = try harness.userToken()
        let login = try await pair.first.call("POST", "/v1/sessions", json: ["owner": "pic-3", "access_token": token])
        let id = try #require(login.json["id"] as? String)
        let path = "/v1/sessions/\(id)/picture"
        let first = try await pair.second.call("GET", path)
        let etag = try #require(first.header("ETag"))
        let revalidate = { (tag: String, query: String) in
            try await pair.second.call("GET", path + query, headers: [("If-None-Match", tag)])
        }
        for _ in 0..<10 { #expect(try await revalidate(etag, "").status == 304) }  // Every loop's thread remembers.
        let cache = try #require(pair.second.testCache.cache)
        let before = cache.currentStatistics.hits
        let rounds = 20
        for _ in 0..<rounds {
            let answer = try await revalidate(etag, "")
            #expect(answer.status == 304 && answer.header("ETag") == etag && answer.header("Age") != nil)
            #expect(answer.header("Cache-Control") == "private, max-age=3600")
        }
        let hits = cache.currentStatistics.hits - before
        #expect(hits >= 2 * rounds && hits <= 2 * rounds + 2, "\(hits) cache hits for \(rounds) revalidations")

        // Another tag, another size: answered anew (200 with the bytes; a size not cached yet is fetched).
        let other = try await revalidate("\"other\"", "")
        #expect(other.status == 200 && other.body == first.body)
        let large = try await revalidate(etag, "?type=large")
        #expect(large.status == 200 && large.header("ETag") != etag)
        #expect(try await revalidate(etag, "").status == 304)

        // A new picture through the other instance: the old tag gets the new bytes.
        _ = try harness.emulator.updateUser(user.id) { $0.hasPicture.toggle() }
        _ = try await harness.rows(
            "UPDATE picture_cache SET fresh_until = now() - interval '1 second' WHERE facebook_user_id = \(user.id)")
        let refilled = try await pair.first.call("GET", path)
        let new = try #require(refilled.header("ETag"))
        #expect(refilled.status == 200 && new != etag)
        for _ in 0..<4 {
            let answer = try await revalidate(etag, "")
            #expect(answer.status == 200 && answer.header("ETag") == new, "\(answer.status)")
        }
        for _ in 0..<4 {
            let answer = try await revalidate(new, "")
            #expect(answer.status == 304 && answer.header("ETag") == new)
        }
        // The rendered 304 follows the clock: its `Age` moves on.
        let age = { () async throws -> Int in
            let answer = try await revalidate(new, "")
            return try #require(answer.header("Age").flatMap { Int($0) })
        }
        let earlier = try await age()
        try await Task.sleep(for: .milliseconds(1100))
        for _ in 0..<4 {
            let later = try await age()
            #expect(later > earlier, "Age \(earlier), a second later \(later)")
        }

        // Logged out through the other instance: the session's picture is gone.
        #expect(try await pair.first.call("DELETE", "/v1/sessions/\(id)?revoke=false").status == 200)
        for _ in 0..<4 {
            let answer = try await revalidate(new, "")
            #expect(answer.status == 410 && answer.errorCode == "session_closed", "\(answer.status)")
        }
    }

    /// Hand-written SQL is announced too (the triggers of migration 0008): an operator's UPDATE is never
    /// contradicted by a cache.
    @Test func anOperatorsSQLIsSeenByTheNextRead() async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let (_, token) = try pair.harness.userToken()
        let login = try await pair.first.call("POST", "/v1/sessions", json: ["owner": "sql-1", "access_token": token])
        let id = try #require(login.json["id"] as? String)
        for _ in 0..<2 { _ = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never") }
        _ = try await pair.harness.rows("UPDATE sessions SET action_required = 'reauthorize' WHERE id = \(id)")
        let read = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never")
        #expect(read.json["action_required"] as? String == "reauthorize", "\(read.text)")
        // A transaction too big for one notification announces everything ('*'): the session's change rides in
        // a statement that also creates 500 owners.
        for _ in 0..<2 { _ = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never") }
        _ = try await pair.harness.rows(
            """
            WITH cleared AS (UPDATE sessions SET action_required = NULL WHERE id = \(id) RETURNING 1)
            INSERT INTO owners (app_id, owner)
            SELECT \(pair.harness.app.id), 'bulk-' || g FROM generate_series(1, 500) g, cleared
            """)
        let cleared = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never")
        #expect(cleared.json["action_required"] is NSNull || cleared.json["action_required"] == nil, "\(cleared.text)")
    }

    /// The body a status keeps beside its cached session is reused only for the session shown as it was: once the
    /// validation TTL has passed, the same cached session is shown `token_loaded`, rendered again, not `open` from the
    /// kept body.
    @Test(.enabled(if: cacheHolds)) func aKeptStatusBodyFollowsTheStateTheSessionIsShownIn() async throws {
        let harness = try await SessionHarness(validateTTL: 1, keyCacheTTL: 3600)
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "kept-1", token: token)
        let id = try #require(login.json["id"] as? String)
        let hits = { harness.testCache.cache?.currentStatistics.hits ?? 0 }
        for _ in 0..<3 {
            let read = try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
            #expect(read.json["state"] as? String == "open", "\(read.text)")
        }
        let before = hits()
        #expect(before >= 1, "answered from the cache")
        try await Task.sleep(for: .milliseconds(1_300))
        for round in 0..<3 {
            let read = try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
            #expect(read.json["state"] as? String == "token_loaded", "round \(round): \(read.text)")
        }
        #expect(hits() >= before + 2, "the stale state came from the cache's session, rendered again")
    }

    /// A cached instance's server runs one event loop per thread, each with a listening fence connection of its own
    /// (`fbsessiond-fence`, docs/caching.md "A fence connection per event loop"): warm status reads are fenced on
    /// those, not on the listener's connection; a loop whose connection is killed answers from the database meanwhile
    /// and from the cache again once it has reconnected.
    @Test(.enabled(if: cacheHolds)) func warmReadsAreFencedOnTheirLoopsOwnConnection() async throws {
        let pair = try await Pair.make()
        defer { pair.stop() }
        let (_, token) = try pair.harness.userToken()
        let login = try await pair.first.call("POST", "/v1/sessions", json: ["owner": "loop-1", "access_token": token])
        let id = try #require(login.json["id"] as? String)
        let cache = try #require(pair.second.testCache.cache)
        let loops = pair.second.server.loopCount
        #expect(loops >= 1)
        func fenceConnections() async throws -> Int {
            let rows = try await pair.harness.rows(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'fbsessiond-fence' AND datname = current_database()")
            return try rows.first?.decode("n", as: Int.self) ?? 0
        }
        #expect(try await fenceConnections() >= 2 * loops, "both instances' loops listen")

        func warmReads(_ count: Int) async throws -> (hits: Int, loopFences: Int, listenerFences: Int) {
            for _ in 0..<2 { _ = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never") }
            let before = cache.currentStatistics
            for round in 0..<count {
                let read = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never")
                #expect(read.status == 200 && read.json["state"] as? String == "open", "round \(round): \(read.status)")
            }
            let after = cache.currentStatistics
            let loopFences = after.loopFencesSent - before.loopFencesSent
            return (after.hits - before.hits, loopFences, after.fencesSent - before.fencesSent - loopFences)
        }
        #expect(await soon { cache.currentLoopFences == loops })
        let calm = try await warmReads(50)
        #expect(calm.hits >= 50 && calm.loopFences >= 50, "\(calm)")
        #expect(calm.listenerFences <= 2, "\(calm)")

        // Idle for three fence timeouts: a fence that came back is not out, so nothing ends the connections, and
        // the cache keeps what it holds (a reconnect would empty it).
        func fencePIDs() async throws -> [Int] {
            try await pair.harness.rows(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'fbsessiond-fence' ORDER BY pid"
            ).map { try $0.decode("pid", as: Int.self) }
        }
        let before = try await fencePIDs()
        let missesBefore = cache.currentStatistics.misses
        try await Task.sleep(for: .milliseconds(1500))
        let idle = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never")
        #expect(idle.status == 200)
        #expect(try await fencePIDs() == before, "the fence connections were made again while idle")
        #expect(cache.currentStatistics.misses == missesBefore, "the cache lost its entries while idle")
        #expect(cache.currentStatistics.loopConnectionsLost == 0)

        _ = try await pair.harness.rows(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fbsessiond-fence'")
        let during = try await pair.second.call("GET", "/v1/sessions/\(id)?validate=never")
        #expect(during.status == 200 && during.json["state"] as? String == "open")
        #expect(await soon(within: 10) { cache.currentLoopFences == loops }, "reconnected")
        #expect(cache.currentStatistics.loopConnectionsLost >= loops)
        #expect(try await fenceConnections() >= 2 * loops)
        let again = try await warmReads(20)
        #expect(again.hits >= 20 && again.loopFences >= 20, "\(again)")
    }
}

/// Polls `condition` every 10 ms until it holds or `seconds` pass; whether it held.
private func soon(within seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
