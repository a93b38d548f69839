internal import CCrypto

/// HMAC-SHA256 (RFC 2104, FIPS 198-1) through OpenSSL's one-shot `HMAC()`.
///
/// Thread safety: stateless; callable from any thread.
public enum HMACSHA256 {
    /// The authentication code length in bytes.
    public static let byteCount = 32

    /// Computes the HMAC-SHA256 of `message` under `key`.
    /// - Parameters:
    ///   - message: the authenticated bytes.
    ///   - key: the secret key, any length (keys longer than 64 bytes are hashed first, as RFC 2104 says).
    /// - Returns: the 32-byte authentication code.
    public static func authenticationCode(
        for message: some Collection<UInt8>,
        key: some Collection<UInt8>
    ) -> [UInt8] {
        mac(Array(message), key: Array(key))
    }

    /// Computes the HMAC-SHA256 of the UTF-8 bytes of `message` under `key`.
    /// - Parameters:
    ///   - message: the authenticated text.
    ///   - key: the secret key.
    /// - Returns: the 32-byte authentication code.
    public static func authenticationCode(for message: String, key: some Collection<UInt8>) -> [UInt8] {
        mac(Array(message.utf8), key: Array(key))
    }

    /// Checks `code` against the HMAC-SHA256 of `message` in constant time.
    /// - Parameters:
    ///   - code: the authentication code to check, usually received from a peer.
    ///   - message: the authenticated bytes.
    ///   - key: the secret key.
    /// - Returns: whether `code` is exactly the expected 32-byte code.
    public static func isValidAuthenticationCode(
        _ code: [UInt8],
        for message: some Collection<UInt8>,
        key: some Collection<UInt8>
    ) -> Bool {
        constantTimeEquals(code, authenticationCode(for: message, key: key))
    }

    private static func mac(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        guard let keyLength = Int32(exactly: key.count) else {
            preconditionFailure("HMAC key of \(key.count) bytes is beyond OpenSSL's int range")
        }
        var output = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let result = key.withNonNullBytes { keyBytes, _ in
            message.withNonNullBytes { messageBytes, messageCount in
                output.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha256(), keyBytes, keyLength, messageBytes, messageCount, out.baseAddress, &length)
                }
            }
        }
        guard result != nil, length == byteCount else {
            preconditionFailure("HMAC(SHA-256) failed: \(drainOpenSSLErrors())")
        }
        return output
    }
}
