import Crypto

/// Random strings in the shapes Facebook uses: alphanumeric tokens and codes, numeric ids, trace ids.
enum RandomText {
    private static let alphanumerics = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `count` characters from [A-Za-z0-9], uniformly (rejection sampling over random bytes).
    static func alphanumeric(_ count: Int) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(count)
        while output.count < count {
            for byte in SecureRandom.bytes(count + 16) where byte < 248 && output.count < count {
                output.append(alphanumerics[Int(byte % 62)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `count` decimal digits, the first not zero.
    static func digits(_ count: Int) -> String {
        var output = ""
        while output.count < count {
            for byte in SecureRandom.bytes(count + 8) where byte < 250 && output.count < count {
                let digit = byte % 10
                if output.isEmpty && digit == 0 { continue }
                output += String(digit)
            }
        }
        return output
    }

    /// A user access token: `EAA` and 180 alphanumerics, like Facebook's.
    static func userToken() -> String { "EAA" + alphanumeric(180) }

    /// An authorization code: `AQ` and 250 alphanumerics.
    static func code() -> String { "AQ" + alphanumeric(250) }

    /// An `fbtrace_id` / `x-fb-trace-id`: 11 alphanumerics.
    static func traceID() -> String { alphanumeric(11) }

    /// Whether `text` could be a token the emulator issues (so an unknown one "could not be decrypted").
    static func looksLikeToken(_ text: String) -> Bool {
        text.hasPrefix("EAA") && text.utf8.count > 20 && text.utf8.allSatisfy { alphanumerics.contains($0) }
    }

    /// Whether `text` is non-empty and only digits.
    static func isNumeric(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
