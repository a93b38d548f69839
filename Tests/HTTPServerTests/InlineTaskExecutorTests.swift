import Foundation
import InlineExecutor
import Support
import Testing

/// Where jobs of tasks that prefer ``InlineTaskExecutor`` run: at once on a thread that allows it, on another
/// thread everywhere else, and never inside `Task.cancel()`.
@Suite("InlineTaskExecutor")
struct InlineTaskExecutorTests {
    /// A task started where inline running is allowed runs to its first suspension before `Task.detached` returns,
    /// on this thread, and with the permission withdrawn while it runs.
    @Test func startsAtOnceWhereAllowed() async throws {
        let seen = try await onOwnThread { () -> (ranBeforeReturn: Bool, sameThread: Bool, nestedAllowed: Bool) in
            let caller = pthread_self()
            let probe = Probe()
            let task = InlineTaskExecutor.runsResumedTasksHere {
                Task.detached(executorPreference: InlineTaskExecutor.shared) {
                    probe.set(thread: pthread_self(), nestedAllowed: InlineTaskExecutor.runsInlineHere)
                }
            }
            let ranBeforeReturn = probe.thread != nil
            _ = task
            return (ranBeforeReturn, probe.thread.map { pthread_equal($0, caller) != 0 } ?? false, probe.nestedAllowed)
        }
        #expect(seen.ranBeforeReturn)
        #expect(seen.sameThread)
        #expect(!seen.nestedAllowed)
        #expect(!InlineTaskExecutor.runsInlineHere)
    }

    /// Started where nothing allowed it, the task runs on another thread.
    @Test func runsElsewhereWhereNotAllowed() async throws {
        let (caller, ran) = try await onOwnThread { () -> (pthread_t, pthread_t?) in
            let probe = Probe()
            let done = DispatchSemaphore(value: 0)
            Task.detached(executorPreference: InlineTaskExecutor.shared) {
                probe.set(thread: pthread_self(), nestedAllowed: false)
                done.signal()
            }
            done.wait()
            return (pthread_self(), probe.thread)
        }
        #expect(ran.map { pthread_equal($0, caller) == 0 } == true)
    }

    /// The crash this guards against: a cancellation handler resumes its own task from inside `Task.cancel()`,
    /// while the runtime walks the task's status records. Run there at once, the task left its cancellation scope
    /// and freed the records under the walk (a SEGV within a few hundred rounds). Every task must finish, and none
    /// on the cancelling thread.
    @Test func aTaskResumedByItsCancellationGoesOnOutsideCancel() async throws {
        let rounds = 500
        let outcome = try await onOwnThread { () -> (finished: Int, onCanceller: Int) in
            let counts = Counts()
            let canceller = pthread_self()
            for _ in 0..<rounds {
                let parked = ParkedContinuation()
                let started = DispatchSemaphore(value: 0)
                let task = InlineTaskExecutor.runsResumedTasksHere {
                    Task.detached(executorPreference: InlineTaskExecutor.shared) {
                        await withTaskCancellationHandler {
                            await withCheckedContinuation { continuation in
                                parked.park(continuation)
                                started.signal()
                            }
                        } onCancel: {
                            parked.resume()
                        }
                        counts.record(onCanceller: pthread_equal(pthread_self(), canceller) != 0)
                        await withTaskCancellationHandler { await Task.yield() } onCancel: {}
                        counts.finish()
                    }
                }
                started.wait()
                task.cancel()
            }
            #expect(counts.waitForFinished(rounds, timeout: 30))
            return (counts.finished, counts.onCanceller)
        }
        #expect(outcome.finished == rounds)
        #expect(outcome.onCanceller == 0)
    }
}

/// Runs `body` on a thread of its own (not one of the concurrency pool's), so that "this thread" means one thread.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async throws -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.start()
    }
}

private final class Probe: Sendable {
    private let seen = Locked<(thread: pthread_t?, nestedAllowed: Bool)>((nil, false))
    func set(thread: pthread_t, nestedAllowed: Bool) {
        seen.withLock { $0 = (thread, nestedAllowed) }
    }
    var thread: pthread_t? { seen.withLock { $0.thread } }
    var nestedAllowed: Bool { seen.withLock { $0.nestedAllowed } }
}

private final class ParkedContinuation: Sendable {
    private let continuation = Locked<CheckedContinuation<Void, Never>?>(nil)
    func park(_ continuation: CheckedContinuation<Void, Never>) { self.continuation.withLock { $0 = continuation } }
    func resume() {
        let continuation = self.continuation.withLock { parked in
            defer { parked = nil }
            return parked
        }
        continuation?.resume()
    }
}

/// Sendable: the counts are guarded by `condition` (an `NSCondition`, not a `Locked`: the test sleeps on it until
/// enough tasks finished), which the compiler cannot see.
private final class Counts: @unchecked Sendable {
    private let condition = NSCondition()
    private var finishedCount = 0
    private var onCancellerCount = 0
    func record(onCanceller: Bool) {
        condition.withLock { if onCanceller { onCancellerCount += 1 } }
    }
    func finish() {
        condition.withLock {
            finishedCount += 1
            condition.broadcast()
        }
    }
    func waitForFinished(_ count: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while finishedCount < count {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }
    var finished: Int { condition.withLock { finishedCount } }
    var onCanceller: Int { condition.withLock { onCancellerCount } }
}
