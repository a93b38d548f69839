import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A task executor that runs a job at once on the thread that enqueues it, where that thread has said it may
/// (``runsResumedTasksHere(_:)``), and on a Dispatch worker thread everywhere else.
///
/// The server runs each waiting handler on a task that prefers this executor (`ServerCore`), so a request's task
/// starts on the libmicrohttpd thread that read it and, after each suspension, goes on on the thread that resumed
/// it: the database pool thread that answered its batched read, or the HTTP client thread that finished its Graph
/// call. Without it every request paid two hops through the global concurrent pool (task start and every
/// resumption: a queue push and a futex wake each), which was a fifth of the status path's CPU
/// (docs/performance.md).
///
/// Running a job inside `enqueue` is only safe where the enqueuing code holds no lock and is not inside the Swift
/// runtime. That is not true everywhere a task can be resumed: a cancellation handler (`withTaskCancellationHandler`'s
/// `onCancel`, `Task.sleep`'s) runs inside `Task.cancel()` while the runtime walks the cancelled task's status
/// records, and a task resumed from there and run at once leaves its cancellation scopes and frees those very
/// records under the walk (a use after free: the reaper's `cancel()` of a timed-out handler crashed that way, a
/// SEGV on a garbage address; `InlineTaskExecutorTests`). So the threads that resume tasks at known-safe points
/// (the server's access handler, the pool threads, the HTTP client's transfer loop) wrap the resumption in
/// ``runsResumedTasksHere(_:)``, and every other enqueue goes to a Dispatch worker. A job run inline runs with the
/// permission withdrawn, so whatever it resumes in turn is never run nested inside it.
///
/// What this asks of handler code, all of which holds in this codebase: no blocking wait between suspension points
/// (a handler holding a database pool thread while it waits for that same pool would deadlock), and short
/// synchronous stretches (they run on a server or pool thread). Actor-isolated work still runs on the actor's own
/// executor; `Task.sleep` resumes on a Dispatch worker.
public final class InlineTaskExecutor: TaskExecutor {
    public static let shared = InlineTaskExecutor()

    private init() {}

    /// Runs `body`, letting every task that prefers this executor and that `body` starts or resumes run on this
    /// thread before `body` returns. Call it only where no lock is held and nothing is mid-way that the resumed
    /// task could see half done.
    public static func runsResumedTasksHere<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(inlinePermission)
        pthread_setspecific(inlinePermission, permitted)
        defer { pthread_setspecific(inlinePermission, previous) }
        return try body()
    }

    /// Whether a job enqueued now on this thread would run here at once.
    public static var runsInlineHere: Bool { pthread_getspecific(inlinePermission) != nil }

    public func enqueue(_ job: consuming ExecutorJob) {
        if Self.runsInlineHere {
            pthread_setspecific(inlinePermission, nil)
            job.runSynchronously(on: asUnownedTaskExecutor())
            pthread_setspecific(inlinePermission, permitted)
        } else {
            let job = UnownedJob(job)
            let executor = asUnownedTaskExecutor()
            DispatchQueue.global().async { job.runSynchronously(on: executor) }
        }
    }
}

/// The thread-specific flag of ``InlineTaskExecutor/runsResumedTasksHere(_:)``: non-nil while the thread may run
/// jobs inline.
private let inlinePermission: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key, nil)
    precondition(status == 0, "pthread_key_create failed: \(status)")
    return key
}()

/// Any non-nil value: the flag carries no data.
private var permitted: UnsafeRawPointer? { UnsafeRawPointer(bitPattern: 1) }
