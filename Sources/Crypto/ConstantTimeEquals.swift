internal import CCrypto

/// Compares two byte strings in time that depends only on their length, not on where they differ.
///
/// Use it for MACs, hashes of API keys and any other secret-derived value. Different lengths compare unequal
/// at once; lengths are not secret here.
/// - Parameters:
///   - a: the first value.
///   - b: the second value.
/// - Returns: whether `a` and `b` hold the same bytes.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else {
        return false
    }
    return a.withNonNullBytes { left, count in
        b.withNonNullBytes { right, _ in
            CRYPTO_memcmp(left, right, count) == 0
        }
    }
}
