internal import CCrypto

/// Owns one OpenSSL `EVP_MD_CTX` (a digest-sign or digest-verify operation).
///
/// Ownership: allocated by `init` with `EVP_MD_CTX_new`, freed exactly once by `deinit` with `EVP_MD_CTX_free`.
/// The pointer never leaves this class except for the duration of a `withContext` call.
/// Thread safety: none; one operation on one thread, then discarded.
final class DigestContext {
    private let context: OpaquePointer

    init() throws {
        guard let context = EVP_MD_CTX_new() else {
            throw CryptoError.library("EVP_MD_CTX_new")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// Calls `body` with the raw context; the pointer must not escape `body`.
    func withContext<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(context)
    }
}
