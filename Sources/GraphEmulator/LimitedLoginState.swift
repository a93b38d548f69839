import Crypto

/// The emulator as Limited Login's Facebook: its RS256 signing keys, the key set's `Cache-Control`, and the
/// uninstalls received. Held in ``EmulatorStore/limited`` (under the emulator's lock).
///
/// Keys are made on first use (an RSA key takes a moment to generate, and most emulators never need one). The
/// first key of ``keys`` signs; every key of ``keys`` is in the key set; a rotation puts a new key first and, unless
/// asked to keep them, moves the others to ``retired`` (out of the set, so tokens they signed stop verifying at
/// the service, as when Facebook drops a key). ``unlisted`` signs tokens with a key that is in no set at all.
struct LimitedLoginState: Sendable {
    /// The keys in the key set, the signing one first.
    var keys: [SigningKey] = []
    /// Keys rotated out of the set (the uninstall endpoint still recognizes their tokens).
    var retired: [SigningKey] = []
    /// A key never published, for tokens the service must refuse as `bad_signature`.
    var unlisted: SigningKey?
    /// `max-age` of the key set's `Cache-Control: public, max-age=N`; nil sends no `Cache-Control` at all.
    var maxAge: Int? = 3600
    /// Every uninstall the endpoint accepted, oldest first.
    var uninstalls: [LimitedUninstall] = []
    /// Tokens minted so far.
    var minted = 0
    /// Tokens the direct refresh handed out so far.
    var refreshed = 0

    /// The signing key, made on first use.
    mutating func signingKey() throws -> SigningKey {
        if let first = keys.first { return first }
        let made = try SigningKey.generate()
        keys = [made]
        return made
    }

    /// The never-published key, made on first use.
    mutating func unlistedKey() throws -> SigningKey {
        if let unlisted { return unlisted }
        let made = try SigningKey.generate()
        unlisted = made
        return made
    }

    /// Puts a new signing key first; without `keepPrevious` the others leave the set.
    mutating func rotate(keepPrevious: Bool) throws -> SigningKey {
        let made = try SigningKey.generate()
        if keepPrevious {
            keys.insert(made, at: 0)
        } else {
            retired += keys
            keys = [made]
        }
        return made
    }

    /// The key (in the set, or retired) with this `kid`.
    func key(withID kid: String) -> SigningKey? {
        (keys + retired).first { $0.keyID == kid }
    }
}

/// One RS256 key with its `kid` (40 hex digits, the shape of Facebook's: the start of the SHA-256 of the modulus).
struct SigningKey: Sendable {
    let keyID: String
    let key: RSAPrivateKey

    static func generate() throws -> SigningKey {
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey.generate(bitCount: 2048)
        } catch {
            throw EmulatorError("could not generate an RSA key")
        }
        return SigningKey(keyID: String(SHA256.hexDigest(key.publicKey.modulus).prefix(40)), key: key)
    }

    /// The key as a JWK: `{"kid", "kty", "alg", "use", "n", "e"}`, in the order Facebook's key set lists them.
    var jwk: JSONValue {
        .object([
            ("kid", .string(keyID)), ("kty", .string("RSA")), ("alg", .string("RS256")), ("use", .string("sig")),
            ("n", .string(Base64URL.encode(key.publicKey.modulus))),
            ("e", .string(Base64URL.encode(key.publicKey.exponent))),
        ])
    }
}

/// An uninstall the emulator's endpoint accepted.
public struct LimitedUninstall: Sendable, Equatable {
    /// The app it was for.
    public let appID: String
    /// The user (`sub`).
    public let userID: String
    /// The token's `jti`.
    public let tokenID: String
    /// When, on the emulator's clock.
    public let at: Int64
}
