internal import CCrypto

/// Owns one OpenSSL `EVP_CIPHER_CTX`.
///
/// Ownership: allocated by `init` with `EVP_CIPHER_CTX_new`, freed exactly once by `deinit` with
/// `EVP_CIPHER_CTX_free`. The pointer never leaves this class except for the duration of a `withContext` call.
/// Thread safety: none; one operation (one seal or open) on one thread, then discarded.
final class CipherContext {
    private let context: OpaquePointer

    init() throws {
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError.library("EVP_CIPHER_CTX_new")
        }
        self.context = context
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
    }

    /// Calls `body` with the raw context; the pointer must not escape `body`.
    func withContext<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(context)
    }
}
