import Crypto
import Foundation

/// A JSON Web Key Set (RFC 7517 §5), as Limited Login's JWKS endpoint serves it: `{"keys": [{"kid", "kty": "RSA",
/// "alg": "RS256", "use": "sig", "n", "e"}, ...]}` (docs/limited-login.md has a real one).
///
/// Only keys that can check an RS256 signature are kept: `kty` `RSA` with a `kid`, `n` and `e` in canonical
/// base64url, `alg` absent or `RS256`, `use` absent or `sig`, and a key ``RSAPublicKey`` accepts (2048 to 8192
/// bits). Any other entry is skipped rather than failing the whole set, so that Facebook adding a key of another
/// type never locks everyone out. A second entry with a `kid` already seen is skipped too: the first one wins.
public struct JSONWebKeySet: Sendable {
    /// The most entries read from one set; Facebook's has two.
    public static let maxKeys = 64
    /// The deepest nesting of objects and arrays allowed.
    public static let maxDepth = 8

    /// The usable keys by `kid`.
    public let keys: [String: RSAPublicKey]
    /// How many entries the set had, usable or not (at most ``maxKeys`` are read).
    public let entryCount: Int

    /// Creates a set from keys already made.
    public init(keys: [String: RSAPublicKey]) {
        self.keys = keys
        self.entryCount = keys.count
    }

    /// Parses a key set document.
    /// - Parameter bytes: the response body.
    /// - Throws: ``JSONWebKeySetError/malformed`` unless it is a JSON object, nested at most ``maxDepth`` deep, with
    ///   a `keys` array (of any entries); entries that are not usable RS256 keys are skipped, not fatal.
    public init(parsing bytes: [UInt8]) throws(JSONWebKeySetError) {
        guard SignedRequest.Envelope.nestingFits(bytes, limit: Self.maxDepth),
            let document = try? JSONDecoder().decode(Document.self, from: Data(bytes))
        else { throw .malformed }
        var keys: [String: RSAPublicKey] = [:]
        for slot in document.keys.prefix(Self.maxKeys) {
            guard let entry = slot.entry, let kid = entry.kid, !kid.isEmpty, keys[kid] == nil, entry.kty == "RSA",
                entry.alg == nil || entry.alg == "RS256", entry.use == nil || entry.use == "sig",
                let n = entry.n.flatMap(Base64URL.decode), let e = entry.e.flatMap(Base64URL.decode),
                let key = try? RSAPublicKey(modulus: n, exponent: e)
            else { continue }
            keys[kid] = key
        }
        self.keys = keys
        self.entryCount = min(document.keys.count, Self.maxKeys)
    }

    /// `{"keys": [...]}`; other members are ignored.
    struct Document: Decodable {
        let keys: [Slot]
    }

    /// One element of `keys`: its entry, or nil when it is not even an object.
    struct Slot: Decodable {
        let entry: Entry?

        init(from decoder: any Decoder) throws {
            entry = try? Entry(from: decoder)
        }
    }

    /// One entry. Every member is optional and read as a string only when it is one, so a strange entry is
    /// skipped instead of failing the set.
    struct Entry: Decodable {
        let kid: String?
        let kty: String?
        let alg: String?
        let use: String?
        let n: String?
        let e: String?

        enum CodingKeys: String, CodingKey {
            case kid, kty, alg, use, n, e
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func text(_ key: CodingKeys) -> String? { (try? container.decodeIfPresent(String.self, forKey: key)) ?? nil }
            kid = text(.kid)
            kty = text(.kty)
            alg = text(.alg)
            use = text(.use)
            n = text(.n)
            e = text(.e)
        }
    }
}

/// Why a key set document could not be read.
public enum JSONWebKeySetError: Error, Sendable, Equatable {
    /// Not a JSON object with a `keys` array (or nested too deep).
    case malformed
}
