import FBSessionsAPI
import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Testing
import TestSupport

/// Batched status and list reads (docs/caching.md, "Batched reads"): many concurrent requests with different
/// apps and keys in one statement, each getting its own answer.
@Suite(.enabled(if: TestDatabase.isEnabled), .serialized) struct BatchedReadsTests {
    /// What one request asked and what it must get.
    private enum Expectation: Sendable {
        case open(String), notFound, revoked, list(Int)
    }

    @Test func concurrentReadsOfDifferentAppsAndKeysEachGetTheirOwnAnswer() async throws {
        let harness = try await SessionHarness(keyCacheTTL: 3600)
        defer { harness.stop() }
        // Without an exact cache on B: every read here must reach the batched statement.
        let other = try await SecondInstance(harness, keyCacheTTL: 3600, cacheBytes: 0)
        defer { other.stop() }
        var ids: [String] = []
        for owner in ["b-1", "b-2", "b-3"] {
            let (_, token) = try harness.userToken()
            ids.append(try #require(try await harness.login(owner: owner, token: token).json["id"] as? String))
        }
        let otherKey = try await PostgresAppStoreFactory.otherAppKey(harness)
        let live = harness.key
        let revoked = harness.sessionsKey
        // Instance B caches all three keys first, so each read's key is confirmed by a batched liveness check.
        for key in [live, revoked, otherKey] {
            #expect(try await other.call("GET", "/v1/sessions/\(ids[0])?validate=never", key: key).status != 401)
        }
        #expect(try await harness.keys.revokeKey(id: try #require(APIKeyText.id(in: revoked))))

        var requests: [(path: String, key: String, expected: Expectation)] = []
        for round in 0..<20 {
            let id = ids[round % ids.count]
            requests.append(("/v1/sessions/\(id)?validate=never", live, .open(id)))
            requests.append(("/v1/sessions/ses_unknownunknown\(1000 + round)", live, .notFound))
            requests.append(("/v1/owners/b-\(round % 3 + 1)/sessions", live, .list(1)))
            if round % 5 == 0 {
                requests.append(("/v1/sessions/\(id)?validate=never", revoked, .revoked))
                requests.append(("/v1/owners/b-1/sessions", revoked, .revoked))
                // Another app's key asks for this app's session: not found, not leaked.
                requests.append(("/v1/sessions/\(id)?validate=never", otherKey, .notFound))
                requests.append(("/v1/owners/b-1/sessions", otherKey, .list(0)))
            }
        }
        let before = other.store.batchStatistics
        try await withThrowingTaskGroup(of: (Int, SessionHarness.Reply).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { (index, try await other.call("GET", request.path, key: request.key)) }
            }
            for try await (index, reply) in group {
                let request = requests[index]
                switch request.expected {
                case .open(let id):
                    #expect(reply.status == 200 && reply.json["id"] as? String == id, "\(request.path) \(reply.status)")
                    #expect(reply.json["state"] as? String == "open")
                case .notFound:
                    #expect(reply.status == 404, "\(request.path) \(reply.status)")
                case .revoked:
                    #expect(reply.status == 401 && reply.errorCode == "unauthorized", "\(request.path) \(reply.status)")
                case .list(let count):
                    #expect(reply.status == 200, "\(request.path) \(reply.status)")
                    #expect((reply.json["sessions"] as? [Any])?.count == count, "\(request.path) \(reply.text)")
                }
            }
        }
        // The requests were coalesced: fewer statements than reads (with 2 batches in flight at most). Every
        // request reached the store except the revoked-key ones, refused before their handler ran.
        let after = other.store.batchStatistics
        let revokedCount = requests.filter { if case .revoked = $0.expected { true } else { false } }.count
        #expect(after.reads - before.reads == requests.count - revokedCount)
        #expect(after.batches - before.batches < after.reads - before.reads)
    }

    /// A status read's caller (a handler's task, which prefers the inline executor) goes on on the pool thread
    /// that ran the batch, so its JSON is written there without a hop (docs/performance.md, round 3).
    @Test func aBatchedReadsCallerGoesOnOnThePoolThread() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "i-1", token: token).json["id"] as? String)
        let store = harness.store
        let appID = harness.app.id
        let (found, resumedOn) = try await threadAfterInlineAwait { try await store.session(id: id, appID: appID) }
        #expect(found?.id == id)
        #expect(resumedOn.hasPrefix("pg-pool-"), "\(resumedOn)")
    }

    @Test func aFailedBatchFailsEveryWaiterAndTheNextBatchWorks() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "f-1", token: token).json["id"] as? String)
        // A pool that cannot connect: every read of every batch gets the database-unavailable error.
        let broken = PostgresPool(
            configuration: .init(
                connectionString: "postgresql://nobody@127.0.0.1:1/none", size: 1, connectTimeout: .seconds(1)))
        defer { broken.shutdown() }
        let store = PostgresSessionStore(database: Database(pool: broken), keyring: harness.keyring)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        _ = try await store.session(id: id, appID: harness.app.id)
                        return false
                    } catch ServiceError.databaseUnavailable {
                        return true
                    }
                }
            }
            for try await failedAsExpected in group { #expect(failedAsExpected) }
        }
        let found = try await harness.store.session(id: id, appID: harness.app.id)
        #expect(found?.id == id)
    }
}
