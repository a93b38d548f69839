import FBSessionsCore
import Foundation

/// A session on the wire (docs/api-contract.md, "Session JSON"). Never carries the token itself.
///
/// The body is described once, by the writer in SessionDTO+JSON.swift (``jsonBytes``); the profile's part of it
/// comes from ``Profile/Field``.
struct SessionDTO: Encodable {
    let session: Session
    let validation: SessionService.Validation
    var revocation: SessionService.Revocation?

    /// The written body read back and handed to `encoder`, for the types that embed a session and conform to
    /// `Encodable` (`OwnerRoutes.ListDTO`), so that there is no second description of the body to keep in step.
    /// No request takes this path; the routes write ``jsonBytes``.
    func encode(to encoder: any Encoder) throws {
        try JSONDecoder().decode(JSONTree.self, from: Data(jsonBytes)).encode(to: encoder)
    }
}

/// Any JSON value, read and written again as it was (``SessionDTO/encode(to:)``).
private enum JSONTree: Codable {
    case null
    case bool(Bool)
    case int(Int)
    case number(Double)
    case string(String)
    case array([JSONTree])
    case object([String: JSONTree])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONTree].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONTree].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
