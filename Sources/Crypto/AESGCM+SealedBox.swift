extension AESGCM {
    /// The output of `AESGCM.seal`: nonce, ciphertext and authentication tag.
    ///
    /// Store `combined` (nonce ‖ ciphertext ‖ tag) and rebuild the box with `init(combined:)`.
    public struct SealedBox: Sendable, Hashable {
        /// The nonce the plaintext was sealed with (12 bytes unless a test vector chose otherwise).
        public let nonce: [UInt8]
        /// The encrypted bytes; as long as the plaintext.
        public let ciphertext: [UInt8]
        /// The 16-byte GCM authentication tag.
        public let tag: [UInt8]

        /// nonce ‖ ciphertext ‖ tag, the form to store or send.
        public var combined: [UInt8] {
            nonce + ciphertext + tag
        }

        /// Assembles a box from its parts.
        /// - Parameters:
        ///   - nonce: the nonce, `AESGCM.allowedNonceSizes` bytes.
        ///   - ciphertext: the encrypted bytes.
        ///   - tag: the 16-byte tag.
        /// - Throws: `CryptoError.invalidNonce` or `.malformedInput` for wrong sizes.
        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) throws {
            guard AESGCM.allowedNonceSizes.contains(nonce.count) else {
                throw CryptoError(.invalidNonce, detail: "nonce of \(nonce.count) bytes")
            }
            guard tag.count == AESGCM.tagByteCount else {
                throw CryptoError(.malformedInput, detail: "tag of \(tag.count) bytes, expected 16")
            }
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        /// Splits nonce ‖ ciphertext ‖ tag, assuming the standard 12-byte nonce.
        /// - Parameter combined: the bytes `combined` returned.
        /// - Throws: `CryptoError.malformedInput` when shorter than nonce plus tag (28 bytes).
        public init(combined: [UInt8]) throws {
            let overhead = AESGCM.nonceByteCount + AESGCM.tagByteCount
            guard combined.count >= overhead else {
                throw CryptoError(.malformedInput, detail: "combined box of \(combined.count) bytes")
            }
            let ciphertextEnd = combined.count - AESGCM.tagByteCount
            try self.init(
                nonce: Array(combined[0..<AESGCM.nonceByteCount]),
                ciphertext: Array(combined[AESGCM.nonceByteCount..<ciphertextEnd]),
                tag: Array(combined[ciphertextEnd...])
            )
        }
    }
}
