/// What a cache must know about the stream of change announcements to fill itself safely (docs/caching.md, "Next:
/// exact caches across instances"): which tokens were announced since a read began, and whether the stream stayed
/// whole.
///
/// A read from the database that began at ``mark()`` may fill the cache only when ``mayFill(_:since:)`` says so:
/// - some listening connection was known to be current when the read began (a fence had come back on it),
/// - the stream has not broken since (no lost connection, no "drop everything"), which ``generation`` counts,
/// - and no announcement of the entry's token was handled since the read began.
///
/// A change that committed before the read's statement began is in the read; one that committed after is
/// announced on the listener's connection, which was listening before the read began, and is either handled
/// before the fill (then the fill is refused) or after it (then it removes the entry). The fill and the handling
/// of announcements take the same lock (``ExactCache``), so there is no third case.
///
/// Memory is bounded: the last `retained` announced tokens are remembered with their sequence numbers; a read that
/// began before the oldest of those may not fill at all.
///
/// Not thread-safe: ``ExactCache`` guards it with its lock.
struct InvalidationLog {
    /// Where a read began.
    struct Mark: Sendable, Equatable {
        let generation: UInt64
        let sequence: UInt64
        let current: Bool
    }

    /// Counts breaks in the stream: lost connections and "drop everything" announcements.
    private(set) var generation: UInt64 = 0
    /// Counts handled tokens.
    private(set) var sequence: UInt64 = 0
    /// The listening connections on which a fence came back (and none has timed out or been lost since), by the
    /// cache's numbers for them: the event listener's and each event loop's (``ExactCache``).
    private var currentConnections: Set<Int> = []

    /// Whether some listening connection is current: reads may fill only then.
    var current: Bool { !currentConnections.isEmpty }
    private let retained: Int
    private var lastSeen: [String: UInt64] = [:]
    private var order: [(token: String, sequence: UInt64)] = []
    private var orderStart = 0
    /// Reads that began at or before this sequence number may not fill: tokens they would need were forgotten.
    private var forgottenThrough: UInt64 = 0

    init(retained: Int = 8192) {
        self.retained = max(1, retained)
    }

    func mark() -> Mark {
        Mark(generation: generation, sequence: sequence, current: current)
    }

    func mayFill(_ token: String, since mark: Mark) -> Bool {
        guard mark.current, mark.generation == generation, mark.sequence >= forgottenThrough else { return false }
        return (lastSeen[token] ?? 0) <= mark.sequence
    }

    /// Records an announced token.
    mutating func announce(_ token: String) {
        sequence += 1
        lastSeen[token] = sequence
        order.append((token, sequence))
        if order.count - orderStart > retained {
            let (oldest, number) = order[orderStart]
            orderStart += 1
            if lastSeen[oldest] == number { lastSeen.removeValue(forKey: oldest) }
            forgottenThrough = number
            if orderStart > retained {
                order.removeFirst(orderStart)
                orderStart = 0
            }
        }
    }

    /// The stream broke or said "drop everything": no read that began before may fill.
    mutating func breakStream() {
        generation += 1
        lastSeen.removeAll()
        order.removeAll()
        orderStart = 0
        forgottenThrough = sequence
    }

    /// Whether a fence came back on `connection` and it has not failed since.
    func isCurrent(_ connection: Int) -> Bool {
        currentConnections.contains(connection)
    }

    /// A fence came back on `connection`: every announcement committed before it was sent is handled. Returns
    /// true when that makes the connection current, and then the stream breaks: the connection began to listen
    /// only lately, so changes committed before may have been announced to nobody, and what the cache holds or
    /// reads that began before may fill can be stale. The caller empties the cache (docs/caching.md, "A fence
    /// connection per event loop").
    mutating func fenceReturned(on connection: Int) -> Bool {
        guard currentConnections.insert(connection).inserted else { return false }
        breakStream()
        return true
    }

    /// A fence on `connection` did not come back in time: it serves nothing until one does. Fills of reads already
    /// begun stay safe (the connection, if it is lost, breaks the stream), so nothing else changes.
    mutating func fenceTimedOut(on connection: Int) {
        currentConnections.remove(connection)
    }

    /// `connection` was lost: announcements may have gone unheard, so the stream breaks (the caller empties the
    /// cache).
    mutating func connectionLost(_ connection: Int) {
        currentConnections.remove(connection)
        breakStream()
    }
}
