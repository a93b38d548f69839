import FBSessionsCore
import HTTPServer
import Support

/// `POST /v1/login-nonces`: a single-use nonce for Limited Login (docs/limited-login.md).
enum LoginNonceRoutes {
    /// The body, checked strictly: unknown fields, wrong types and bad values are 400 `invalid_request` naming the
    /// field.
    struct Body: Decodable {
        let owner: String
        let slot: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case owner, slot
        }

        init(from decoder: any Decoder) throws {
            try AnyKey.rejectUnknownFields(in: decoder, known: CodingKeys.self)
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            owner = try fields.decode(String.self, forKey: .owner)
            slot = try fields.decodeIfPresent(Int.self, forKey: .slot)
        }
    }

    /// `{"nonce", "expires_at"}`.
    struct NonceDTO: Encodable {
        let nonce: String
        let expiresAt: String

        enum CodingKeys: String, CodingKey {
            case nonce
            case expiresAt = "expires_at"
        }
    }

    static func routes(_ services: Services) -> [Route] {
        let flow = services.limitedLogin
        let maxSlots = services.maxSlots
        return [
            /// - Remark: HTTP POST /v1/login-nonces (openapi.yaml operationId createLoginNonce)
            Route("POST", "/v1/login-nonces", operationID: "createLoginNonce", scope: .sessions, acceptsJSON: true, handler: .waiting { context in
                let app = try context.app()
                let body = try context.decode(Body.self)
                let owner = try Validation.owner(body.owner)
                if let slot = body.slot, !(0..<maxSlots).contains(slot) {
                    throw APIError.invalid("slot must be between 0 and \(maxSlots - 1).", field: "slot")
                }
                guard let flow else { throw APIError.from(ServiceError.databaseUnavailable) }
                let (text, nonce) = try await flow.makeNonce(app: app, owner: owner, slot: body.slot)
                return try JSONResponse.make(
                    201, NonceDTO(nonce: text, expiresAt: RFC3339.string(from: nonce.expiresAt)),
                    headers: ["Cache-Control": "no-store"])
            }),
        ]
    }
}
