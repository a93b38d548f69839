extension Array where Element == String? {
    /// Calls `body` with a C string pointer for each element (`nil` stays a NULL pointer).
    ///
    /// All strings are copied into one NUL-separated buffer that stays alive for the whole call, so the
    /// pointers are valid for exactly the duration of `body` and must not escape it.
    ///
    /// - Parameter body: Receives one pointer per element, in order.
    /// - Returns: What `body` returns.
    func withCStringArray<Result>(_ body: ([UnsafePointer<CChar>?]) throws -> Result) rethrows -> Result {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(reduce(0) { $0 + ($1?.utf8.count ?? 0) + 1 })
        var offsets: [Int?] = []
        offsets.reserveCapacity(count)
        for element in self {
            guard let element else {
                offsets.append(nil)
                continue
            }
            offsets.append(buffer.count)
            buffer.append(contentsOf: element.utf8)  // A bulk copy for native strings, not byte by byte.
            buffer.append(0)
        }
        return try buffer.withUnsafeBufferPointer { bytes in
            try bytes.withMemoryRebound(to: CChar.self) { storage in
                let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                    guard let offset, let base = storage.baseAddress else { return nil }
                    return base + offset
                }
                return try body(pointers)
            }
        }
    }
}
