import Crypto
import Testing

/// RS256 (RSASSA-PKCS1-v1_5 with SHA-256) from a JWK's `n` and `e`: the published example of RFC 7515 Appendix A.2,
/// every way to spoil it, the key limits, and signatures made by generated keys.
@Suite("RSA and RS256")
struct RSATests {
    /// RFC 7515 Appendix A.2: the JWS Compact Serialization and the public key (`n`, `e`) it was signed with.
    static let exampleJWS =
        "eyJhbGciOiJSUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9"
        + "CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn"
        + "6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrB"
        + "p0igcN_IoypGlUPQGe77Rw"
    static let exampleModulus =
        "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS"
        + "-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R"
        + "2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDT"
        + "W9gb54h4FRWyuXpoQ"

    static func example() throws -> (key: RSAPublicKey, message: [UInt8], signature: [UInt8]) {
        let parts = exampleJWS.split(separator: ".").map(String.init)
        let key = try RSAPublicKey(
            modulus: try #require(Base64URL.decode(exampleModulus)), exponent: try #require(Base64URL.decode("AQAB")))
        return (key, Array((parts[0] + "." + parts[1]).utf8), try #require(Base64URL.decode(parts[2])))
    }

    @Test("the RFC 7515 A.2 signature verifies under its key")
    func publishedExampleVerifies() throws {
        let (key, message, signature) = try Self.example()
        #expect(key.bitCount == 2048)
        #expect(key.exponent == [0x01, 0x00, 0x01])
        #expect(key.isValidRS256Signature(signature, for: message))
    }

    @Test("any changed bit of the signature or the message fails")
    func tamperingFails() throws {
        let (key, message, signature) = try Self.example()
        for index in [0, 17, signature.count / 2, signature.count - 1] {
            var changed = signature
            changed[index] ^= 0x01
            #expect(!key.isValidRS256Signature(changed, for: message))
        }
        var changedMessage = message
        changedMessage[changedMessage.count - 1] ^= 0x20
        #expect(!key.isValidRS256Signature(signature, for: changedMessage))
        #expect(!key.isValidRS256Signature(Array(signature.dropLast()), for: message))
        #expect(!key.isValidRS256Signature(signature + [0], for: message))
        #expect(!key.isValidRS256Signature([], for: message))
        #expect(!key.isValidRS256Signature([UInt8](repeating: 0, count: signature.count), for: message))
    }

    @Test("leading zero bytes of n and e are ignored")
    func leadingZeros() throws {
        let (_, message, signature) = try Self.example()
        let padded = try RSAPublicKey(
            modulus: [0, 0] + (try #require(Base64URL.decode(Self.exampleModulus))), exponent: [0, 1, 0, 1])
        #expect(padded.modulus.first != 0 && padded.exponent == [1, 0, 1])
        #expect(padded.isValidRS256Signature(signature, for: message))
    }

    @Test("weak, even or absurd keys are refused when made")
    func keyLimits() throws {
        let modulus = try #require(Base64URL.decode(Self.exampleModulus))
        let small = [UInt8](repeating: 0xff, count: 128)  // 1024 bits
        let huge = [UInt8](repeating: 0xff, count: 1025)  // 8200 bits
        var even = modulus
        even[even.count - 1] &= 0xfe
        for (n, e) in [
            (small, [1, 0, 1]), (huge, [1, 0, 1]), (even, [1, 0, 1]), (modulus, [2]), (modulus, [1]), (modulus, []),
            (modulus, [0x01, 0x00]), (modulus, [UInt8](repeating: 0xff, count: 9)), ([], [1, 0, 1]),
        ] as [([UInt8], [UInt8])] {
            #expect(throws: CryptoError.self) { try RSAPublicKey(modulus: n, exponent: e) }
            do {
                _ = try RSAPublicKey(modulus: n, exponent: e)
            } catch let error as CryptoError {
                #expect(error.code == .invalidKey)
            }
        }
        #expect(throws: CryptoError.self) { try RSAPrivateKey.generate(bitCount: 1024) }
    }

    @Test("a generated key signs what its public key verifies, and nothing else does")
    func generatedKeys() throws {
        let first = try RSAPrivateKey.generate()
        let second = try RSAPrivateKey.generate()
        #expect(first.publicKey.bitCount == 2048 && first.publicKey.exponent == [1, 0, 1])
        #expect(first.publicKey.modulus != second.publicKey.modulus)
        let message = Array("header.payload".utf8)
        let signature = try first.rs256Signature(for: message)
        #expect(signature.count == 256)
        // PKCS#1 v1.5 is deterministic.
        #expect(try first.rs256Signature(for: message) == signature)
        #expect(first.publicKey.isValidRS256Signature(signature, for: message))
        #expect(!second.publicKey.isValidRS256Signature(signature, for: message))
        // The same key rebuilt from its JWK parts (what the service does with a key set) verifies too.
        let rebuilt = try RSAPublicKey(modulus: first.publicKey.modulus, exponent: first.publicKey.exponent)
        #expect(rebuilt.isValidRS256Signature(signature, for: message))
        #expect(!rebuilt.isValidRS256Signature(try second.rs256Signature(for: message), for: message))
    }

    @Test("an HMAC-SHA256 tag over the same input is not an RS256 signature")
    func hmacIsNotASignature() throws {
        let (key, message, _) = try Self.example()
        let tag = HMACSHA256.authenticationCode(for: message, key: key.modulus)
        #expect(!key.isValidRS256Signature(tag, for: message))
    }

    @Test("one key checks signatures from many threads at once")
    func concurrentVerification() async throws {
        let (key, message, signature) = try Self.example()
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    var candidate = signature
                    if index % 2 == 1 { candidate[index] ^= 0x80 }
                    return key.isValidRS256Signature(candidate, for: message) == (index % 2 == 0)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64 && results.allSatisfy { $0 })
    }
}
