import Foundation
import Support

/// A change the backend is told about, written in the same transaction as the change itself.
public struct SessionEvent: Sendable, Equatable {
    /// The event types of the contract.
    public enum Kind: String, Sendable, CaseIterable {
        case sessionOpened = "session.opened"
        case sessionClosed = "session.closed"
        case sessionActivated = "session.activated"
        case tokenChanged = "token.changed"
        case profileChanged = "profile.changed"
        /// A standard session's `action_required` became non-null, or another non-null value (`data`:
        /// `action_required`, `reason`).
        case sessionActionRequired = "session.action_required"
        /// A standard session's token or data access runs out within `FBS_EXPIRY_WARNING` seconds; once per
        /// deadline (`data`: `field`, `at`).
        case sessionExpiring = "session.expiring"
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
    /// `fields` (profile.changed), `action_required` and `reason` (session.action_required), `field` and `at`
    /// (session.expiring).
    public var data: [String: Value]

    /// Creates an event.
    public init(_ kind: Kind, sessionID: String, owner: String, data: [String: Value] = [:]) {
        self.kind = kind
        self.sessionID = sessionID
        self.owner = owner
        self.data = data
    }

    /// `session.action_required` for a session whose `action_required` became `action`, for `reason`.
    public static func actionRequired(
        _ action: ActionRequired, reason: ActionReason, sessionID: String, owner: String
    ) -> SessionEvent {
        SessionEvent(
            .sessionActionRequired, sessionID: sessionID, owner: owner,
            data: ["action_required": .string(action.rawValue), "reason": .string(reason.rawValue)])
    }

    /// `session.expiring` for a session whose deadline `field` (``ExpiringField``) is `at`.
    public static func expiring(_ field: ExpiringField, at deadline: Date, sessionID: String, owner: String)
        -> SessionEvent
    {
        SessionEvent(
            .sessionExpiring, sessionID: sessionID, owner: owner,
            data: ["field": .string(field.rawValue), "at": .string(RFC3339.string(from: deadline))])
    }

    /// The deadline a `session.expiring` warns about: the session's `token.expires_at` or
    /// `token.data_access_expires_at`.
    public enum ExpiringField: String, Sendable, CaseIterable {
        /// The access token runs out (60 days after its last extension); a re-extension moves it.
        case expiresAt = "expires_at"
        /// Data access runs out (90 days after the person last used the app); only a login with
        /// `auth_type=reauthorize` moves it.
        case dataAccessExpiresAt = "data_access_expires_at"
    }

    /// `data` as JSON text.
    public var dataJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(data), as: UTF8.self)) ?? "{}"
    }
}
