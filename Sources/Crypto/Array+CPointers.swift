extension Array where Element == UInt8 {
    /// Calls `body` with a pointer to the bytes that is never NULL, even for an empty array.
    ///
    /// Some OpenSSL entry points treat a NULL pointer as an error even when the length is zero (an empty HMAC
    /// key, for example), so an empty array is presented as a pointer to one zero byte with count 0.
    /// The pointer is valid only for the duration of `body`.
    func withNonNullBytes<Result>(
        _ body: (UnsafePointer<UInt8>, Int) throws -> Result
    ) rethrows -> Result {
        if isEmpty {
            var zero: UInt8 = 0
            return try withUnsafePointer(to: &zero) { try body($0, 0) }
        }
        return try withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else {
                preconditionFailure("non-empty array of \(buffer.count) bytes has no storage")
            }
            return try body(base, buffer.count)
        }
    }
}
