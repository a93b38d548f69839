import Crypto
import Foundation

/// A nonce for Limited Login (`POST /v1/login-nonces`): 256 random bits in base64url, single use, bound to one
/// owner of one app (and optionally a slot), valid ``LimitedLogin/Configuration/nonceLifetime`` seconds. The app
/// hands it to the SDK (`LoginConfiguration(..., tracking: .limited, nonce:)`) and the token comes back carrying it
/// in its `nonce` claim. Only its SHA-256 is stored, so reading the database yields no usable nonce.
public struct LoginNonce: Sendable, Equatable {
    /// The owner it was issued for.
    public var owner: String
    /// The slot asked for, if any (a `slot` in the login itself wins).
    public var slot: Int?
    /// When it was made (database clock).
    public var createdAt: Date
    /// When it stops working (database clock).
    public var expiresAt: Date

    /// Creates a value.
    public init(owner: String, slot: Int?, createdAt: Date, expiresAt: Date) {
        self.owner = owner
        self.slot = slot
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// A new nonce's text.
    public static func newText() -> String {
        SecureRandom.token(byteCount: 32)
    }

    /// Whether `text` is shaped like a nonce this service issues (43 base64url characters), before any lookup.
    public static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == 43 && Base64URL.decode(text)?.count == 32
    }

    /// The stored form of a nonce: its SHA-256.
    public static func hash(_ text: String) -> [UInt8] {
        SHA256.hash(text)
    }
}

/// The nonce a login must use up, in the same transaction that stores the session (``LoginRecord/nonce``).
public struct NonceUse: Sendable, Equatable {
    /// ``LoginNonce/hash(_:)`` of the token's `nonce`.
    public var hash: [UInt8]
    /// The owner logging in; a nonce issued for another owner is refused.
    public var owner: String

    /// Creates a value.
    public init(hash: [UInt8], owner: String) {
        self.hash = hash
        self.owner = owner
    }
}

/// Why a token's nonce was refused (400). Nothing was stored; the nonce (if it is one) is unchanged.
public enum LoginNonceError: Error, Sendable, Equatable {
    /// Not a nonce this service issued for this owner of this app (unknown, malformed, another app's or another
    /// owner's).
    case invalid
    /// Used already by an earlier login.
    case used
    /// Expired (10 minutes) before it was used.
    case expired
}

/// Storage for login nonces (the port; `FBSessionsStorage.PostgresLoginNonceStore` is the adapter). Using a nonce
/// happens inside ``SessionStore/storeLogin(_:)``, in the login's own transaction. Times come from the store's
/// clock, so every instance agrees on expiry.
public protocol LoginNonceStore: Sendable {
    /// Stores a new nonce under its hash, valid for `lifetime` seconds, and drops a bounded batch of nonces that
    /// expired more than an hour ago.
    /// - Returns: the stored nonce with its times.
    func saveNonce(hash: [UInt8], appID: String, owner: String, slot: Int?, lifetime: Double) async throws
        -> LoginNonce
}
