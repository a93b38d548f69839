import Foundation

/// A bounded, process-local layer over the shared picture cache that keeps picture bytes by key and ETag.
///
/// It never decides on its own what to serve: the database says which ETag is current for a key (and whether
/// the session may see it) on every request, and this layer only saves transferring the bytes again. A picture
/// erased or replaced in the database is therefore never served from here, by any instance. Least recently used
/// entries go first once `maxEntries` or `maxBytes` would be passed; pictures over a quarter of `maxBytes` are
/// not kept.
///
/// Thread safety: every method may be called from any thread (one lock).
public final class PictureMemoryCache: @unchecked Sendable {
    private struct Entry {
        let etag: String
        let body: [UInt8]
        var lastUse: UInt64
    }

    /// Most pictures kept.
    public let maxEntries: Int
    /// Most bytes kept.
    public let maxBytes: Int
    private let lock = NSLock()
    private var entries: [PictureKey: Entry] = [:]
    private var bytes = 0
    private var clock: UInt64 = 0

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
        lock.withLock {
            guard var entry = entries[key], entry.etag == etag else { return nil }
            clock += 1
            entry.lastUse = clock
            entries[key] = entry
            return entry.body
        }
    }

    /// Keeps bytes for `key` under `etag`, replacing what was kept, and evicts the least recently used beyond
    /// the bounds.
    public func store(_ key: PictureKey, etag: String, body: [UInt8]) {
        guard body.count <= maxBytes / 4 else { return }
        lock.withLock {
            if let old = entries.removeValue(forKey: key) { bytes -= old.body.count }
            while !entries.isEmpty, entries.count >= maxEntries || bytes + body.count > maxBytes {
                guard let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) else { break }
                bytes -= oldest.value.body.count
                entries.removeValue(forKey: oldest.key)
            }
            clock += 1
            entries[key] = Entry(etag: etag, body: body, lastUse: clock)
            bytes += body.count
        }
    }

    /// Pictures kept now.
    public var count: Int { lock.withLock { entries.count } }

    /// Bytes kept now.
    public var byteCount: Int { lock.withLock { bytes } }
}
