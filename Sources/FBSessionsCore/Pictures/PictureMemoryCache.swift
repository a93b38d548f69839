import Foundation
import Support

/// A bounded, process-local layer over the shared picture cache that keeps picture bytes by key and ETag.
///
/// It never decides on its own what to serve: the database says which ETag is current for a key (and whether
/// the session may see it) on every request, and this layer only saves transferring the bytes again. A picture
/// erased or replaced in the database is therefore never served from here, by any instance. Least recently used
/// entries go first once `maxEntries` or `maxBytes` would be passed; pictures over a quarter of `maxBytes` are
/// not kept.
///
/// Thread safety: every method may be called from any thread (one lock).
public final class PictureMemoryCache: Sendable {
    private struct Entry {
        let etag: String
        let body: [UInt8]
        var lastUse: UInt64
    }

    private struct State {
        var entries: [PictureKey: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    /// Most pictures kept.
    public let maxEntries: Int
    /// Most bytes kept.
    public let maxBytes: Int
    private let state = Locked(State())

    /// Creates an empty cache.
    /// - Parameters:
    ///   - maxEntries: most pictures kept; default 1024.
    ///   - maxBytes: most bytes kept; default 64 MiB.
    public init(maxEntries: Int = 1024, maxBytes: Int = 64 << 20) {
        self.maxEntries = max(1, maxEntries)
        self.maxBytes = max(1, maxBytes)
    }

    /// The bytes kept for `key`, if their ETag is `etag`.
    public func body(_ key: PictureKey, etag: String) -> [UInt8]? {
        state.withLock { state in
            guard var entry = state.entries[key], entry.etag == etag else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry.body
        }
    }

    /// Keeps bytes for `key` under `etag`, replacing what was kept, and evicts the least recently used beyond
    /// the bounds.
    public func store(_ key: PictureKey, etag: String, body: [UInt8]) {
        guard body.count <= maxBytes / 4 else { return }
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) { state.bytes -= old.body.count }
            while !state.entries.isEmpty, state.entries.count >= maxEntries || state.bytes + body.count > maxBytes {
                guard let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) else { break }
                state.bytes -= oldest.value.body.count
                state.entries.removeValue(forKey: oldest.key)
            }
            state.clock += 1
            state.entries[key] = Entry(etag: etag, body: body, lastUse: state.clock)
            state.bytes += body.count
        }
    }

    /// Pictures kept now.
    public var count: Int { state.withLock { $0.entries.count } }

    /// Bytes kept now.
    public var byteCount: Int { state.withLock { $0.bytes } }
}
