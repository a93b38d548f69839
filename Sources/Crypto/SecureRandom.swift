internal import CCrypto

/// Cryptographically secure random bytes from OpenSSL's `RAND_bytes`.
///
/// Thread safety: callable from any thread (OpenSSL 3 keeps per-thread DRBGs).
public enum SecureRandom {
    /// Returns `count` random bytes.
    ///
    /// A failing `RAND_bytes` means the system has no entropy source; there is no safe way to go on, so this
    /// stops the process with OpenSSL's error text rather than returning weak bytes.
    /// - Parameter count: how many bytes, 0 or more.
    /// - Returns: the bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: negative count \(count)")
        var output = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let chunk = min(count - offset, Int(Int32.max))
            let status = output.withUnsafeMutableBufferPointer { buffer in
                RAND_bytes(buffer.baseAddress.map { $0 + offset }, Int32(chunk))
            }
            guard status == 1 else {
                preconditionFailure("RAND_bytes(\(chunk)) failed: \(drainOpenSSLErrors())")
            }
            offset += chunk
        }
        return output
    }

    /// Returns a random token: `byteCount` random bytes in unpadded base64url (URL- and header-safe).
    /// - Parameter byteCount: how many random bytes; the default 32 gives 256 bits and 43 characters.
    /// - Returns: the token text.
    public static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(byteCount))
    }
}
