import Crypto
import Foundation

/// The encryption keys for secrets at rest, from `FBS_ENCRYPTION_KEYS` (`kid:base64-32-bytes,...`).
///
/// The first key encrypts; every key decrypts, so a key can be rotated in front of the old one, the data
/// re-encrypted, and then the old key removed. Each ciphertext is stored with the id of the key that sealed it
/// and is bound to its row by associated data, so a ciphertext copied to another row does not open.
public struct Keyring: Sendable {
    /// One named key.
    public struct Key: Sendable {
        /// The key id stored beside each ciphertext.
        public let id: String
        fileprivate let bytes: [UInt8]
    }

    /// A ciphertext with the id of its key.
    public struct Sealed: Sendable, Equatable {
        /// The id of the key that sealed it.
        public let keyID: String
        /// Nonce, ciphertext and tag, concatenated.
        public let box: [UInt8]

        /// Creates a sealed value from stored parts.
        public init(keyID: String, box: [UInt8]) {
            self.keyID = keyID
            self.box = box
        }
    }

    /// The keys, the encrypting one first.
    public let keys: [Key]

    /// Parses a key ring. Each entry is `id:base64` with an id of 1–32 characters `[A-Za-z0-9_-]` and 32 bytes of
    /// key. Problems are described without showing any key material.
    public init(parsing text: String) throws(KeyringError) {
        var keys: [Key] = []
        for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard let colon = trimmed.firstIndex(of: ":") else {
                throw KeyringError("entry \(index + 1) is not kid:base64")
            }
            let id = String(trimmed[..<colon])
            guard (1...32).contains(id.count),
                id.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-" })
            else {
                throw KeyringError("entry \(index + 1) has an invalid key id")
            }
            let encoded = String(trimmed[trimmed.index(after: colon)...])
            guard let bytes = Data(base64Encoded: encoded).map(Array.init) ?? Base64URL.decode(encoded),
                bytes.count == AESGCM.keyByteCount
            else {
                throw KeyringError("key \(id) is not 32 bytes of base64")
            }
            guard !keys.contains(where: { $0.id == id }) else { throw KeyringError("key id \(id) appears twice") }
            keys.append(Key(id: id, bytes: bytes))
        }
        guard !keys.isEmpty else { throw KeyringError("no keys") }
        self.keys = keys
    }

    /// A ring of one fresh random key, for sandboxes and tests; `text` gives its settings form.
    public static func generate(id: String = "k1") -> (ring: Keyring, text: String) {
        let encoded = Data(SecureRandom.bytes(AESGCM.keyByteCount)).base64EncodedString()
        let text = "\(id):\(encoded)"
        // A freshly made entry always parses.
        guard let ring = try? Keyring(parsing: text) else { preconditionFailure("generated key ring did not parse") }
        return (ring, text)
    }

    /// The id of the encrypting key.
    public var currentKeyID: String { keys[0].id }

    /// Encrypts with the first key, binding the ciphertext to `context` (for example the row id).
    public func seal(_ plaintext: [UInt8], context: String) throws -> Sealed {
        let key = keys[0]
        let box = try AESGCM.seal(plaintext, key: key.bytes, authenticating: Array(context.utf8))
        return Sealed(keyID: key.id, box: box.combined)
    }

    /// Decrypts with the key named in `sealed`.
    /// - Throws: ``KeyringError`` when the key is not in the ring or the ciphertext does not open for `context`.
    public func open(_ sealed: Sealed, context: String) throws(KeyringError) -> [UInt8] {
        guard let key = keys.first(where: { $0.id == sealed.keyID }) else {
            throw KeyringError("key \(sealed.keyID) is not in FBS_ENCRYPTION_KEYS")
        }
        do {
            let box = try AESGCM.SealedBox(combined: sealed.box)
            return try AESGCM.open(box, key: key.bytes, authenticating: Array(context.utf8))
        } catch {
            throw KeyringError("a secret sealed with key \(sealed.keyID) did not decrypt")
        }
    }
}

/// A key ring problem; the message never contains key material.
public struct KeyringError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}
