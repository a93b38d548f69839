/// Base64url (RFC 4648 §5): the URL- and filename-safe alphabet, written without `=` padding.
///
/// Pure Swift. `decode` accepts text with or without padding and rejects everything else: characters of the
/// standard alphabet (`+`, `/`), whitespace, misplaced `=`, impossible lengths and non-canonical final bits.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    /// Encodes `bytes` without padding.
    /// - Parameter bytes: the bytes.
    /// - Returns: the base64url text.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            append(value, characters: 4, to: &output)
            index += 3
        }
        switch input.count - index {
        case 1:
            append(UInt32(input[index]) << 16, characters: 2, to: &output)
        case 2:
            append(UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8, characters: 3, to: &output)
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base64url text, padded or not.
    /// - Parameter text: the encoded text.
    /// - Returns: the bytes, or `nil` when `text` is not valid base64url.
    public static func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        if let firstPad = characters.firstIndex(of: UInt8(ascii: "=")) {
            let padding = characters.count - firstPad
            guard padding <= 2, characters.count % 4 == 0,
                characters[firstPad...].allSatisfy({ $0 == UInt8(ascii: "=") })
            else {
                return nil
            }
            characters.removeLast(padding)
        }
        let remainder = characters.count % 4
        guard remainder != 1 else {
            return nil
        }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = decodeTable[Int(character)]
            guard value != 0xff else {
                return nil
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits must be zero, so that every byte string has exactly one encoding.
        guard accumulator == 0 else {
            return nil
        }
        return output
    }

    private static func append(_ value: UInt32, characters: Int, to output: inout [UInt8]) {
        for position in 0..<characters {
            let shift = UInt32(18 - 6 * position)
            output.append(alphabet[Int((value >> shift) & 0x3f)])
        }
    }
}
