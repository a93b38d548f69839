import FBSessionsCore
import Foundation
import Postgres
import TestSupport
import Testing

@testable import FBSessionsStorage

/// A batched read answers by its own deadline, whether it waits in the queue behind a stuck batch or sits inside
/// it; the stuck batch's late answer is not delivered twice, and the batcher serves again once it is free.
@Suite("Batched reads and their deadlines", .serialized, .enabled(if: TestDatabase.isEnabled))
struct ReadBatcherDeadlineTests {
    /// Holds the first batch until released.
    ///
    /// Sendable: `open` is guarded by `condition` (an `NSCondition`, not a `Locked`: the batch sleeps on it until
    /// released), which the compiler cannot see.
    final class Gate: @unchecked Sendable {
        private let condition = NSCondition()
        private var open = false
        func wait() {
            condition.lock()
            let deadline = Date().addingTimeInterval(10)
            while !open, condition.wait(until: deadline) {}
            condition.unlock()
        }
        func release() {
            condition.lock()
            open = true
            condition.broadcast()
            condition.unlock()
        }
    }

    @Test func readsBehindAStuckBatchAnswerByTheirOwnDeadline() async throws {
        let pool = PostgresPool(configuration: .init(connectionString: try TestDatabase.requireServerURL(), size: 2))
        defer { pool.shutdown() }
        let gate = Gate()
        let batcher = ReadBatcher<Int, Int>(
            database: Database(pool: pool), maxBatch: 8, maxInFlight: 1, readTimeout: .milliseconds(500)
        ) { _, items in
            if items.contains(0) { gate.wait() }  // as a statement on a frozen server would
            return items.map { .success($0 * 2) }
        }
        func timedRead(_ item: Int) async -> (Result<Int, any Error>, Duration) {
            let start = ContinuousClock.now
            do {
                return (.success(try await batcher.load(item)), ContinuousClock.now - start)
            } catch {
                return (.failure(error), ContinuousClock.now - start)
            }
        }
        let stuck = Task { await timedRead(0) }
        try await Task.sleep(for: .milliseconds(100))
        async let one = timedRead(1)
        async let two = timedRead(2)
        async let three = timedRead(3)
        let outcomes = await [stuck.value, one, two, three]
        for (outcome, took) in outcomes {
            guard case .failure(ServiceError.databaseUnavailable) = outcome else {
                Issue.record("expected databaseUnavailable, got \(outcome)")
                continue
            }
            #expect(took >= .milliseconds(450) && took < .milliseconds(1500), "\(took)")
        }
        gate.release()
        let (after, took) = await timedRead(4)
        #expect((try? after.get()) == 8 && took < .seconds(1))
    }
}
