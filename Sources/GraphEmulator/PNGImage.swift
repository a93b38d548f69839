import Crypto

/// Small, deterministic PNG avatars: a head-and-shoulders figure on a striped background whose colours and
/// stripes derive from the user id, or Facebook's grey silhouette. Palette images, 2 bits per pixel, stored
/// (uncompressed) deflate blocks: valid PNGs with the right magic numbers, cheap to make at any size.
enum PNGImage {
    /// The eight bytes every PNG starts with.
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The picture of `userID` (nil: the silhouette) at `width`×`height`.
    static func avatar(userID: String?, width: Int, height: Int) -> [UInt8] {
        let palette: [[UInt8]]
        var stripes = 0
        if let userID {
            let digest = SHA256.hash("fbsessions-avatar|" + userID)
            let background = [digest[0] | 0x80, digest[1] | 0x80, digest[2] | 0x80]
            palette = [
                background, [digest[3] & 0x5F, digest[4] & 0x5F, digest[5] & 0x5F],
                background.map { UInt8((Int($0) * 7) / 8) }, [digest[6] | 0x40, digest[7] & 0x7F, digest[8] | 0x20],
            ]
            stripes = 3 + Int(digest[9] % 6)
        } else {
            palette = [[0xC9, 0xCC, 0xD1], [0xFF, 0xFF, 0xFF], [0xC9, 0xCC, 0xD1], [0xC9, 0xCC, 0xD1]]
        }
        return encode(width: width, height: height, palette: palette) { x, y in
            let u = (Double(x) + 0.5) / Double(width)
            let v = (Double(y) + 0.5) / Double(height)
            let headU = (u - 0.5) / 0.19
            let headV = (v - 0.40) / 0.19
            let bodyU = (u - 0.5) / 0.36
            let bodyV = (v - 1.02) / 0.36
            if headU * headU + headV * headV <= 1 || bodyU * bodyU + bodyV * bodyV <= 1 { return 1 }
            if min(u, v, 1 - u, 1 - v) < 0.04 && stripes > 0 { return 3 }
            if stripes > 0 && Int((u + v) * Double(stripes)) % 2 == 0 { return 2 }
            return 0
        }
    }

    /// Encodes a 4-colour palette image; `pixel` gives each pixel's palette index (0…3).
    static func encode(width: Int, height: Int, palette: [[UInt8]], pixel: (Int, Int) -> UInt8) -> [UInt8] {
        precondition(width > 0 && height > 0 && palette.count == 4, "PNGImage.encode: bad geometry or palette")
        let rowBytes = (width * 2 + 7) / 8
        var raw: [UInt8] = []
        raw.reserveCapacity((rowBytes + 1) * height)
        for y in 0..<height {
            raw.append(0)  // filter type None
            var byte: UInt8 = 0
            for x in 0..<width {
                byte |= (pixel(x, y) & 0x03) << UInt8(6 - 2 * (x % 4))
                if x % 4 == 3 || x == width - 1 {
                    raw.append(byte)
                    byte = 0
                }
            }
        }
        var header: [UInt8] = []
        header += bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [2, 3, 0, 0, 0]  // bit depth 2, colour type 3 (palette), deflate, adaptive filter, no interlace
        var png = signature
        png += chunk("IHDR", header)
        png += chunk("PLTE", palette.flatMap { $0 })
        png += chunk("IDAT", zlibStored(raw))
        png += chunk("IEND", [])
        return png
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc32(typeBytes + data))
    }

    /// A zlib stream of stored deflate blocks (RFC 1950/1951).
    private static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, data.count - offset)
            let final: UInt8 = offset + count == data.count ? 1 : 0
            output.append(final)
            output += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            output += data[offset..<offset + count]
            offset += count
        } while offset < data.count
        return output + bigEndian(adler32(data))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
        }
        return value
    }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }

    static func adler32(_ data: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for chunkStart in stride(from: 0, to: data.count, by: 5552) {
            for byte in data[chunkStart..<min(chunkStart + 5552, data.count)] {
                a += UInt32(byte)
                b += a
            }
            a %= 65521
            b %= 65521
        }
        return b << 16 | a
    }
}
