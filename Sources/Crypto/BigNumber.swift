internal import CCrypto

/// Owns one OpenSSL `BIGNUM`.
///
/// Ownership: allocated by `init(bytes:)` with `BN_bin2bn`, or taken over by `init(taking:)`; freed exactly once in
/// `deinit` with `BN_free`. The pointer leaves this class only for the duration of a `withNumber` call.
/// Thread safety: none needed; each value is made, read and dropped by one caller.
final class BigNumber {
    private let number: OpaquePointer

    /// Reads unsigned big-endian bytes (leading zero bytes are allowed and ignored).
    /// - Throws: `CryptoError.malformedInput` for more than `Int32.max` bytes, `.library` when OpenSSL fails.
    init(bytes: [UInt8]) throws {
        guard let length = Int32(exactly: bytes.count) else {
            throw CryptoError(.malformedInput, detail: "\(bytes.count) bytes is too long for a number")
        }
        guard let made = bytes.withNonNullBytes({ pointer, _ in BN_bin2bn(pointer, length, nil) }) else {
            throw CryptoError.library("BN_bin2bn")
        }
        number = made
    }

    /// Takes over `number`.
    init(taking number: OpaquePointer) {
        self.number = number
    }

    deinit {
        BN_free(number)
    }

    /// Calls `body` with the raw number; the pointer must not escape `body`.
    func withNumber<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(number)
    }

    /// The number of significant bits (0 for zero).
    var bitCount: Int {
        Int(BN_num_bits(number))
    }

    /// Whether the number is odd.
    var isOdd: Bool {
        BN_is_odd(number) == 1
    }

    /// The value as unsigned big-endian bytes, without leading zero bytes (empty for zero).
    var bytes: [UInt8] {
        var output = [UInt8](repeating: 0, count: (bitCount + 7) / 8)
        guard !output.isEmpty else { return [] }
        let written = output.withUnsafeMutableBufferPointer { BN_bn2bin(number, $0.baseAddress) }
        guard written == output.count else {
            preconditionFailure("BN_bn2bin wrote \(written) of \(output.count) bytes")
        }
        return output
    }
}
