import Foundation
import Support

/// The bounded queue of finished spans and the one thread that exports them (the SDK's batch span processor,
/// https://opentelemetry.io/docs/specs/otel/trace/sdk/#batching-processor).
///
/// Ending a span is an append under the lock, or, when ``maxQueueSize`` spans already wait, a drop that is counted:
/// a request never waits on the collector and memory never grows past the queue. The thread wakes when a batch is
/// full or the schedule delay passed, takes up to a batch, and exports it outside the lock; a failed, refused or
/// timed-out export drops its spans (counted) and the thread goes on with the next.
///
/// Sendable: every mutable field is guarded by `condition` (an `NSCondition`, because the thread sleeps on it).
final class BatchSpanProcessor: @unchecked Sendable {
    private let exporter: any SpanExporter
    let maxQueueSize: Int
    private let maxBatchSize: Int
    private let scheduleDelay: Double
    private let exportTimeout: Double
    private let dropped: CounterSeries?
    private let exported: CounterSeries?

    private let condition = NSCondition()
    private var queue: [SpanData] = []
    private var exporting = false
    private var flushRequests = 0
    private var stopping = false
    private var stopped = false

    init(
        exporter: any SpanExporter, maxQueueSize: Int, maxBatchSize: Int, scheduleDelay: Double, exportTimeout: Double,
        dropped: CounterSeries?, exported: CounterSeries?
    ) {
        self.exporter = exporter
        self.maxQueueSize = max(1, maxQueueSize)
        self.maxBatchSize = max(1, min(maxBatchSize, maxQueueSize))
        self.scheduleDelay = scheduleDelay
        self.exportTimeout = exportTimeout
        self.dropped = dropped
        self.exported = exported
        queue.reserveCapacity(self.maxQueueSize)
        // Not kept: a running `Thread` keeps itself (and its closure, which holds this processor) alive, and lets go
        // of both when `run` returns. A stored `Thread` would be a cycle that outlives the thread.
        let thread = Thread { [self] in run() }
        thread.name = "otel-export"
        thread.start()
    }

    /// Queues a finished span, or drops it (counted) when the queue is full or the processor stopped.
    func append(_ span: SpanData) {
        condition.lock()
        guard !stopping, queue.count < maxQueueSize else {
            condition.unlock()
            dropped?.increment()
            return
        }
        queue.append(span)
        if queue.count >= maxBatchSize { condition.broadcast() }
        condition.unlock()
    }

    /// Spans waiting now.
    var queued: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count
    }

    func flush(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        flushRequests += 1
        condition.broadcast()
        while !queue.isEmpty || exporting {
            if stopped || !condition.wait(until: deadline) { break }
        }
        flushRequests -= 1
        return queue.isEmpty && !exporting
    }

    func shutdown(timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
    }

    /// The export thread.
    private func run() {
        condition.lock()
        while true {
            let due = Date(timeIntervalSinceNow: scheduleDelay)
            // Sleeps (releasing the lock) until a batch is full, the delay passed, a flush wants what is queued,
            // or the processor stops.
            while queue.count < maxBatchSize, !stopping, flushRequests == 0 || queue.isEmpty {
                if !condition.wait(until: due) { break }
            }
            if queue.isEmpty {
                if stopping { break }
                continue
            }
            let count = min(maxBatchSize, queue.count)
            let batch = Array(queue.prefix(count))
            queue.removeFirst(count)
            exporting = true
            condition.unlock()
            let accepted = exporter.export(batch, timeout: exportTimeout)
            if accepted { exported?.increment(by: Double(batch.count)) } else { dropped?.increment(by: Double(batch.count)) }
            condition.lock()
            exporting = false
            condition.broadcast()
        }
        stopped = true
        // Whatever arrived after the last batch (none, since `append` refuses once stopping) is dropped here.
        condition.broadcast()
        condition.unlock()
    }
}
