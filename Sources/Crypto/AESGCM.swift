internal import CCrypto

/// AES-GCM authenticated encryption (NIST SP 800-38D) through OpenSSL's EVP interface.
///
/// The product uses 32-byte keys (AES-256) and random 12-byte nonces. 16- and 24-byte keys and other nonce
/// lengths are accepted so that the published test vectors can be checked.
/// Thread safety: stateless; each call uses its own `CipherContext`.
public enum AESGCM {
    /// The standard (and default) nonce length in bytes.
    public static let nonceByteCount = 12
    /// The authentication tag length in bytes.
    public static let tagByteCount = 16
    /// The key length the product uses (AES-256).
    public static let keyByteCount = 32
    /// Nonce lengths `seal` and `open` accept. Anything but 12 exists only for published test vectors.
    public static let allowedNonceSizes = 8...128

    /// Encrypts and authenticates `plaintext`, and authenticates `aad`.
    /// - Parameters:
    ///   - plaintext: the bytes to encrypt.
    ///   - key: 32 bytes (16 or 24 also work).
    ///   - nonce: the nonce; `nil` (the default) draws 12 random bytes. Never reuse a nonce with one key.
    ///   - aad: associated data that is authenticated but not encrypted (for example a row id).
    /// - Returns: the sealed box.
    /// - Throws: `CryptoError.invalidKeySize`, `.invalidNonce`, `.malformedInput` (input over 2 GiB) or `.library`.
    public static func seal(
        _ plaintext: [UInt8],
        key: [UInt8],
        nonce: [UInt8]? = nil,
        authenticating aad: [UInt8]
    ) throws -> SealedBox {
        let cipher = try cipher(forKey: key)
        let nonce = nonce ?? SecureRandom.bytes(nonceByteCount)
        guard allowedNonceSizes.contains(nonce.count) else {
            throw CryptoError(.invalidNonce, detail: "nonce of \(nonce.count) bytes")
        }
        let context = try CipherContext()
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        try context.withContext { ctx in
            try check(EVP_EncryptInit_ex(ctx, cipher, nil, nil, nil), "EVP_EncryptInit_ex")
            try check(
                EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil),
                "EVP_CTRL_GCM_SET_IVLEN"
            )
            try check(EVP_EncryptInit_ex(ctx, nil, nil, key, nonce), "EVP_EncryptInit_ex(key, nonce)")
            try update(ctx, input: aad, output: nil, operation: "EVP_EncryptUpdate(aad)", EVP_EncryptUpdate)
            try update(ctx, input: plaintext, output: &ciphertext, operation: "EVP_EncryptUpdate", EVP_EncryptUpdate)
            var scratch = [UInt8](repeating: 0, count: 16)
            var written: Int32 = 0
            try check(EVP_EncryptFinal_ex(ctx, &scratch, &written), "EVP_EncryptFinal_ex")
            try check(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag), "GCM_GET_TAG")
        }
        return try SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// Checks and decrypts `box`.
    /// - Parameters:
    ///   - box: the sealed box.
    ///   - key: the key it was sealed with.
    ///   - aad: the associated data it was sealed with.
    /// - Returns: the plaintext.
    /// - Throws: `CryptoError.authenticationFailure` when anything was altered or the key or `aad` differ;
    ///   `.invalidKeySize`, `.malformedInput` or `.library` otherwise.
    public static func open(_ box: SealedBox, key: [UInt8], authenticating aad: [UInt8]) throws -> [UInt8] {
        let cipher = try cipher(forKey: key)
        let context = try CipherContext()
        var plaintext = [UInt8](repeating: 0, count: box.ciphertext.count)
        var tag = box.tag
        let verified = try context.withContext { ctx in
            try check(EVP_DecryptInit_ex(ctx, cipher, nil, nil, nil), "EVP_DecryptInit_ex")
            try check(
                EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(box.nonce.count), nil),
                "EVP_CTRL_GCM_SET_IVLEN"
            )
            try check(EVP_DecryptInit_ex(ctx, nil, nil, key, box.nonce), "EVP_DecryptInit_ex(key, nonce)")
            try update(ctx, input: aad, output: nil, operation: "EVP_DecryptUpdate(aad)", EVP_DecryptUpdate)
            try update(
                ctx, input: box.ciphertext, output: &plaintext, operation: "EVP_DecryptUpdate", EVP_DecryptUpdate
            )
            try check(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tag), "GCM_SET_TAG")
            var scratch = [UInt8](repeating: 0, count: 16)
            var written: Int32 = 0
            return EVP_DecryptFinal_ex(ctx, &scratch, &written) == 1
        }
        guard verified else {
            // A failed tag check queues no useful error; clear whatever is there so it cannot leak into a later call.
            _ = drainOpenSSLErrors()
            for index in plaintext.indices {
                plaintext[index] = 0
            }
            throw CryptoError(.authenticationFailure)
        }
        return plaintext
    }

    private static func cipher(forKey key: [UInt8]) throws -> OpaquePointer {
        let cipher: OpaquePointer?
        switch key.count {
        case 32: cipher = EVP_aes_256_gcm()
        case 24: cipher = EVP_aes_192_gcm()
        case 16: cipher = EVP_aes_128_gcm()
        default: throw CryptoError(.invalidKeySize, detail: "key of \(key.count) bytes, expected 32")
        }
        guard let cipher else {
            throw CryptoError.library("EVP_aes_*_gcm")
        }
        return cipher
    }

    private typealias UpdateFunction = (
        OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?, UnsafePointer<UInt8>?, Int32
    ) -> Int32

    /// Feeds `input` through an EVP update call; with `output == nil` the bytes are associated data.
    private static func update(
        _ ctx: OpaquePointer,
        input: [UInt8],
        output: UnsafeMutablePointer<UInt8>?,
        operation: String,
        _ function: UpdateFunction
    ) throws {
        guard !input.isEmpty else { return }
        guard let length = Int32(exactly: input.count) else {
            throw CryptoError(.malformedInput, detail: "\(input.count) bytes is more than one call can take")
        }
        var written: Int32 = 0
        try check(function(ctx, output, &written, input, length), operation)
        guard written == length else {
            throw CryptoError.library("\(operation) wrote \(written) of \(length) bytes")
        }
    }

    private static func check(_ status: Int32, _ operation: String) throws {
        guard status == 1 else {
            throw CryptoError.library(operation)
        }
    }
}
