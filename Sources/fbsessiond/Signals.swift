import Dispatch
import Foundation

/// Waiting for SIGTERM or SIGINT without a C signal handler: the signals are ignored at the C level and read from
/// dispatch sources on a global queue, so the waiting code is ordinary Swift.
enum Signals {
    /// Suspends until SIGTERM or SIGINT arrives; returns its name.
    static func waitForTermination() async -> String {
        signal(SIGPIPE, SIG_IGN)
        let box = SourceBox()
        return await withCheckedContinuation { continuation in
            let once = Once()
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    if once.claim() { continuation.resume(returning: name) }
                }
                source.resume()
                box.sources.append(source)
            }
        }
    }

    /// Keeps the dispatch sources alive for the life of the process.
    private final class SourceBox: @unchecked Sendable {
        var sources: [any DispatchSourceSignal] = []
    }

    private final class Once: @unchecked Sendable {
        private let lock = NSLock()
        private var claimed = false
        func claim() -> Bool {
            lock.withLock {
                defer { claimed = true }
                return !claimed
            }
        }
    }
}
