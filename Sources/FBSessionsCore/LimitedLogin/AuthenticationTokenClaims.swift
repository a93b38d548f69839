import Foundation

/// The claims of a Limited Login `AuthenticationToken` whose signature checked, read strictly: required claims must
/// be there and of their JSON type, optional ones of their type when present (docs/limited-login.md lists a real
/// token's claims).
///
/// The time checks are ``check(audience:now:leeway:)``'s; reading only establishes that the claims exist.
public struct AuthenticationTokenClaims: Sendable, Equatable {
    /// The issuers the contract accepts (Facebook's tokens carry the first; the SDK accepts any `facebook.com`
    /// host, this service only these two).
    public static let issuers: Set<String> = ["https://www.facebook.com", "https://limited.facebook.com"]

    /// `iss`.
    public let issuer: String
    /// `aud`: the Facebook app id the token was issued for.
    public let audience: String
    /// `sub`: the app-scoped user id, the same a standard login of the person gives.
    public let subject: String
    /// `jti`: the token's own id.
    public let tokenID: String
    /// `exp`.
    public let expiresAt: Date
    /// `iat`.
    public let issuedAt: Date
    /// `nonce`: at login, the value the app passed to the SDK (this service's nonce); in a refreshed token, the SDK's
    /// own (a UUID), or none. Nil only when read without ``NonceRule/required``.
    public let nonce: String?
    /// `cnf.jkt`: the JWK thumbprint (RFC 7638) of the device key the token is bound to (SDK 18.1 and later), nil
    /// when the token has no `cnf` or its `cnf` no `jkt`.
    public let deviceKeyThumbprint: String?
    /// `name`.
    public let name: String?
    /// `given_name`.
    public let givenName: String?
    /// `middle_name`.
    public let middleName: String?
    /// `family_name`.
    public let familyName: String?
    /// `email` (only when the person granted `email`).
    public let email: String?
    /// `picture`: a URL of the profile picture on Facebook's CDN, which expires.
    public let picture: String?
    /// `user_link`, when granted.
    public let link: String?
    /// The optional permission-bearing claims present (`user_friends`, `user_birthday`, ...).
    public let permissionClaims: [String]

    /// The optional claims that each come with a permission of that name.
    static let permissionClaimNames = [
        "user_friends", "user_birthday", "user_age_range", "user_hometown", "user_location", "user_gender",
        "user_link",
    ]

    /// Whether a token must carry a `nonce`.
    public enum NonceRule: Sendable {
        /// A login: the nonce is this service's, so it must be there.
        case required
        /// A refresh: the SDK made the nonce (or sent none); it is not this service's to check.
        case notChecked
    }

