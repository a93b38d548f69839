import Crypto
import Testing

@Suite("Base64URL, Hex, constant-time comparison, random bytes")
struct EncodingTests {
    /// RFC 4648 §10 test vectors (identical in both alphabets), without padding.
    @Test("RFC 4648 vectors encode without padding and decode with or without it")
    func rfc4648() throws {
        let vectors = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
            let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
            #expect(Base64URL.decode(padded) == Array(plain.utf8))
        }
    }

    @Test("the URL-safe alphabet is used and every byte string round-trips")
    func roundTrip() {
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
        for length in 0..<70 {
            let bytes = SecureRandom.bytes(length)
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
            #expect(Base64URL.decode(encoded) == bytes)
        }
    }

    @Test(
        "invalid input is rejected",
        arguments: [
            "+w", "/w", "Zm9v YmFy", "Zm9v\n", "Z", "Zm9vY", "Zg=", "Zg===", "Z=g=", "=Zg", "Zh", "Zm9", "é", "Zm9v!",
        ])
    func rejects(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("tokens are base64url of the requested length")
    func tokens() {
        let token = SecureRandom.token(byteCount: 32)
        #expect(token.count == 43)
        #expect(Base64URL.decode(token)?.count == 32)
        #expect(SecureRandom.token() != SecureRandom.token())
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(1000).count == 1000)
    }

    @Test("hex encodes lowercase and decodes either case")
    func hex() {
        #expect(Hex.encode([0x00, 0xab, 0xff]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xab, 0xff])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("") == [])
    }

    @Test("constantTimeEquals compares content and length")
    func constantTime() {
        #expect(constantTimeEquals([], []))
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(!constantTimeEquals([], [0]))
        #expect(!constantTimeEquals([0x80] + [UInt8](repeating: 0, count: 31), [UInt8](repeating: 0, count: 32)))
    }
}
