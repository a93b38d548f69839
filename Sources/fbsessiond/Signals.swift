import Dispatch
import Foundation
import Support

/// SIGTERM and SIGINT without a C signal handler: the signals are ignored at the C level and read from dispatch
/// sources on a global queue, so the waiting code is ordinary Swift.
///
/// Made before the service says it is listening: from then on a SIGTERM stops it in order, even one sent the moment
/// the address is printed (a supervisor, or a test, that stops what it just started). Before, the signals were
/// caught only once the service began to wait, and a SIGTERM in between ended the process with nothing stopped.
///
/// Thread safety: the sources are made in `init` and never touched again; `inbox` holds the rest under its lock.
/// Sendable: libdispatch's signal sources are safe to share, but its Swift overlay does not mark them `Sendable`
/// (and these are only kept alive).
final class TerminationSignals: @unchecked Sendable {
    /// The first signal, and the task waiting for it.
    private struct Inbox {
        var received: String?
        var waiter: CheckedContinuation<String, Never>?
    }

    private let inbox = Locked(Inbox())
    /// Kept for the life of the process.
    private let sources: [any DispatchSourceSignal]

    /// Starts catching SIGTERM and SIGINT (and ignoring SIGPIPE): neither ends the process from here on.
    init() {
        signal(SIGPIPE, SIG_IGN)
        var made: [any DispatchSourceSignal] = []
        let inbox = inbox
        for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let waiter = inbox.withLock { state -> CheckedContinuation<String, Never>? in
                    guard state.received == nil else { return nil }
                    state.received = name
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: name)
            }
            source.resume()
            made.append(source)
        }
        sources = made
    }

    /// Suspends until SIGTERM or SIGINT has arrived (at once if one came already); returns its name. Called once.
    func wait() async -> String {
        await withCheckedContinuation { continuation in
            let received = inbox.withLock { state -> String? in
                if state.received == nil { state.waiter = continuation }
                return state.received
            }
            if let received { continuation.resume(returning: received) }
        }
    }
}
