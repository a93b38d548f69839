import Crypto
import Testing

/// Known answers from FIPS 180-4's worked examples (NIST CSRC "Examples with Intermediate Values", SHA-256)
/// and the long-message test of FIPS 180-2 Appendix B.3.
@Suite("SHA-256")
struct SHA256Tests {
    @Test("\"abc\" (FIPS 180-4 example, one block)")
    func abc() {
        #expect(SHA256.hexDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("the 448-bit message (FIPS 180-4 example, two blocks)")
    func twoBlocks() {
        let message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(SHA256.hexDigest(message) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("the empty message")
    func empty() {
        #expect(SHA256.hexDigest([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("one million 'a' (FIPS 180-2 Appendix B.3)")
    func millionA() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hexDigest(message) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("non-contiguous collections hash like arrays")
    func nonContiguous() {
        let bytes = Array("abc".utf8)
        #expect(SHA256.hash(bytes.reversed().reversed()) == SHA256.hash(bytes))
        #expect(SHA256.hash("abc".utf8) == SHA256.hash(bytes))
        #expect(SHA256.hash(bytes).count == SHA256.byteCount)
    }
}
