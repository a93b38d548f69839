internal import CCrypto

/// An RSA public key, made from its modulus and public exponent (a JWK's `n` and `e`, RFC 7518 §6.3.1), that checks
/// RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3) through OpenSSL 3's EVP interface.
///
/// Accepted keys have a modulus of 2048 to 8192 bits and an odd public exponent from 3 up to 64 bits; anything
/// else is refused when the key is made, so a key set cannot hand the service a weak or absurdly large key.
///
/// Ownership: holds one `EVP_PKEY` (``EVPKey``), freed with the last copy of the value.
/// Thread safety: immutable; any number of threads may check signatures with one key at once.
public struct RSAPublicKey: Sendable {
    /// The smallest modulus accepted, in bits.
    public static let minimumBitCount = 2048
    /// The largest modulus accepted, in bits.
    public static let maximumBitCount = 8192

    let key: EVPKey
    /// The modulus, unsigned big-endian, without leading zero bytes.
    public let modulus: [UInt8]
    /// The public exponent, unsigned big-endian, without leading zero bytes.
    public let exponent: [UInt8]

    /// Makes a key from its modulus and public exponent.
    /// - Parameters:
    ///   - modulus: `n`, unsigned big-endian (leading zero bytes are ignored).
    ///   - exponent: `e`, unsigned big-endian.
    /// - Throws: `CryptoError.invalidKey` for a modulus outside 2048...8192 bits or an exponent that is even,
    ///   below 3 or longer than 64 bits; `.library` when OpenSSL refuses the key.
    public init(modulus: [UInt8], exponent: [UInt8]) throws {
        let n = try BigNumber(bytes: modulus)
        let e = try BigNumber(bytes: exponent)
        guard (Self.minimumBitCount...Self.maximumBitCount).contains(n.bitCount), n.isOdd else {
            throw CryptoError(.invalidKey, detail: "modulus of \(n.bitCount) bits")
        }
        guard (2...64).contains(e.bitCount), e.isOdd else {
            throw CryptoError(.invalidKey, detail: "public exponent of \(e.bitCount) bits")
        }
        key = try Self.makeKey(n: n, e: e)
        self.modulus = n.bytes
        self.exponent = e.bytes
    }

    /// Wraps a key made here (from a generated key pair); `modulus` and `exponent` are read from it.
    init(key: EVPKey) throws {
        self.key = key
        modulus = try key.bigNumberParameter("n")
        exponent = try key.bigNumberParameter("e")
    }

    /// The modulus size in bits.
    public var bitCount: Int { key.bitCount }

    /// Whether `signature` is an RS256 signature of `message` under this key. A signature of the wrong length, or
    /// one OpenSSL cannot even parse, is simply invalid.
    /// - Parameters:
    ///   - signature: the signature bytes (as long as the modulus).
    ///   - message: the signed bytes (for a JWS, the ASCII of `header.payload`).
    /// - Returns: true only for a valid signature.
    public func isValidRS256Signature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == (bitCount + 7) / 8 else { return false }
        let valid: Bool
        do {
            let context = try DigestContext()
            valid = context.withContext { ctx in
                key.withKey { pkey in
                    guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
                    return signature.withNonNullBytes { signatureBytes, signatureCount in
                        message.withNonNullBytes { messageBytes, messageCount in
                            EVP_DigestVerify(ctx, signatureBytes, signatureCount, messageBytes, messageCount) == 1
                        }
                    }
                }
            }
        } catch {
            valid = false
        }
        if !valid {
            // A refused signature leaves OpenSSL's reasons queued; clear them so they cannot leak into a later call.
            _ = drainOpenSSLErrors()
        }
        return valid
    }

    /// `EVP_PKEY_fromdata` with `n` and `e` (`OSSL_PKEY_PARAM_RSA_N`, `OSSL_PKEY_PARAM_RSA_E`): OpenSSL 3's way to
    /// make a key from its parts, without the deprecated `RSA_*` functions.
    private static func makeKey(n: BigNumber, e: BigNumber) throws -> EVPKey {
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.library("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        let pushed = n.withNumber { OSSL_PARAM_BLD_push_BN(builder, StaticCString.rsaModulus, $0) } == 1
            && e.withNumber { OSSL_PARAM_BLD_push_BN(builder, StaticCString.rsaExponent, $0) } == 1
        guard pushed, let parameters = OSSL_PARAM_BLD_to_param(builder) else {
            throw CryptoError.library("OSSL_PARAM_BLD_push_BN")
        }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, StaticCString.rsa, nil) else {
            throw CryptoError.library("EVP_PKEY_CTX_new_from_name(RSA)")
        }
        defer { EVP_PKEY_CTX_free(context) }
        // EVP_PKEY_PUBLIC_KEY, spelled out: the composite macro does not import into Swift.
        let selection = Int32(
            OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS
                | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)
        var made: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &made, selection, parameters) == 1,
            let made
        else {
            throw CryptoError.library("EVP_PKEY_fromdata")
        }
        return EVPKey(taking: made)
    }
}
