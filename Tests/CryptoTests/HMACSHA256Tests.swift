import Crypto
import Testing

/// RFC 4231 ("Identifiers and Test Vectors for HMAC-SHA-224, HMAC-SHA-256, HMAC-SHA-384, and HMAC-SHA-512"),
/// section 4, test cases 1 to 7, HMAC-SHA-256 column.
@Suite("HMAC-SHA256")
struct HMACSHA256Tests {
    private func mac(key: [UInt8], data: [UInt8]) -> String {
        Hex.encode(HMACSHA256.authenticationCode(for: data, key: key))
    }

    @Test("RFC 4231 test case 1")
    func case1() {
        let expected = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        #expect(mac(key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8)) == expected)
    }

    @Test("RFC 4231 test case 2 (key shorter than the output)")
    func case2() {
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        #expect(mac(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8)) == expected)
    }

    @Test("RFC 4231 test case 3 (50 bytes of 0xdd)")
    func case3() {
        let expected = "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        let data = [UInt8](repeating: 0xdd, count: 50)
        #expect(mac(key: [UInt8](repeating: 0xaa, count: 20), data: data) == expected)
    }

    @Test("RFC 4231 test case 4 (25-byte key 0x01...0x19)")
    func case4() {
        let expected = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        let key = (UInt8(1)...UInt8(25)).map { $0 }
        #expect(mac(key: key, data: [UInt8](repeating: 0xcd, count: 50)) == expected)
    }

    @Test("RFC 4231 test case 5 (truncated to 128 bits)")
    func case5() {
        let code = HMACSHA256.authenticationCode(
            for: Array("Test With Truncation".utf8),
            key: [UInt8](repeating: 0x0c, count: 20)
        )
        #expect(Hex.encode(code.prefix(16)) == "a3b6167473100ee06e0c796c2955552b")
    }

    @Test("RFC 4231 test case 6 (131-byte key, hashed first)")
    func case6() {
        let expected = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        let data = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        #expect(mac(key: [UInt8](repeating: 0xaa, count: 131), data: data) == expected)
    }

    @Test("RFC 4231 test case 7 (131-byte key, long data)")
    func case7() {
        let expected = "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        let data = Array(
            ("This is a test using a larger than block-size key and a larger than block-size data. "
                + "The key needs to be hashed before being used by the HMAC algorithm.").utf8
        )
        #expect(mac(key: [UInt8](repeating: 0xaa, count: 131), data: data) == expected)
    }

    @Test("empty key and message work, and validation is exact")
    func emptyAndValidation() {
        let code = HMACSHA256.authenticationCode(for: [UInt8](), key: [UInt8]())
        #expect(code.count == HMACSHA256.byteCount)
        #expect(HMACSHA256.isValidAuthenticationCode(code, for: [UInt8](), key: [UInt8]()))
        var tampered = code
        tampered[31] ^= 1
        #expect(!HMACSHA256.isValidAuthenticationCode(tampered, for: [UInt8](), key: [UInt8]()))
        #expect(!HMACSHA256.isValidAuthenticationCode(Array(code.prefix(16)), for: [UInt8](), key: [UInt8]()))
        #expect(
            HMACSHA256.authenticationCode(for: "Hi There", key: [UInt8](repeating: 0x0b, count: 20))
                == HMACSHA256.authenticationCode(for: Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20)))
    }
}
