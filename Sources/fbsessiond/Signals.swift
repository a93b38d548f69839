import Dispatch
import Foundation

/// SIGTERM and SIGINT without a C signal handler: the signals are ignored at the C level and read from dispatch
/// sources on a global queue, so the waiting code is ordinary Swift.
///
/// Made before the service says it is listening: from then on a SIGTERM stops it in order, even one sent the moment
/// the address is printed (a supervisor, or a test, that stops what it just started). Before, the signals were
/// caught only once the service began to wait, and a SIGTERM in between ended the process with nothing stopped.
///
/// Thread safety: the sources are made in `init` and never touched again; ``Inbox`` guards the rest.
final class TerminationSignals: @unchecked Sendable {
    /// The first signal, and the task waiting for it.
    private final class Inbox: @unchecked Sendable {
        let lock = NSLock()
        var received: String?
        var waiter: CheckedContinuation<String, Never>?
    }

    private let inbox = Inbox()
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
                let waiter = inbox.lock.withLock { () -> CheckedContinuation<String, Never>? in
                    guard inbox.received == nil else { return nil }
                    inbox.received = name
                    defer { inbox.waiter = nil }
                    return inbox.waiter
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
            let received = inbox.lock.withLock { () -> String? in
                if inbox.received == nil { inbox.waiter = continuation }
                return inbox.received
            }
            if let received { continuation.resume(returning: received) }
        }
    }
}
