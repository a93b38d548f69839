import Crypto
import Foundation

/// An API key as stored: an id, a SHA-256 hash of the whole key, its app and scopes. The key itself is shown once
/// when made and never stored.
public struct APIKey: Sendable, Equatable {
    /// The public part of the key, also its row id (`key list`, `key revoke ID`).
    public let id: String
    /// The app it belongs to.
    public let appID: String
    /// What it may do.
    public let scopes: [Scope]
    /// When it was made.
    public let createdAt: Date
    /// When it was revoked, if it was.
    public let revokedAt: Date?

    /// Creates a key value.
    public init(id: String, appID: String, scopes: [Scope], createdAt: Date, revokedAt: Date?) {
        self.id = id
        self.appID = appID
        self.scopes = scopes
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Making and reading the text of API keys: `fbs_<id>_<secret>`, with a 12-character id and 256 random bits.
public enum APIKeyText {
    /// A new key: its id, its full text (shown once) and the hash to store.
    public static func generate() -> (id: String, key: String, hash: [UInt8]) {
        let id = "k" + Hex.encode(SecureRandom.bytes(6)).prefix(11)
        let key = "fbs_\(id)_\(SecureRandom.token(byteCount: 32))"
        return (id, key, SHA256.hash(key))
    }

    /// The id inside a presented key, or nil when the text is not shaped like a key.
    public static func id(in key: String) -> String? {
        let parts = key.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "fbs", parts[1].count == 12, !parts[2].isEmpty, key.utf8.count <= 128
        else { return nil }
        return String(parts[1])
    }

    /// Whether a presented key matches a stored hash, compared in constant time.
    public static func matches(_ key: String, hash: [UInt8]) -> Bool {
        constantTimeEquals(SHA256.hash(key), hash)
    }
}