    /// Reads the payload of a token whose signature checked.
    /// - Parameters:
    ///   - payload: the decoded payload bytes.
    ///   - nonceRule: whether `nonce` must be present (a login) or is not looked at beyond its type (a refresh).
    /// - Throws: ``AuthenticationTokenError/malformed`` unless it is a JSON object (nested at most
    ///   ``CompactJWS/maxDepth`` deep) whose claims have their types (`exp` and `iat` numbers, `cnf` an object whose
    ///   `jkt`, if any, is a non-empty string, the others strings); ``AuthenticationTokenError/missingClaim(_:)``
    ///   when `iss`, `aud`, `sub`, `jti`, `exp`, `iat` or (with ``NonceRule/required``) `nonce` is absent, null or
    ///   an empty string.
    public init(verifiedPayload payload: [UInt8], nonceRule: NonceRule = .required) throws(AuthenticationTokenError) {
        guard SignedRequest.Envelope.nestingFits(payload, limit: CompactJWS.maxDepth) else { throw .malformed }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(payload))
        } catch {
            throw .malformed
        }
        func required(_ value: String?, _ name: String) throws(AuthenticationTokenError) -> String {
            guard let value, !value.isEmpty else { throw .missingClaim(name) }
            return value
        }
        issuer = try required(wire.iss, "iss")
        audience = try required(wire.aud, "aud")
        subject = try required(wire.sub, "sub")
        tokenID = try required(wire.jti, "jti")
        guard let exp = wire.exp else { throw .missingClaim("exp") }
        guard let iat = wire.iat else { throw .missingClaim("iat") }
        switch nonceRule {
        case .required: nonce = try required(wire.nonce, "nonce")
        case .notChecked: nonce = wire.nonce
        }
        if let jkt = wire.cnf?.jkt, jkt.isEmpty { throw .malformed }
        deviceKeyThumbprint = wire.cnf?.jkt
        expiresAt = Date(timeIntervalSince1970: exp)
        issuedAt = Date(timeIntervalSince1970: iat)
        name = wire.name
        givenName = wire.givenName
        middleName = wire.middleName
        familyName = wire.familyName
        email = wire.email
        picture = wire.picture
        link = wire.userLink
        permissionClaims = Self.permissionClaimNames.filter { wire.present.contains($0) }
    }

    /// Checks issuer, audience and times, in that order.
    /// - Parameters:
    ///   - audience: the app's Facebook app id.
    ///   - now: the current time.
    ///   - leeway: seconds of clock difference forgiven on `exp` and `iat` (the contract's 60).
    /// - Throws: ``AuthenticationTokenError/wrongIssuer``, `.wrongAudience`, `.expired` or `.notYetValid`.
    public func check(audience expected: String, now: Date, leeway: Double) throws(AuthenticationTokenError) {
        guard Self.issuers.contains(issuer) else { throw .wrongIssuer }
        guard audience == expected else { throw .wrongAudience }
        guard expiresAt.timeIntervalSince(now) > -leeway else { throw .expired }
        guard issuedAt.timeIntervalSince(now) <= leeway else { throw .notYetValid }
    }

    /// The profile the claims describe: `sub` as the id, `given_name` as the first name, `family_name` as the last.
    public var profile: Profile {
        Profile(
            id: subject, name: name, firstName: givenName, middleName: middleName, lastName: familyName, email: email,
            link: link, pictureURL: picture)
    }

    /// The permissions the claims show: `public_profile` always, `email` with an `email` claim, and each
    /// permission-bearing claim present.
    public var permissions: GraphPermissions {
        var granted = ["public_profile"]
        if email != nil { granted.append("email") }
        granted += permissionClaims
        return GraphPermissions(granted: granted, declined: [], expired: [])
    }

    /// The claims as they are on the wire. Every member is optional here; types are strict (a number where a
    /// string belongs fails decoding, which is `malformed`).
    struct Wire: Decodable {
        let iss: String?
        let aud: String?
        let sub: String?
        let jti: String?
        let exp: Double?
        let iat: Double?
        let nonce: String?
        let name: String?
        let givenName: String?
        let middleName: String?
        let familyName: String?
        let email: String?
        let picture: String?
        let userLink: String?
        let cnf: Confirmation?
        /// The names of the optional permission-bearing claims present (any type, not null).
        let present: Set<String>

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyClaimKey.self)
            func string(_ name: String) throws -> String? {
                try container.decodeIfPresent(String.self, forKey: AnyClaimKey(name))
            }
            func number(_ name: String) throws -> Double? {
                guard let value = try container.decodeIfPresent(Double.self, forKey: AnyClaimKey(name)) else {
                    return nil
                }
                guard value.isFinite, abs(value) < 1e11 else {
                    throw DecodingError.dataCorruptedError(
                        forKey: AnyClaimKey(name), in: container, debugDescription: "not a NumericDate")
                }
                return value
            }
            iss = try string("iss")
            aud = try string("aud")
            sub = try string("sub")
            jti = try string("jti")
            exp = try number("exp")
            iat = try number("iat")
            nonce = try string("nonce")
            name = try string("name")
            givenName = try string("given_name")
            middleName = try string("middle_name")
            familyName = try string("family_name")
            email = try string("email")
            picture = try string("picture")
            userLink = try string("user_link")
            cnf = try container.decodeIfPresent(Confirmation.self, forKey: AnyClaimKey("cnf"))
            var present: Set<String> = []
            for name in AuthenticationTokenClaims.permissionClaimNames
            where container.contains(AnyClaimKey(name)) && !((try? container.decodeNil(forKey: AnyClaimKey(name))) ?? true) {
                present.insert(name)
            }
            self.present = present
        }
    }

    /// The `cnf` (confirmation, RFC 7800) claim: an object; of its members only `jkt` (RFC 9449 §6.1) is read, and
    /// must be a string when present.
    struct Confirmation: Decodable {
        let jkt: String?
    }

    /// A claim name as a coding key.
    struct AnyClaimKey: CodingKey {
        let stringValue: String
        let intValue: Int? = nil

        init(_ name: String) {
            stringValue = name
        }

        init?(stringValue: String) {
            self.stringValue = stringValue
        }

        init?(intValue: Int) {
            return nil
        }
    }
}
