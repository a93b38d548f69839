internal import CCrypto

/// An RSA key pair that makes RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256), through OpenSSL 3's EVP interface.
///
/// For the Graph emulator, which plays Facebook's Limited Login and signs its `AuthenticationToken`s, and for tests
/// that forge tokens with a key outside the key set. The service itself only verifies (``RSAPublicKey``).
///
/// Ownership: holds one `EVP_PKEY` (``EVPKey``), freed with the last copy of the value. The private key never
/// leaves OpenSSL: there is no way to read it out.
/// Thread safety: immutable; any number of threads may sign with one key at once.
public struct RSAPrivateKey: Sendable {
    let key: EVPKey
    /// The public half.
    public let publicKey: RSAPublicKey

    /// Generates a new key pair with public exponent 65537.
    /// - Parameter bitCount: the modulus size; 2048 (the default) or more, up to 8192.
    /// - Throws: `CryptoError.invalidKey` for a size outside 2048...8192, `.library` when generation fails.
    public static func generate(bitCount: Int = 2048) throws -> RSAPrivateKey {
        guard (RSAPublicKey.minimumBitCount...RSAPublicKey.maximumBitCount).contains(bitCount) else {
            throw CryptoError(.invalidKey, detail: "modulus of \(bitCount) bits")
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, StaticCString.rsa, nil) else {
            throw CryptoError.library("EVP_PKEY_CTX_new_from_name(RSA)")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var made: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bitCount)) > 0,
            EVP_PKEY_generate(context, &made) == 1, let made
        else {
            throw CryptoError.library("EVP_PKEY_generate(RSA)")
        }
        let key = EVPKey(taking: made)
        return RSAPrivateKey(key: key, publicKey: try RSAPublicKey(key: key))
    }

    private init(key: EVPKey, publicKey: RSAPublicKey) {
        self.key = key
        self.publicKey = publicKey
    }

    /// The RS256 signature of `message`.
    /// - Parameter message: the bytes to sign (for a JWS, the ASCII of `header.payload`).
    /// - Returns: the signature, as long as the modulus.
    /// - Throws: `CryptoError.library` when OpenSSL fails.
    public func rs256Signature(for message: [UInt8]) throws -> [UInt8] {
        let context = try DigestContext()
        return try context.withContext { ctx in
            try key.withKey { pkey in
                guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
                    throw CryptoError.library("EVP_DigestSignInit")
                }
                return try message.withNonNullBytes { messageBytes, messageCount in
                    var length = 0
                    guard EVP_DigestSign(ctx, nil, &length, messageBytes, messageCount) == 1, length > 0 else {
                        throw CryptoError.library("EVP_DigestSign(length)")
                    }
                    var signature = [UInt8](repeating: 0, count: length)
                    let status = signature.withUnsafeMutableBufferPointer {
                        EVP_DigestSign(ctx, $0.baseAddress, &length, messageBytes, messageCount)
                    }
                    guard status == 1 else { throw CryptoError.library("EVP_DigestSign") }
                    return Array(signature.prefix(length))
                }
            }
        }
    }
}
