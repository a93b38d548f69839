internal import CCrypto

extension CryptoError {
    /// A `.library` error for a failed OpenSSL call, carrying (and clearing) the thread's OpenSSL error queue.
    static func library(_ operation: String) -> CryptoError {
        CryptoError(.library, detail: "\(operation) failed: \(drainOpenSSLErrors())")
    }
}

/// Pops every entry of this thread's OpenSSL error queue and renders them as one line.
func drainOpenSSLErrors() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 {
            break
        }
        var buffer = [CChar](repeating: 0, count: 256)
        buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, $0.count) }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        messages.append(String(decoding: bytes, as: UTF8.self))
    }
    return messages.isEmpty ? "no OpenSSL error queued" : messages.joined(separator: "; ")
}
