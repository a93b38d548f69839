/// An error thrown by the Crypto module.
///
/// `description` is generic and never contains key, nonce or message bytes. OpenSSL's own error text, when
/// there is one, goes to `debugDescription`.
public struct CryptoError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    /// What went wrong. New codes may be added without breaking source compatibility.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKeySize, invalidNonce, authenticationFailure, malformedInput, invalidKey, library
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The key is not 16, 24 or 32 bytes long (the product uses 32).
        public static let invalidKeySize = Code(.invalidKeySize)
        /// The nonce has an unsupported length.
        public static let invalidNonce = Code(.invalidNonce)
        /// The ciphertext, tag, nonce, associated data or key do not match: the box was tampered with or the
        /// wrong key or associated data was given.
        public static let authenticationFailure = Code(.authenticationFailure)
        /// The input is not well formed (for example a combined box shorter than nonce plus tag).
        public static let malformedInput = Code(.malformedInput)
        /// An RSA key is malformed or outside what is accepted (modulus of 2048 to 8192 bits, an odd public
        /// exponent from 3 to 2^64 - 1).
        public static let invalidKey = Code(.invalidKey)
        /// OpenSSL reported an unexpected failure; `debugDescription` carries its error text.
        public static let library = Code(.library)

        /// The code's name, for example `authenticationFailure`.
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// Extra detail for debugging (OpenSSL error text, sizes). Never key or message bytes.
    let detail: String?

    init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// A generic, secret-free description.
    public var description: String {
        "CryptoError.\(code)"
    }

    /// The description plus any OpenSSL error text.
    public var debugDescription: String {
        guard let detail else { return description }
        return "\(description): \(detail)"
    }
}
