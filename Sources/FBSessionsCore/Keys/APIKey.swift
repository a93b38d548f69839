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
    /// Its rate limit in requests per second (each instance's token bucket holds twice as many), or nil for none
    /// (docs/api-contract.md, "Rate limits").
    public let rateLimit: Int?

    /// Creates a key value.
    public init(id: String, appID: String, scopes: [Scope], createdAt: Date, revokedAt: Date?, rateLimit: Int? = nil) {
        self.id = id
        self.appID = appID
        self.scopes = scopes
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.rateLimit = rateLimit
    }

    /// The largest rate limit a key may have, in requests per second (the CLI refuses more).
    public static let maxRateLimit = 1_000_000

    /// An operator's `--rate` text: a whole number of requests per second from 1 to ``maxRateLimit``, or `none`
    /// (no limit: `.success(nil)`); else a message saying what is wrong.
    public static func parseRateLimit(_ text: String) -> Result<Int?, RateLimitTextError> {
        if text == "none" { return .success(nil) }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return .failure(RateLimitTextError(
                "--rate must be a whole number of requests per second from 1 to \(maxRateLimit), or none; got \(text)"))
        }
        guard let rate = Int(text), rate <= maxRateLimit else {
            return .failure(RateLimitTextError("--rate may be at most \(maxRateLimit) requests per second; got \(text)"))
        }
        guard rate > 0 else {
            return .failure(RateLimitTextError("--rate must be at least 1 request per second (use none for no limit)"))
        }
        return .success(rate)
    }
}

/// Why a `--rate` text was refused.
public struct RateLimitTextError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
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
