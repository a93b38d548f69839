/// A map bounded by the bytes of its values, evicting with CLOCK (second chance): each entry has a reference bit
/// that a hit sets; to make room, a hand sweeps the slots, clearing set bits and evicting the first entry whose bit
/// was already clear. An entry read again before the hand comes round survives, so a skewed workload keeps its hot
/// entries while a scan of cold ones only cycles through the rest; a hit costs a dictionary look-up and a bit.
///
/// Admission: while there is room every value is stored. Once the cache is full, a new key is stored only on its
/// second try within the last few thousand refusals (a doorkeeper, as in TinyLFU): a key read once in a great
/// while would only push out another entry to be pushed out itself before it is read again. Over a set far larger
/// than the cache, read uniformly, that is nearly every miss: storing each one would evict another for the same hit
/// rate (docs/performance.md, "Figures behind the code"). A key read again soon, as a hot one is, gets in on its
/// second miss.
///
/// Every value that leaves (removed, replaced, evicted or emptied out) is handed to `removed` as it goes. A value may
/// also record uses made without the cache (read where its owner keeps it): the hand asks `takeUse` before evicting
/// it, and a value used since the hand last passed gets its second chance as a set bit would.
///
/// Not thread-safe: ``ExactCache`` guards it with its lock.
struct ClockCache<Key: Hashable, Value> {
    /// One place in the sweep; a free place holds no key. Its fields are read in place (`slots[i].value`): with
    /// optional slots, a read unwrapped and copied the whole slot, key included.
    private struct Slot {
        var key: Key?
        var value: Value?
        var bytes: Int
        var referenced: Bool

        static var free: Slot { Slot(key: nil, value: nil, bytes: 0, referenced: false) }
    }

    /// The most bytes the values may add up to.
    let capacity: Int
    private(set) var bytes = 0
    private var slots: [Slot] = []
    private var index: [Key: Int] = [:]
    private var free: [Int] = []
    private var hand = 0
    /// The hashes of keys refused lately, one per slot (0: none), direct-mapped by the hash's low bits.
    private var refused: [Int]
    /// Told of every value as it leaves.
    private let removed: (Value) -> Void
    /// Whether the value was used outside the cache since last asked (and forgets it).
    private let takeUse: (Value) -> Bool

    /// How many refusals the doorkeeper remembers, at most.
    static var doorkeeperSlots: Int { 8192 }

    init(
        capacity: Int, removed: @escaping (Value) -> Void = { _ in }, takeUse: @escaping (Value) -> Bool = { _ in false }
    ) {
        self.capacity = max(0, capacity)
        self.removed = removed
        self.takeUse = takeUse
        refused = []
    }

    var count: Int { index.count }

    /// Whether `key` is held; not a use (it does not protect the entry from eviction).
    func contains(_ key: Key) -> Bool {
        index[key] != nil
    }

    /// Where `key` is held, for ``value(for:near:)``; not a use.
    func position(of key: Key) -> Int? {
        index[key]
    }

    /// Where `key` is held and its value, marking it recently used.
    mutating func entry(for key: Key) -> (position: Int, value: Value)? {
        guard let position = index[key], let value = slots[position].value else { return nil }
        slots[position].referenced = true
        return (position, value)
    }

    /// The value for `key`, marking it recently used.
    mutating func value(for key: Key) -> Value? {
        guard let position = index[key] else { return nil }
        slots[position].referenced = true
        return slots[position].value
    }

    /// The value for `key`, like ``value(for:)``, looked for first at `position` (where ``position(of:)`` found it
    /// a moment ago): while the entry is still there this costs no search. A slot holds one key, and a key is held in
    /// one slot, so the slot at `position` holding `key` is the entry a search would find.
    mutating func value(for key: Key, near position: Int?) -> Value? {
        guard let position, slots.indices.contains(position), slots[position].key == key else { return value(for: key) }
        slots[position].referenced = true
        return slots[position].value
    }

    /// Stores `value` under `key`, replacing any older value, and evicts until the values fit. A value larger
    /// than the whole capacity is not stored (and the older value is removed); nor is a new key that would need
    /// room made for it on its first try (the doorkeeper, above).
    ///
    /// - Returns: Whether the value was stored.
    @discardableResult
    mutating func set(_ value: Value, for key: Key, bytes size: Int) -> Bool {
        let replacing = remove(key)
        guard size <= capacity else { return false }
        if !replacing, bytes + size > capacity, !admitsOnSecondTry(key) { return false }
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
        return true
    }

    /// Changes `key`'s value in place, if held, to one that takes `size` bytes, and evicts other entries until the
    /// values fit. `change` may decline (return false), and then nothing changes; so does a size larger than the
    /// whole capacity. Not a use (the entry's reference bit is left as it is). The value replaced leaves (`removed`).
    ///
    /// - Returns: Whether the value was changed.
    @discardableResult
    mutating func update(_ key: Key, bytes size: Int, _ change: (inout Value) -> Bool) -> Bool {
        guard let position = index[key], size <= capacity, let old = slots[position].value else { return false }
        var value = old
        guard change(&value) else { return false }
        slots[position].value = value
        removed(old)
        bytes += size - slots[position].bytes
        slots[position].bytes = size
        while bytes > capacity, index.count > 1 {
            evictOne(sparing: position)
        }
        return true
    }

    /// True when `key` was refused lately (and forgets it); else remembers it and returns false.
    private mutating func admitsOnSecondTry(_ key: Key) -> Bool {
        if refused.isEmpty { refused = Array(repeating: 0, count: Self.doorkeeperSlots) }
        let hash = key.hashValue == 0 ? 1 : key.hashValue
        let slot = hash & (refused.count - 1)
        if refused[slot] == hash {
            refused[slot] = 0
            return true
        }
        refused[slot] = hash
        return false
    }

    /// Removes `key`'s value, if any.
    ///
    /// - Returns: Whether there was one.
    @discardableResult
    mutating func remove(_ key: Key) -> Bool {
        guard let position = index.removeValue(forKey: key) else { return false }
        bytes -= slots[position].bytes
        if let value = slots[position].value { removed(value) }
        slots[position] = .free
        free.append(position)
        return true
    }

    /// Removes everything.
    mutating func removeAll() {
        for slot in slots {
            if let value = slot.value { removed(value) }
        }
        slots.removeAll()
        index.removeAll()
        free.removeAll()
        refused.removeAll()
        bytes = 0
        hand = 0
    }

    private mutating func evictOne(sparing spared: Int = -1) {
        while true {
            if hand >= slots.count { hand = 0 }
            defer { hand += 1 }
            guard hand != spared, let key = slots[hand].key else { continue }
            if slots[hand].referenced || takeUse(slots[hand].value!) {
                slots[hand].referenced = false
            } else {
                remove(key)
                return
            }
        }
    }
}
