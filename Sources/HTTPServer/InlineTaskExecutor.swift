/// A task executor that runs each job at once, on the thread that enqueues it.
///
/// The server runs each waiting handler on a task that prefers this executor (``ServerCore``), so a request's
/// task starts on the libmicrohttpd thread that read it and, after each suspension, goes on on the thread that
/// resumed it: the database pool thread that answered its batched read, or the HTTP client thread that finished
/// its Graph call. Without it every request paid two hops through the global concurrent pool (task start and
/// every resumption: a queue push and a futex wake each), which was a fifth of the status path's CPU
/// (docs/performance.md).
///
/// What this asks of handler code, all of which holds in this codebase: no blocking wait between suspension
/// points (a handler holding a database pool thread while it waits for that same pool would deadlock), and short
/// synchronous stretches (they run on a server or pool thread). Actor-isolated work still runs on the actor's own
/// executor; `Task.sleep` resumes on the timer's thread.
final class InlineTaskExecutor: TaskExecutor {
    static let shared = InlineTaskExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        job.runSynchronously(on: asUnownedTaskExecutor())
    }
}
