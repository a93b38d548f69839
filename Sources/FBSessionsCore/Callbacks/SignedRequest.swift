import Crypto
import Foundation

/// Facebook's `signed_request` (deauthorize and data-deletion callbacks): `base64url(signature).base64url(payload)`,
/// where the signature is HMAC-SHA256 of the payload part, as sent, under the app secret, and the payload is a
/// JSON object with `algorithm` (`HMAC-SHA256`), `user_id` (the app-scoped id) and `issued_at`.
///
/// Parsing happens in two steps so that untrusted JSON is never parsed: ``Envelope`` checks the size and the
/// base64url of both parts; only after ``Envelope/isSigned(withSecret:)`` holds for an app's secret does
/// ``Envelope/contents()`` parse the payload, with its nesting bounded first.
public struct SignedRequest: Sendable, Equatable {
    /// The most characters a `signed_request` may have. Facebook's are a few hundred.
    public static let maxLength = 8192
    /// The deepest nesting of objects and arrays allowed in the payload.
    public static let maxDepth = 8

    /// The app-scoped Facebook user id (digits; `"0"` when the callback concerns no user, e.g. a Page).
    public let userID: String
    /// `issued_at`, when present.
    public let issuedAt: Date?

    /// Creates a value.
    public init(userID: String, issuedAt: Date?) {
        self.userID = userID
        self.issuedAt = issuedAt
    }

    /// The two parts of a `signed_request`, decoded but not yet trusted.
    public struct Envelope: Sendable {
        let signature: [UInt8]
        let payloadPart: [UInt8]
        let payload: [UInt8]

        /// Splits and decodes a `signed_request`.
        /// - Throws: ``SignedRequestError/tooLarge`` beyond ``SignedRequest/maxLength``, ``SignedRequestError/malformed``
        ///   unless it is two base64url parts with a 32-byte signature.
        public init(parsing text: String) throws(SignedRequestError) {
            guard text.utf8.count <= SignedRequest.maxLength else { throw .tooLarge }
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let signature = Base64URL.decode(String(parts[0])),
                signature.count == HMACSHA256.byteCount, let payload = Base64URL.decode(String(parts[1])),
                !payload.isEmpty
            else { throw .malformed }
            self.signature = signature
            self.payloadPart = Array(parts[1].utf8)
            self.payload = payload
        }

        /// Whether the signature is the HMAC-SHA256 of the payload part under `secret` (constant-time compare).
        public func isSigned(withSecret secret: String) -> Bool {
            HMACSHA256.isValidAuthenticationCode(signature, for: payloadPart, key: Array(secret.utf8))
        }

        /// Parses the payload of a request whose signature checked.
        /// - Throws: ``SignedRequestError/invalidPayload`` for nesting deeper than ``SignedRequest/maxDepth``, JSON
        ///   that is not an object, or a missing or malformed `user_id`; ``SignedRequestError/unsupportedAlgorithm``
        ///   unless `algorithm` is `HMAC-SHA256` (any case, as Facebook's own samples compare it).
        public func contents() throws(SignedRequestError) -> SignedRequest {
            guard Self.nestingFits(payload, limit: SignedRequest.maxDepth) else { throw .invalidPayload }
            let decoded: Payload
            do {
                decoded = try JSONDecoder().decode(Payload.self, from: Data(payload))
            } catch {
                throw .invalidPayload
            }
            guard decoded.algorithm.uppercased() == "HMAC-SHA256" else { throw .unsupportedAlgorithm }
            return SignedRequest(userID: decoded.userID, issuedAt: decoded.issuedAt.map(Date.init(timeIntervalSince1970:)))
        }

        /// Whether objects and arrays nest at most `limit` deep, looking past string contents; checked before any
        /// JSON parser sees the bytes.
        static func nestingFits(_ bytes: [UInt8], limit: Int) -> Bool {
            var depth = 0
            var inString = false
            var escaped = false
            for byte in bytes {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""):
                    inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    if depth > limit { return false }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                default:
                    break
                }
            }
            return true
        }
    }

    /// The payload fields used; others (`expires`, `user`, `profile_id`, ...) are ignored.
    struct Payload: Decodable {
        let algorithm: String
        let userID: String
        let issuedAt: Double?

        enum CodingKeys: String, CodingKey {
            case algorithm
            case userID = "user_id"
            case issuedAt = "issued_at"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            algorithm = try container.decode(String.self, forKey: .algorithm)
            // Facebook sends the id as a string; some samples show a number.
            let text: String
            if let string = try? container.decode(String.self, forKey: .userID) {
                text = string
            } else {
                text = String(try container.decode(UInt64.self, forKey: .userID))
            }
            guard (1...32).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .userID, in: container, debugDescription: "user_id is not an id")
            }
            userID = text
            issuedAt = try container.decodeIfPresent(Double.self, forKey: .issuedAt)
        }
    }
}

/// Why a `signed_request` was refused. Nothing was changed.
public enum SignedRequestError: Error, Sendable, Equatable {
    /// The form has no `signed_request` field (or more than one).
    case missing
    /// Longer than ``SignedRequest/maxLength``.
    case tooLarge
    /// Not two base64url parts with a 32-byte signature.
    case malformed
    /// No app matches: the route's Facebook app id is not registered here.
    case unknownApp
    /// The signature is not the app secret's (or, on the app-less paths, no app's).
    case badSignature
    /// The payload is not a bounded JSON object with a `user_id`.
    case invalidPayload
    /// `algorithm` is not HMAC-SHA256.
    case unsupportedAlgorithm
}
