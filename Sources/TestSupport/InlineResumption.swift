import Foundation
import InlineExecutor

/// Runs `body` as a request handler runs: on a task that prefers `InlineTaskExecutor`, started where inline running
/// is allowed. Returns what `body` returned and the name of the thread the task went on on after it (its last
/// resumption), so that a test can check that a resumption point lets the waiting task go on right there (the
/// pool's worker, the HTTP client's loop) instead of handing it to another thread. An unnamed thread gives "".
public func threadAfterInlineAwait<T: Sendable>(
    _ body: @escaping @Sendable () async throws -> T
) async throws -> (value: T, thread: String) {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            InlineTaskExecutor.runsResumedTasksHere {
                _ = Task.detached(executorPreference: InlineTaskExecutor.shared) {
                    do {
                        let value = try await body()
                        continuation.resume(returning: (value, currentThreadName()))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
        thread.start()
    }
}

/// The current thread's Foundation name (`Thread.current` cannot be read in an async context directly).
private func currentThreadName() -> String {
    Thread.current.name ?? ""
}
