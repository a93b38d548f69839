import Crypto
import Foundation

/// A JWS in compact serialization (RFC 7515 §7.1): `base64url(header).base64url(payload).base64url(signature)`,
/// split and decoded but not yet trusted.
///
/// Only the protected header is parsed here (it says which algorithm and key to check with); the payload is
/// parsed only once the signature has been checked (``AuthenticationTokenClaims/init(verifiedPayload:)``), so
/// unauthenticated JSON from the token's body never reaches a parser. Every part must be canonical unpadded
/// base64url (``Base64URL``), the header a JSON object nested at most ``maxDepth`` deep.
public struct CompactJWS: Sendable {
    /// The longest token accepted, in bytes: real Limited Login tokens are one or two kilobytes.
    public static let maxLength = 16 * 1024
    /// The deepest nesting of objects and arrays allowed in the header and the payload.
    public static let maxDepth = 8

    /// The header's `alg`.
    public let algorithm: String
    /// The header's `kid`, if it has one (a string).
    public let keyID: String?
    /// The bytes the signature covers: the ASCII of `header.payload` as sent.
    public let signingInput: [UInt8]
    /// The decoded payload (untrusted until the signature checked).
    public let payload: [UInt8]
    /// The decoded signature.
    public let signature: [UInt8]

    /// Splits and decodes a token and parses its header.
    /// - Parameter text: the token as the client sent it.
    /// - Throws: ``AuthenticationTokenError/malformed`` for anything that is not exactly three non-empty
    ///   base64url parts within ``maxLength`` with a JSON-object header whose `alg` is a string, and `kid`, when
    ///   present, a string; a header with `crit` (extensions this service does not implement) is malformed too.
    public init(parsing text: String) throws(AuthenticationTokenError) {
        guard text.utf8.count <= Self.maxLength else { throw .malformed }
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        // Unpadded, as RFC 7515 §2 defines base64url for JWS: a `=` anywhere is malformed.
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && !$0.contains(UInt8(ascii: "=")) }),
            let header = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
            let payload = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)),
            !payload.isEmpty, !signature.isEmpty
        else { throw .malformed }
        guard SignedRequest.Envelope.nestingFits(header, limit: Self.maxDepth),
            let fields = try? JSONDecoder().decode(Header.self, from: Data(header))
        else { throw .malformed }
        guard !fields.hasCritical else { throw .malformed }
        algorithm = fields.algorithm
        keyID = fields.keyID
        signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        self.payload = payload
        self.signature = signature
    }

    /// The header members used: `alg` (required), `kid`, and whether `crit` is there. Others (`typ`, ...) are
    /// ignored; `jku`, `x5u` and `jwk` in particular are never followed: keys come only from the key set.
    struct Header: Decodable {
        let algorithm: String
        let keyID: String?
        let hasCritical: Bool

        enum CodingKeys: String, CodingKey {
            case algorithm = "alg"
            case keyID = "kid"
            case critical = "crit"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            algorithm = try container.decode(String.self, forKey: .algorithm)
            keyID = try container.decodeIfPresent(String.self, forKey: .keyID)
            hasCritical = container.contains(.critical)
        }
    }
}
