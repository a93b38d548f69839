import Foundation

/// The bytes of log lines on their way to standard error, written by a background thread.
///
/// Writing each request's line with its own `write(2)` on the thread that answered the request was a system call
/// per request on the hot path (docs/performance.md). Lines are now appended to this buffer and written in one
/// `write(2)` (or a few) by a background thread at most ``flushInterval`` later; records at `warning` and above
/// flush at once, and so does a buffer past ``maxBufferedBytes``. Lines stay whole: the buffer only ever holds
/// whole lines and a partial `write(2)` is continued. ``flush()`` runs at process exit (`atexit`), and the
/// service calls it after its shutdown, so SIGTERM loses nothing.
///
/// Thread safety: `append` and `flush` may be called from any thread; the buffer is guarded by `condition`, and
/// one writer at a time is guaranteed by `writing`, so lines keep their order.
///
/// Sendable: `pending` is guarded by `condition` (an `NSCondition`, not a ``Locked``: the writer thread sleeps on
/// it until a line comes), which the compiler cannot see.
final class StandardErrorBuffer: @unchecked Sendable {
    /// The process's buffer.
    static let shared = StandardErrorBuffer()

    /// The longest a line waits before it is written.
    static let flushInterval: TimeInterval = 0.005
    /// A buffer this large is written by the caller at once.
    static let maxBufferedBytes = 64 * 1024

    private let condition = NSCondition()
    private var pending: [UInt8] = []
    /// The bytes being written, swapped with `pending` (so each buffer keeps its capacity); held by one writer at a
    /// time for the whole write.
    private let writing = Locked<[UInt8]>([])

    private init() {
        pending.reserveCapacity(Self.maxBufferedBytes)
        let thread = Thread { [self] in flushLoop() }
        thread.name = "log-writer"
        thread.start()
        atexit(flushLogAtExitThunk)
    }

    /// Appends one record's line; writes at once when `urgent` or the buffer is full.
    func append(_ record: LogRecord, urgent: Bool) {
        append(urgent: urgent) { record.appendJSONLine(to: &$0) }
    }

    /// Appends one whole line, newline included; writes at once when `urgent` or the buffer is full.
    func append(_ line: UnsafeBufferPointer<UInt8>, urgent: Bool) {
        append(urgent: urgent) { $0.append(contentsOf: line) }
    }

    private func append(urgent: Bool, _ write: (inout [UInt8]) -> Void) {
        condition.lock()
        let wasEmpty = pending.isEmpty
        write(&pending)
        let full = pending.count >= Self.maxBufferedBytes
        if wasEmpty, !full, !urgent {
            condition.signal()  // the first line since the last write: start its interval
        }
        condition.unlock()
        if urgent || full { flush() }
    }

    /// Writes everything buffered so far, and returns once it is written.
    func flush() {
        // `condition` is taken inside `writing`'s lock, and never the other way round (`append` lets go of it
        // before it flushes), so the two cannot deadlock.
        writing.withLock { spare in
            condition.lock()
            swap(&pending, &spare)
            condition.unlock()
            guard !spare.isEmpty else { return }
            spare.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = Glibc.write(2, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0, errno == EINTR || errno == EAGAIN {
                        continue
                    } else {
                        break  // standard error is gone; nothing else can be done with the lines
                    }
                }
            }
            spare.removeAll(keepingCapacity: true)
        }
    }

    private func flushLoop() {
        while true {
            condition.lock()
            while pending.isEmpty {
                condition.wait()
            }
            condition.unlock()
            Thread.sleep(forTimeInterval: Self.flushInterval)
            flush()
        }
    }
}
