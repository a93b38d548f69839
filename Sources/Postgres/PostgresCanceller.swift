internal import CLibPQ
import Foundation

/// Sends PostgreSQL cancel requests (`PQcancel`) on threads of its own, a few at a time, so that no request and no
/// pool worker ever waits for one.
///
/// `PQcancel` opens a new connection to the server, sends the cancel request and waits until the server closes
/// it; on a frozen server (stopped, swapping, behind a dead link) that wait lasts until the server comes back, or
/// forever. So a connection that gave up on a statement hands its cancel request here and moves on. At most
/// ``threadCount`` requests are in progress at once and at most ``capacity`` wait; beyond that a request is
/// dropped (counted in ``statistics``): the connection is closed anyway, and the server ends the statement at its
/// own `statement_timeout` or when it next writes to the closed socket.
///
/// Ownership: each request's `PGcancel` is owned here from ``submit(_:)`` on and freed with `PQfreeCancel` once
/// sent or dropped. The threads start on first use and live as long as the process.
/// Thread safety: ``submit(_:)`` and ``statistics`` may be called from any thread; the queue is guarded by a
/// condition lock.
/// Sendable: the queue and counts are guarded by `condition` (an `NSCondition`, not a `Locked`: the threads sleep
/// on it until a request comes), which the compiler cannot see.
final class PostgresCanceller: @unchecked Sendable {
    /// One pending cancel request: a `PGcancel*` from `PQgetCancel`, independent of its connection.
    ///
    /// Sendable: the C pointer is handed over whole to the canceller, which alone uses and frees it.
    struct Request: @unchecked Sendable {
        /// The `PGcancel*`.
        let handle: OpaquePointer

        /// Wraps a `PGcancel*`; the canceller frees it.
        init(_ handle: OpaquePointer) {
            self.handle = handle
        }
    }

    /// How many requests the canceller has handled.
    struct Statistics: Sendable, Equatable {
        /// Requests whose `PQcancel` returned, successfully or not.
        var sent = 0
        /// Requests dropped because ``capacity`` were already waiting.
        var dropped = 0
        /// Requests waiting or in progress now.
        var pending = 0
    }

    /// The one canceller of the process.
    static let shared = PostgresCanceller(threadCount: 2, capacity: 64)

    /// The most requests in progress at once.
    let threadCount: Int
    /// The most requests waiting for a thread.
    let capacity: Int
    private let condition = NSCondition()
    private var queue: [Request] = []
    private var started = 0
    private var idle = 0
    private var counts = Statistics()

    /// Creates a canceller; its threads start on first use.
    ///
    /// - Parameters:
    ///   - threadCount: The most requests in progress at once (at least 1).
    ///   - capacity: The most requests waiting (at least 1).
    init(threadCount: Int, capacity: Int) {
        self.threadCount = max(1, threadCount)
        self.capacity = max(1, capacity)
    }

    /// What the canceller has done so far.
    var statistics: Statistics {
        condition.lock()
        defer { condition.unlock() }
        return counts
    }

    /// Queues a cancel request, or drops it (freeing it) when ``capacity`` requests already wait. Never blocks.
    ///
    /// - Parameter request: The request; owned by the canceller from now on.
    func submit(_ request: Request) {
        condition.lock()
        guard queue.count < capacity else {
            counts.dropped += 1
            condition.unlock()
            PQfreeCancel(request.handle)
            return
        }
        queue.append(request)
        counts.pending += 1
        let startsThread = idle == 0 && started < threadCount
        if startsThread {
            started += 1
        }
        let name = "pg-cancel-\(started - 1)"
        condition.signal()
        condition.unlock()
        if startsThread {
            let thread = Thread { [self] in
                Thread.current.name = name  // Set here: on Linux a name set before start() is lost. At most 15 bytes.
                threadMain()
            }
            thread.start()
        }
    }

    private func threadMain() {
        while true {
            condition.lock()
            idle += 1
            while queue.isEmpty {
                condition.wait()
            }
            idle -= 1
            let request = queue.removeFirst()
            condition.unlock()
            var message = [CChar](repeating: 0, count: 256)
            _ = PQcancel(request.handle, &message, Int32(message.count))
            PQfreeCancel(request.handle)
            condition.lock()
            counts.sent += 1
            counts.pending -= 1
            condition.unlock()
        }
    }
}
