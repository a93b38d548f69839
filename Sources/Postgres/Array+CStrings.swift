extension Array where Element == String? {
    /// Calls `body` with a C string pointer for each element (`nil` stays a NULL pointer).
    ///
    /// All strings are copied into one NUL-separated buffer that stays alive for the whole call, so the
    /// pointers are valid for exactly the duration of `body` and must not escape it.
    ///
    /// - Parameter body: Receives one pointer per element, in order.
    /// - Returns: What `body` returns.
    func withCStringArray<Result>(_ body: ([UnsafePointer<CChar>?]) throws -> Result) rethrows -> Result {
        var buffer: [CChar] = []
        buffer.reserveCapacity(reduce(0) { $0 + ($1?.utf8.count ?? 0) + 1 })
        var offsets: [Int?] = []
        offsets.reserveCapacity(count)
        for element in self {
            guard let element else {
                offsets.append(nil)
                continue
            }
            offsets.append(buffer.count)
            for byte in element.utf8 { buffer.append(CChar(bitPattern: byte)) }
            buffer.append(0)
        }
        return try buffer.withUnsafeBufferPointer { storage in
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                guard let offset, let base = storage.baseAddress else { return nil }
                return base + offset
            }
            return try body(pointers)
        }
    }
}
