import FBSessionsCore
import Foundation

/// Graph's JSON shapes, decoded with `JSONDecoder` and explicit `CodingKeys` (docs/facebook-graph.md §2–§7). Internal:
/// `GraphClient` turns them into the port's types. Any shape or type mismatch throws, and the client reports it
/// as `GraphError.transient(.malformedResponse)`.
enum GraphWire {
    /// A JSON string or integer, read as a string: Graph sends ids as strings, older answers as numbers.
    struct ID: Decodable {
        let value: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                value = text
            } else if let number = try? container.decode(Int64.self) {
                value = String(number)
            } else {
                value = String(try container.decode(UInt64.self))
            }
        }
    }

    /// A JSON integer, an integral float, or a string of digits, read as an `Int` (`expires_in`, codes).
    struct Number: Decodable {
        let value: Int

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) {
                value = number
            } else if let text = try? container.decode(String.self), let number = Int(text) {
                value = number
            } else {
                let double = try container.decode(Double.self)
                guard let number = Int(exactly: double) else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an integer")
                }
                value = number
            }
        }

        /// Unix seconds as a date; 0 and negative values (Graph's "never") give `nil`.
        static func date(_ seconds: Number?) -> Date? {
            guard let seconds = seconds?.value, seconds > 0 else {
                return nil
            }
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
    }

    /// Any JSON value, kept only when it is a string (for `debug_token`'s `metadata`).
    struct StringIfAny: Decodable {
        let value: String?

        init(from decoder: any Decoder) throws {
            value = try? decoder.singleValueContainer().decode(String.self)
        }
    }

    // MARK: Errors (§7.1; §3.2 for debug_token's `data.error`)

    /// `{"error": {...}}`.
    struct ErrorEnvelope: Decodable {
        let error: ErrorBody
    }

    /// The error object, covering the keys SDKs read (`message`, `error_msg`, `error_reason`,
    /// `error_description`; `error_subcode`, and `subcode` inside `debug_token`).
    struct ErrorBody: Decodable {
        let message: String?
        let errorMessage: String?
        let errorReason: String?
        let errorDescription: String?
        let type: String?
        let code: Number?
        let errorSubcode: Number?
        let subcode: Number?
        let fbtraceID: String?
        let isTransient: Bool?
        let userTitle: String?
        let userMessage: String?

        enum CodingKeys: String, CodingKey {
            case message, type, code, subcode
            case errorMessage = "error_msg"
            case errorReason = "error_reason"
            case errorDescription = "error_description"
            case errorSubcode = "error_subcode"
            case fbtraceID = "fbtrace_id"
            case isTransient = "is_transient"
            case userTitle = "error_user_title"
            case userMessage = "error_user_msg"
        }

        /// The port's detail; `scrub` removes secrets from the free-text fields.
        func detail(httpStatus: Int?, scrub: (String) -> String) -> GraphErrorDetail {
            GraphErrorDetail(
                code: code?.value ?? 0,
                subcode: errorSubcode?.value ?? subcode?.value,
                type: type.map(scrub),
                message: scrub(message ?? errorMessage ?? errorReason ?? errorDescription ?? ""),
                fbtraceID: fbtraceID.map(scrub),
                isTransient: isTransient ?? false,
                userTitle: userTitle.map(scrub),
                userMessage: userMessage.map(scrub),
                httpStatus: httpStatus
            )
        }
    }

    // MARK: debug_token (§3)

    /// `{"data": {...}}`.
    struct DebugTokenEnvelope: Decodable {
        let data: DebugToken
    }

    /// The `data` object of `debug_token`.
    struct DebugToken: Decodable {
        let isValid: Bool
        let appID: ID?
        let userID: ID?
        let type: String?
        let application: String?
        let expiresAt: Number?
        let dataAccessExpiresAt: Number?
        let issuedAt: Number?
        let scopes: [String]?
        let granularScopes: [GranularScope]?
        let profileID: ID?
        let metadata: [String: StringIfAny]?
        let error: ErrorBody?

        enum CodingKeys: String, CodingKey {
            case type, application, scopes, metadata, error
            case isValid = "is_valid"
            case appID = "app_id"
            case userID = "user_id"
            case expiresAt = "expires_at"
            case dataAccessExpiresAt = "data_access_expires_at"
            case issuedAt = "issued_at"
            case granularScopes = "granular_scopes"
            case profileID = "profile_id"
        }
    }

    /// One `granular_scopes` entry.
    struct GranularScope: Decodable {
        let scope: String
        let targetIDs: [ID]?

        enum CodingKeys: String, CodingKey {
            case scope
            case targetIDs = "target_ids"
        }
    }

    // MARK: /me (§2), /me/picture (§5), /me/permissions (§6)

    /// A User node: `id` (a string or a number), each other ``FBSessionsCore/Profile/Field`` as a string under
    /// its ``FBSessionsCore/Profile/Field/graphField``, and the `picture` edge, whose URL is the profile's
    /// `picture_url`. A field of another type throws, as any shape mismatch does.
    struct Profile: Decodable {
        let profile: FBSessionsCore.Profile
        let picture: PictureEnvelope?

        /// A `/me` field name as a coding key.
        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(_ name: String) { stringValue = name }
            init(stringValue: String) { self.init(stringValue) }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            picture = try container.decodeIfPresent(PictureEnvelope.self, forKey: Key("picture"))
            var profile = FBSessionsCore.Profile(id: try container.decode(ID.self, forKey: Key("id")).value)
            for field in FBSessionsCore.Profile.Field.allCases where field != .id && field != .pictureURL {
                profile[field] = try container.decodeIfPresent(String.self, forKey: Key(field.graphField))
            }
            profile.pictureURL = picture?.data.url
            self.profile = profile
        }
    }

    /// `{"data": {...}}` around a picture.
    struct PictureEnvelope: Decodable {
        let data: Picture
    }

    /// A ProfilePictureSource.
    struct Picture: Decodable {
        let url: String
        let width: Number?
        let height: Number?
        let isSilhouette: Bool?

        enum CodingKeys: String, CodingKey {
            case url, width, height
            case isSilhouette = "is_silhouette"
        }
    }

    /// `{"data": [{"permission", "status"}]}`.
    struct Permissions: Decodable {
        let data: [Permission]
    }

    /// One permission entry.
    struct Permission: Decodable {
        let permission: String
        let status: String
    }

    /// The `{"success": true}` form of a DELETE answer (the bare `true` form decodes as `Bool`).
    struct Success: Decodable {
        let success: Bool
    }

    // MARK: oauth/access_token (§4.2, §4.3)

    /// `{"access_token", "token_type", "expires_in"}` (or the legacy `expires`).
    struct TokenGrant: Decodable {
        let accessToken: String
        let tokenType: String?
        let expiresIn: Number?
        let expires: Number?

        enum CodingKeys: String, CodingKey {
            case expires
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
        }
    }

    // MARK: x-app-usage (§7.6)

    /// The JSON in the `x-app-usage` header.
    struct AppUsage: Decodable {
        let callCount: Number?
        let totalTime: Number?
        let totalCPUTime: Number?

        enum CodingKeys: String, CodingKey {
            case callCount = "call_count"
            case totalTime = "total_time"
            case totalCPUTime = "total_cputime"
        }
    }
}
