internal import CCrypto

/// SHA-256 (FIPS 180-4) through OpenSSL's `EVP_Digest`, with the method fetched once.
///
/// Thread safety: stateless; callable from any thread.
public enum SHA256 {
    /// The digest length in bytes.
    public static let byteCount = 32

    /// Hashes `data`.
    /// - Parameter data: the message bytes.
    /// - Returns: the 32-byte digest.
    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        if let digest = data.withContiguousStorageIfAvailable({ digest(of: $0) }) {
            return digest
        }
        return Array(data).withUnsafeBufferPointer { digest(of: $0) }
    }

    /// Hashes the UTF-8 bytes of `string`.
    /// - Parameter string: the message.
    /// - Returns: the 32-byte digest.
    public static func hash(_ string: String) -> [UInt8] {
        var string = string
        return string.withUTF8 { digest(of: $0) }
    }

    /// Hashes `data` and renders the digest as 64 lowercase hex digits.
    /// - Parameter data: the message bytes.
    /// - Returns: the hex digest.
    public static func hexDigest(_ data: some Collection<UInt8>) -> String {
        Hex.encode(hash(data))
    }

    /// Hashes the UTF-8 bytes of `string` and renders the digest as 64 lowercase hex digits.
    /// - Parameter string: the message.
    /// - Returns: the hex digest.
    public static func hexDigest(_ string: String) -> String {
        Hex.encode(hash(string))
    }

    /// SHA-256 fetched from OpenSSL's providers once. `EVP_sha256()` is looked up again in the provider store, under
    /// its lock, every time a digest starts with it (OpenSSL 3's implicit fetch): a third of the time of the short
    /// digest every keyed request makes (`CachedKeyStore`). A fetched method is immutable and shared by all threads.
    nonisolated(unsafe) private static let method: OpaquePointer = {
        guard let fetched = EVP_MD_fetch(nil, "SHA256", nil) else {
            preconditionFailure("EVP_MD_fetch(SHA256) failed: \(drainOpenSSLErrors())")
        }
        return fetched
    }()

    private static func digest(of message: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let status = output.withUnsafeMutableBufferPointer { out in
            EVP_Digest(message.baseAddress, message.count, out.baseAddress, &length, method, nil)
        }
        guard status == 1, length == byteCount else {
            preconditionFailure("EVP_Digest(SHA-256) failed (status \(status)): \(drainOpenSSLErrors())")
        }
        return output
    }
}
