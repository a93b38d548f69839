import Crypto
import Testing

/// One AES-GCM known answer, all fields hex.
struct GCMVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let nonce: String
    let plaintext: String
    let aad: String
    let ciphertext: String
    let tag: String

    var testDescription: String { name }
}

private let key15 = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
private let plaintext15 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
private let plaintext16 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
private let aad16 = "feedfacedeadbeeffeedfacedeadbeefabaddad2"

/// McGrew and Viega, "The Galois/Counter Mode of Operation (GCM)", revised 2005 (the NIST GCM submission),
/// Appendix B, test cases 13 to 18: the 256-bit-key cases. 13–15 have no AAD; 16–18 authenticate 20 bytes of AAD;
/// 17 uses a 64-bit IV and 18 a 480-bit IV.
let gcmVectors: [GCMVector] = [
    GCMVector(
        name: "test case 13", key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12),
        plaintext: "", aad: "", ciphertext: "", tag: "530f8afbc74536b9a963b4f1c4cb738b"
    ),
    GCMVector(
        name: "test case 14", key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12),
        plaintext: String(repeating: "00", count: 16), aad: "",
        ciphertext: "cea7403d4d606b6e074ec5d3baf39d18", tag: "d0d1c8a799996bf0265b98b5d48ab919"
    ),
    GCMVector(
        name: "test case 15", key: key15, nonce: "cafebabefacedbaddecaf888", plaintext: plaintext15, aad: "",
        ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
            + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
        tag: "b094dac5d93471bdec1a502270e3cc6c"
    ),
    GCMVector(
        name: "test case 16", key: key15, nonce: "cafebabefacedbaddecaf888", plaintext: plaintext16, aad: aad16,
        ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
            + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
        tag: "76fc6ece0f4e1768cddf8853bb2d551b"
    ),
    GCMVector(
        name: "test case 17", key: key15, nonce: "cafebabefacedbad", plaintext: plaintext16, aad: aad16,
        ciphertext: "c3762df1ca787d32ae47c13bf19844cbaf1ae14d0b976afac52ff7d79bba9de0"
            + "feb582d33934a4f0954cc2363bc73f7862ac430e64abe499f47c9b1f",
        tag: "3a337dbf46a792c45e454913fe2ea8f2"
    ),
    GCMVector(
        name: "test case 18", key: key15,
        nonce: "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728"
            + "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b",
        plaintext: plaintext16, aad: aad16,
        ciphertext: "5a8def2f0c9e53f1f75d7853659e2a20eeb2b22aafde6419a058ab4f6f746bf4"
            + "0fc0c3b780f244452da3ebf1c5d82cdea2418997200ef82e44ae7e3f",
        tag: "a44a8266ee1c8eb0c8b5d4cf5ae9f19a"
    ),
]

private func bytes(_ hex: String) throws -> [UInt8] {
    try #require(Hex.decode(hex))
}

@Suite("AES-256-GCM")
struct AESGCMTests {
    @Test("published known answers seal and open", arguments: gcmVectors)
    func knownAnswer(_ vector: GCMVector) throws {
        let key = try bytes(vector.key)
        let aad = try bytes(vector.aad)
        let box = try AESGCM.seal(
            try bytes(vector.plaintext), key: key, nonce: try bytes(vector.nonce), authenticating: aad
        )
        #expect(Hex.encode(box.ciphertext) == vector.ciphertext)
        #expect(Hex.encode(box.tag) == vector.tag)
        let opened = try AESGCM.open(
            try AESGCM.SealedBox(
                nonce: try bytes(vector.nonce), ciphertext: try bytes(vector.ciphertext),
                tag: try bytes(vector.tag)),
            key: key, authenticating: aad
        )
        #expect(Hex.encode(opened) == vector.plaintext)
    }

    @Test("a random nonce is 12 bytes and combined round-trips")
    func combinedRoundTrip() throws {
        let key = SecureRandom.bytes(32)
        let message = Array("a Facebook access token".utf8)
        let aad = Array("ses_row_42".utf8)
        let first = try AESGCM.seal(message, key: key, authenticating: aad)
        let second = try AESGCM.seal(message, key: key, authenticating: aad)
        #expect(first.nonce.count == 12)
        #expect(first.nonce != second.nonce)
        #expect(first.combined.count == 12 + message.count + 16)
        let rebuilt = try AESGCM.SealedBox(combined: first.combined)
        #expect(rebuilt == first)
        #expect(try AESGCM.open(rebuilt, key: key, authenticating: aad) == message)
    }

    @Test("flipping any bit of nonce, ciphertext or tag fails authentication")
    func tamperingBox() throws {
        let key = SecureRandom.bytes(32)
        let aad = Array("row-1".utf8)
        let combined = try AESGCM.seal(Array("secret token".utf8), key: key, authenticating: aad).combined
        for byteIndex in combined.indices {
            for bit in 0..<8 {
                var tampered = combined
                tampered[byteIndex] ^= UInt8(1) << UInt8(bit)
                let box = try AESGCM.SealedBox(combined: tampered)
                let error = #expect(throws: CryptoError.self) {
                    try AESGCM.open(box, key: key, authenticating: aad)
                }
                #expect(error?.code == .authenticationFailure)
            }
        }
    }

    @Test("flipping any bit of the associated data fails authentication")
    func tamperingAAD() throws {
        let key = SecureRandom.bytes(32)
        let aad = Array("ses_0123456789".utf8)
        let box = try AESGCM.seal(Array("secret token".utf8), key: key, authenticating: aad)
        for byteIndex in aad.indices {
            for bit in 0..<8 {
                var tampered = aad
                tampered[byteIndex] ^= UInt8(1) << UInt8(bit)
                #expect(throws: CryptoError.self) { try AESGCM.open(box, key: key, authenticating: tampered) }
            }
        }
        #expect(throws: CryptoError.self) { try AESGCM.open(box, key: key, authenticating: []) }
        #expect(throws: CryptoError.self) { try AESGCM.open(box, key: key, authenticating: aad + [0]) }
    }

    @Test("the wrong key fails authentication")
    func wrongKey() throws {
        let key = SecureRandom.bytes(32)
        var otherKey = key
        otherKey[0] ^= 0x80
        let box = try AESGCM.seal(Array("secret".utf8), key: key, authenticating: [])
        let error = #expect(throws: CryptoError.self) { try AESGCM.open(box, key: otherKey, authenticating: []) }
        #expect(error?.code == .authenticationFailure)
    }

    @Test("bad sizes are rejected with specific codes")
    func badSizes() throws {
        let keyError = #expect(throws: CryptoError.self) {
            try AESGCM.seal([1], key: [UInt8](repeating: 0, count: 31), authenticating: [])
        }
        #expect(keyError?.code == .invalidKeySize)
        let nonceError = #expect(throws: CryptoError.self) {
            try AESGCM.seal([1], key: [UInt8](repeating: 0, count: 32), nonce: [], authenticating: [])
        }
        #expect(nonceError?.code == .invalidNonce)
        let shortError = #expect(throws: CryptoError.self) {
            try AESGCM.SealedBox(combined: [UInt8](repeating: 0, count: 27))
        }
        #expect(shortError?.code == .malformedInput)
        let tagError = #expect(throws: CryptoError.self) {
            try AESGCM.SealedBox(nonce: [UInt8](repeating: 0, count: 12), ciphertext: [], tag: [1, 2, 3])
        }
        #expect(tagError?.code == .malformedInput)
        #expect(keyError.map { String(describing: $0) } == "CryptoError.invalidKeySize")
    }
}
