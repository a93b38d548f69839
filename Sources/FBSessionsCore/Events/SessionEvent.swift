import Foundation

/// A change the backend is told about, written in the same transaction as the change itself.
public struct SessionEvent: Sendable, Equatable {
    /// The event types of the contract.
    public enum Kind: String, Sendable, CaseIterable {
        case sessionOpened = "session.opened"
        case sessionClosed = "session.closed"
        case sessionActivated = "session.activated"
        case tokenChanged = "token.changed"
        case profileChanged = "profile.changed"
    }

    /// A value inside `data`.
    public enum Value: Sendable, Equatable, Encodable {
        case string(String)
        case bool(Bool)
        case strings([String])
        case null

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .bool(let flag): try container.encode(flag)
            case .strings(let list): try container.encode(list)
            case .null: try container.encodeNil()
            }
        }
    }

    /// The type.
    public var kind: Kind
    /// The session it concerns.
    public var sessionID: String
    /// The session's owner.
    public var owner: String
    /// Type-specific data: `reason` (closed), `user_changed` and `previous_session_id` (token.changed),
    /// `fields` (profile.changed).
    public var data: [String: Value]

    /// Creates an event.
    public init(_ kind: Kind, sessionID: String, owner: String, data: [String: Value] = [:]) {
        self.kind = kind
        self.sessionID = sessionID
        self.owner = owner
        self.data = data
    }

    /// `data` as JSON text.
    public var dataJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(data), as: UTF8.self)) ?? "{}"
    }
}
