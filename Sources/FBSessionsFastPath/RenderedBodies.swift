import Foundation
import Support

/// The last body rendered for each of a bounded number of keys, kept with the value it was rendered from.
///
/// Rendering a status or an owner's list is a pure function of the sessions it shows, so a kept body is reused
/// only when the value is equal to the one it was rendered from: it can never say something the value does not.
/// Values answered from the exact cache share their strings and arrays with the cache's entry, so comparing an
/// unchanged value mostly compares storage identities; an owner's list of eight sessions then costs a comparison
/// instead of eight JSON renderings (docs/performance.md, "Figures behind the code").
///
/// Memory: at most `limit` keys; when full, a new key empties it (the hot keys come back at once).
/// Thread safety: one lock, held for the comparison; rendering runs outside it.
final class RenderedBodies<Key: Hashable & Sendable, Value: Equatable & Sendable>: Sendable {
    private let kept = Locked<[Key: (value: Value, body: [UInt8])]>([:])
    private let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// The body of `value`: the kept one when it was rendered from an equal value, else `render(value)`, kept.
    ///
    /// An equal value replaces the kept one (the body stays): when the cache's entry was filled again with equal
    /// contents (two requests that missed at once each fill it), the kept value would otherwise hold the old
    /// entry's storage, and every later comparison would go field by field instead of by identity.
    func body(_ key: Key, for value: Value, render: (Value) -> [UInt8]) -> [UInt8] {
        let reused: [UInt8]? = kept.withLock { kept in
            guard let index = kept.index(forKey: key), kept.values[index].value == value else { return nil }
            kept.values[index].value = value
            return kept.values[index].body
        }
        if let reused { return reused }
        let body = render(value)
        kept.withLock { kept in
            if kept.count >= limit, kept[key] == nil { kept.removeAll(keepingCapacity: true) }
            kept[key] = (value, body)
        }
        return body
    }

    /// The number of keys kept (tests).
    var count: Int { kept.withLock { $0.count } }

    /// The value kept for `key` (tests).
    func keptValue(_ key: Key) -> Value? { kept.withLock { $0[key]?.value } }
}
