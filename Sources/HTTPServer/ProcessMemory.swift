internal import CMallocShims
import Foundation
import Support

/// glibc's allocator settings for a long-running service, and giving freed memory back (docs/performance.md).
///
/// glibc gives each thread that allocates under contention its own arena (up to 8 per core), and keeps freed
/// memory inside them; with libmicrohttpd's threads, the database pool's threads and Swift's cooperative threads
/// all allocating, the resident size after a burst of load stayed 10 to 20 MiB above the idle figure for good.
///
/// The allocator calls go through `CMallocShims` (`<malloc.h>` is not in Swift's Glibc module).
///
/// Thread safety: `limitArenas` must run before other threads start (first thing in `main`); `startReclaiming`
/// once; the timer runs on a serial Dispatch queue.
public enum ProcessMemory {
    /// Caps the number of malloc arenas. Call before any thread is started.
    public static func limitArenas(_ count: Int) {
        _ = fbs_malloc_set_arena_max(Int32(clamping: count))
    }

    /// Every `interval` seconds, when the arenas' free memory changed by `minimumBytes` or more since the last
    /// trim (a burst of load came and went), returns the free pages of every arena to the system
    /// (`malloc_trim`). The check is one call of `mallinfo2`; the trim takes each arena's lock briefly, so it
    /// runs only after such a change, not every second while idle.
    public static func startReclaiming(every interval: Double = 1, minimumBytes: Int = 1 << 20) {
        // The arenas' free bytes after the last trim. Only the timer's serial queue touches it, so the lock is never
        // contended (two uncontended locks a second).
        let last = Locked(0)
        let timer = reclaimer.timer
        timer.schedule(
            deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 250)))
        timer.setEventHandler {
            // fordblks: the bytes free inside the arenas, given back or not.
            let free = fbs_malloc_free_bytes()
            guard abs(free - last.withLock({ $0 })) >= minimumBytes else { return }
            _ = fbs_malloc_trim()
            let after = fbs_malloc_free_bytes()
            last.withLock { $0 = after }
        }
        timer.resume()
    }

    private static let reclaimer = Reclaimer()
}

/// The reclaimer's timer; set up once by ``ProcessMemory/startReclaiming(every:minimumBytes:)``.
///
/// Sendable: libdispatch's timers are safe to use from any thread, but its Swift overlay does not mark
/// `DispatchSourceTimer` `Sendable`.
private final class Reclaimer: @unchecked Sendable {
    let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "memory-reclaimer"))
}
