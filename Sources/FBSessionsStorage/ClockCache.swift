/// A map bounded by the bytes of its values, evicting with CLOCK (second chance): each entry has a reference bit
/// that a hit sets; to make room, a hand sweeps the slots, clearing set bits and evicting the first entry whose bit
/// was already clear. An entry read again before the hand comes round survives, so a skewed workload keeps its hot
/// entries while a scan of cold ones only cycles through the rest; a hit costs a dictionary look-up and a bit.
///
/// Not thread-safe: ``ExactCache`` guards it with its lock.
struct ClockCache<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var bytes: Int
        var referenced: Bool
    }

    /// The most bytes the values may add up to.
    let capacity: Int
    private(set) var bytes = 0
    private var slots: [Slot?] = []
    private var index: [Key: Int] = [:]
    private var free: [Int] = []
    private var hand = 0

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { index.count }

    /// Whether `key` is held; not a use (it does not protect the entry from eviction).
    func contains(_ key: Key) -> Bool {
        index[key] != nil
    }

    /// The value for `key`, marking it recently used.
    mutating func value(for key: Key) -> Value? {
        guard let position = index[key] else { return nil }
        slots[position]!.referenced = true
        return slots[position]!.value
    }

    /// Stores `value` under `key`, replacing any older value, and evicts until the values fit. A value larger
    /// than the whole capacity is not stored (and the older value is removed).
    mutating func set(_ value: Value, for key: Key, bytes size: Int) {
        remove(key)
        guard size <= capacity else { return }
        while bytes + size > capacity, !index.isEmpty {
            evictOne()
        }
        let slot = Slot(key: key, value: value, bytes: size, referenced: false)
        let position: Int
        if let reused = free.popLast() {
            position = reused
            slots[position] = slot
        } else {
            position = slots.count
            slots.append(slot)
        }
        index[key] = position
        bytes += size
    }

    /// Removes `key`'s value, if any.
    mutating func remove(_ key: Key) {
        guard let position = index.removeValue(forKey: key) else { return }
        bytes -= slots[position]!.bytes
        slots[position] = nil
        free.append(position)
    }

    /// Removes everything.
    mutating func removeAll() {
        slots.removeAll()
        index.removeAll()
        free.removeAll()
        bytes = 0
        hand = 0
    }

    private mutating func evictOne() {
        while true {
            if hand >= slots.count { hand = 0 }
            defer { hand += 1 }
            guard let slot = slots[hand] else { continue }
            if slot.referenced {
                slots[hand]!.referenced = false
            } else {
                remove(slot.key)
                return
            }
        }
    }
}
