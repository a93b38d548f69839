import FBSessionsCore
import FBSessionsStorage
import Dispatch
import Foundation
import GraphEmulator
import Postgres
import Support
import Testing
import TestSupport

/// The background sweep and key rotation, against the emulator and a real database.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct SweepTests {
    static func fastPolicy() -> Sweeper.Policy {
        var policy = Sweeper.Policy()
        policy.sessionsPerSecond = 1000
        policy.maxAge = 60
        return policy
    }

    @Test func closesDeadSessionsAndExtendsExpiringTokens() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let dead = try #require(try await harness.login(owner: "o", token: try harness.userToken(name: "Ann A").token).json["id"] as? String)
        let aging = try #require(try await harness.login(owner: "o", token: try harness.userToken(name: "Bob B").token).json["id"] as? String)
        let fresh = try #require(try await harness.login(owner: "p", token: try harness.userToken(name: "Cid C").token).json["id"] as? String)
        let deadToken = try #require(try await harness.call("GET", "/v1/sessions/\(dead)/token").json["access_token"] as? String)
        let agingToken = try #require(try await harness.call("GET", "/v1/sessions/\(aging)/token").json["access_token"] as? String)
        try harness.emulator.invalidateToken(deadToken, reason: .invalidatedByAPI)
        _ = try await harness.rows(
            """
            UPDATE sessions SET validated_at = now() - interval '2 days',
                token_expires_at = CASE WHEN id = \(aging) THEN now() + interval '1 day' ELSE token_expires_at END
            WHERE id IN (\(dead), \(aging))
            """)
        let report = try await Sweeper(service: harness.sessions, store: harness.store, policy: Self.fastPolicy()).pass()
        #expect(report.closed == 1 && report.validated == 1 && report.extended == 1)
        let closed = try await harness.call("GET", "/v1/sessions/\(dead)?validate=never").json
        #expect(closed["state"] as? String == "closed" && closed["closed_reason"] as? String == "revoked")
        let extended = try #require(try await harness.call("GET", "/v1/sessions/\(aging)/token").json["access_token"] as? String)
        #expect(extended != agingToken)
        let reread = try await harness.call("GET", "/v1/sessions/\(aging)?validate=never").json
        let expiresAt = ((reread["token"] as? [String: Any])?["expires_at"] as? String).flatMap(ISO8601DateFormatter.withFraction.date)
        #expect((expiresAt?.timeIntervalSinceNow ?? 0) > 50 * 86_400)
        #expect(try await harness.call("GET", "/v1/sessions/\(fresh)?validate=never").json["state"] as? String == "open")
        // Nothing is due any more.
        #expect(try await Sweeper(service: harness.sessions, store: harness.store, policy: Self.fastPolicy()).pass() == SweepReport())
    }

    @Test func backsOffWhenGraphFailsAndNeverCloses() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        for index in 0..<10 {
            _ = try await harness.login(owner: "o\(index)", token: try harness.userToken(name: "U \(index)").token)
        }
        _ = try await harness.rows("UPDATE sessions SET validated_at = now() - interval '2 days'")
        harness.emulator.injectFault(.httpStatus(500), endpoint: .me, count: 1000)
        let before = harness.emulator.callCount(.me)
        let report = try await Sweeper(service: harness.sessions, store: harness.store, policy: Self.fastPolicy()).pass()
        let calls = harness.emulator.callCount(.me) - before
        print("sweep during a Graph outage: \(report.deferred) sessions tried, \(calls) /me calls for 10 due sessions")
        #expect(report.closed == 0 && report.deferred <= 4 && calls < 10)
        #expect(try await harness.rows("SELECT count(*) AS n FROM sessions WHERE state = 'closed'").first?.decode("n", as: Int.self) == 0)
        // The claims were released: once Graph is back, the next pass validates every session.
        harness.emulator.clearFaults()
        #expect(try await Sweeper(service: harness.sessions, store: harness.store, policy: Self.fastPolicy()).pass().validated == 10)
    }

    @Test func twoSweepersNeverValidateASessionTwice() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        for index in 0..<12 {
            _ = try await harness.login(owner: "o\(index)", token: try harness.userToken(name: "U \(index)").token)
        }
        _ = try await harness.rows("UPDATE sessions SET validated_at = now() - interval '2 days'")
        harness.emulator.setLatency(.milliseconds(30), for: .me)
        let before = harness.emulator.callCount(.me)
        var policy = Self.fastPolicy()
        policy.batchSize = 4
        let first = Sweeper(service: harness.sessions, store: harness.store, policy: policy)
        let second = Sweeper(service: harness.sessions, store: harness.store, policy: policy)
        async let a = first.pass()
        async let b = second.pass()
        let (reportA, reportB) = try await (a, b)
        #expect(reportA.validated + reportB.validated == 12)
        #expect(harness.emulator.callCount(.me) - before == 12)
    }

    @Test func owedRevocationsAreRetried() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        harness.emulator.injectFault(.httpStatus(500), endpoint: .permissions, count: 100)
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "pending")
        harness.emulator.clearFaults()
        let report = try await Sweeper(service: harness.sessions, store: harness.store, policy: Self.fastPolicy()).pass()
        #expect(report.revoked == 1)
        #expect(harness.emulator.token(stored)?.invalidation != nil)
        #expect(try await harness.rows("SELECT count(*) AS n FROM pending_revocations").first?.decode("n", as: Int.self) == 0)
        // Facebook confirmed it in the background: a repeated logout says so.
        let again = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(again.status == 200 && again.json["revocation"] as? String == "done")
    }

    @Test func reencryptMovesEverySecretToTheNewKeyResumably() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        var tokens: [String: String] = [:]
        for index in 0..<5 {
            let id = try #require(try await harness.login(owner: "o\(index)", token: try harness.userToken(name: "U \(index)").token).json["id"] as? String)
            tokens[id] = try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String
        }
        let newKey = SecretsTranscript.notingKeyring(Keyring.generate(id: "k2")).text
        let oldKey = "\(harness.keyring.currentKeyID):" + (try await oldKeyText(harness))
        let rotated = try Keyring(parsing: newKey + "," + oldKey)
        let database = Database(pool: harness.pool)
        let reencryptor = Reencryptor(database: database, keyring: rotated)
        #expect(try await reencryptor.remaining().reduce(0) { $0 + $1.count } == 6)
        #expect(try await reencryptor.step(limit: 2) == 3)  // one batch: 1 app + 2 sessions (interrupted here)
        while try await reencryptor.step(limit: 2) > 0 {}
        #expect(try await reencryptor.remaining().allSatisfy { $0.count == 0 })
        // With the old key removed, every token and the app secret still open.
        let onlyNew = try Keyring(parsing: newKey)
        let store = PostgresSessionStore(database: database, keyring: onlyNew)
        for (id, token) in tokens {
            #expect(try await store.sessionWithToken(id: id, appID: harness.app.id)?.token == token)
        }
        #expect(try await PostgresAppStore(database: database, keyring: onlyNew).secret(ofApp: harness.app.id) == harness.facebookApp.secret)
    }

    /// Regression (tools/chaos rotation): under login traffic every session insert holds FOR KEY SHARE on its app
    /// row; the re-encryptor's FOR UPDATE SKIP LOCKED skipped the app secret, so it stayed under the old key.
    @Test func reencryptMovesTheAppSecretWhileLoginsReferenceTheApp() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let newKey = SecretsTranscript.notingKeyring(Keyring.generate(id: "k2")).text
        let oldKey = "\(harness.keyring.currentKeyID):" + (try await oldKeyText(harness))
        let reencryptor = Reencryptor(database: Database(pool: harness.pool), keyring: try Keyring(parsing: newKey + "," + oldKey))
        // What an in-flight login's INSERT INTO sessions holds on the app row until it commits.
        let holder = try PostgresConnection(connectionString: harness.databaseURL)
        try holder.transaction { connection in
            _ = try connection.query("SELECT id FROM apps WHERE id = \(harness.app.id) FOR KEY SHARE")
            #expect(try blockingStep(reencryptor) == 1)
        }
        #expect(try await reencryptor.remaining().allSatisfy { $0.count == 0 })
    }

    private func blockingStep(_ reencryptor: Reencryptor) throws -> Int {
        let result = Locked<Result<Int, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<Int, any Error>
            do { outcome = .success(try await reencryptor.step(limit: 10)) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success, let value = result.withLock({ $0 }) else { return -1 }
        return try value.get()
    }

    /// The harness's generated key in settings form (the test needs it to build a rotated ring).
    private func oldKeyText(_ harness: SessionHarness) async throws -> String {
        harness.keyringText.split(separator: ":", maxSplits: 1).last.map(String.init) ?? ""
    }
}
