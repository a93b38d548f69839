import FBSessionsCore

/// The body of `POST /v1/sessions`, checked strictly: unknown fields, wrong types and out-of-range values are
/// 400 `invalid_request` naming the field, before anything else happens.
struct LoginRequest: Decodable {
    let owner: String
    let accessToken: String?
    let code: String?
    let state: String?
    /// A Limited Login `AuthenticationToken` (docs/limited-login.md).
    let authenticationToken: String?
    let slot: Int?
    let activate: Bool

    enum CodingKeys: String, CodingKey, CaseIterable {
        case owner, code, state, slot, activate
        case accessToken = "access_token"
        case authenticationToken = "authentication_token"
    }

    init(from decoder: any Decoder) throws {
        try AnyKey.rejectUnknownFields(in: decoder, known: CodingKeys.self)
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        owner = try fields.decode(String.self, forKey: .owner)
        accessToken = try fields.decodeIfPresent(String.self, forKey: .accessToken)
        code = try fields.decodeIfPresent(String.self, forKey: .code)
        state = try fields.decodeIfPresent(String.self, forKey: .state)
        authenticationToken = try fields.decodeIfPresent(String.self, forKey: .authenticationToken)
        slot = try fields.decodeIfPresent(Int.self, forKey: .slot)
        activate = try fields.decodeIfPresent(Bool.self, forKey: .activate) ?? true
    }
}

/// Any JSON object key, for finding unknown fields.
struct AnyKey: CodingKey {
    /// Throws 400 `invalid_request` naming the first field of the object being decoded that `known` lacks.
    static func rejectUnknownFields<Keys: CodingKey & CaseIterable>(in decoder: any Decoder, known: Keys.Type) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        let names = Set(Keys.allCases.map(\.stringValue))
        if let unknown = container.allKeys.first(where: { !names.contains($0.stringValue) }) {
            throw APIError.invalid("Unknown field \(unknown.stringValue).", field: unknown.stringValue)
        }
    }

    let stringValue: String
    let intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// Checks shared by several routes.
enum Validation {
    /// An owner: 1–128 bytes of UTF-8.
    static func owner(_ owner: String, field: String = "owner") throws -> String {
        guard (1...128).contains(owner.utf8.count) else {
            throw APIError.invalid("The owner must be 1 to 128 bytes of UTF-8.", field: field)
        }
        return owner
    }

    /// A session id in a request body (`session_id`), as issued (`ses_` and base64url); anything else is 400
    /// `invalid_request` naming the field.
    static func sessionID(_ id: String, field: String) throws -> String {
        guard Session.isWellFormedID(id) else {
            throw APIError.invalid("Session ids look like ses_ followed by base64url characters.", field: field)
        }
        return id
    }

    /// The `{id}` of a session path. An id that cannot be a session id names no session: 404
    /// `session_not_found`, the same answer as an unknown id (no database lookup is made for it).
    /// - Throws: ``SessionError/notFound``.
    static func pathSessionID(_ context: RouteContext) throws -> String {
        guard let id = context.parameters["id"], Session.isWellFormedID(id) else { throw SessionError.notFound }
        return id
    }
}
