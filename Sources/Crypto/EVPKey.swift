internal import CCrypto

/// Owns one OpenSSL `EVP_PKEY` (an RSA key, public or a key pair).
///
/// Ownership: takes over the reference it is created with (from `EVP_PKEY_fromdata` or `EVP_PKEY_generate`) and
/// frees it exactly once in `deinit` with `EVP_PKEY_free`. The pointer never leaves this class except for the
/// duration of a `withKey` call.
/// Thread safety: OpenSSL 3 lets several threads sign or verify with one `EVP_PKEY` at once as long as none changes
/// it, and nothing here changes a key once it is made.
/// Sendable: the key is a C pointer, whose rule above (shared for reading, never changed) the compiler cannot see.
final class EVPKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// Takes over `key`.
    init(taking key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Calls `body` with the raw key; the pointer must not escape `body`.
    func withKey<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(key)
    }

    /// The key's size in bits (the RSA modulus's).
    var bitCount: Int {
        Int(EVP_PKEY_get_bits(key))
    }

    /// The big-number parameter `name` of the key (`n`, `e`, ...), as unsigned big-endian bytes.
    /// - Throws: `CryptoError.library` when the key has no such parameter.
    func bigNumberParameter(_ name: String) throws -> [UInt8] {
        var found: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &found) == 1, let found else {
            throw CryptoError.library("EVP_PKEY_get_bn_param(\(name))")
        }
        return BigNumber(taking: found).bytes
    }
}
