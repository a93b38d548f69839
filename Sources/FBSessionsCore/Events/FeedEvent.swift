import Foundation
import Support

/// An event as the feed and webhooks deliver it: `{"id", "type", "session_id", "owner", "at", "data"}`.
public struct FeedEvent: Sendable, Equatable {
    /// The event id (a bigint, sent as a string).
    public let id: Int64
    /// The type, for example `session.opened` (see ``SessionEvent/Kind``).
    public let type: String
    /// The session it concerns, if any.
    public let sessionID: String?
    /// The session's owner, if any.
    public let owner: String?
    /// When it was written.
    public let at: Date
    /// The `data` object as JSON text (UTF-8), exactly as stored.
    public let data: [UInt8]
    /// Its position in the feed: a cursor that resumes right after it.
    public let cursor: EventCursor

    /// Creates an event.
    public init(
        id: Int64, type: String, sessionID: String?, owner: String?, at: Date, data: [UInt8], cursor: EventCursor
    ) {
        self.id = id
        self.type = type
        self.sessionID = sessionID
        self.owner = owner
        self.at = at
        self.data = data
        self.cursor = cursor
    }

    /// The event as a JSON object, keys sorted, `at` in RFC 3339 UTC, `data` spliced in as stored.
    public var json: String {
        let data = self.data.isEmpty ? "{}" : String(decoding: self.data, as: UTF8.self)
        return #"{"at":"# + JSONText.quoted(RFC3339.string(from: at)) + #","data":"# + data
            + #","id":"# + JSONText.quoted(String(id)) + #","owner":"# + (owner.map(JSONText.quoted) ?? "null")
            + #","session_id":"# + (sessionID.map(JSONText.quoted) ?? "null") + #","type":"# + JSONText.quoted(type)
            + "}"
    }
}
