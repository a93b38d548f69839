import Crypto
import Foundation
import Support

/// The audit log's port: append an entry, read a page of an app's entries, prune entries past retention.
///
/// Append-only: nothing changes or deletes an entry but ``prune(retentionDays:)``, and the database enforces it
/// (migration 0014: a trigger refuses UPDATE, DELETE and TRUNCATE except through the prune function).
/// docs/api-contract.md, "Audit log".
public protocol AuditLog: Sendable {
    /// Appends an entry now.
    func append(_ entry: AuditDraft) async throws
    /// The entries an app's key may read after `cursor`, oldest first: the app's own and those of no app.
    func entries(appID: String, after cursor: AuditCursor?, limit: Int) async throws -> AuditPage
    /// Deletes the entries older than `retentionDays` days (at least 1) through the one deletion path.
    /// - Returns: How many were deleted.
    func prune(retentionDays: Int) async throws -> Int
}

/// What the audit log records (at least these; the table takes any `a.b` name).
public enum AuditAction: String, Sendable, CaseIterable {
    /// A decrypted token handed out by `GET /v1/sessions/{id}/token`.
    case tokenRead = "token.read"
    /// A logout with `revoke=true` that closed the session.
    case sessionRevoked = "session.revoked"
    /// `fbsessiond app add`.
    case appAdded = "app.added"
    /// `fbsessiond app update`.
    case appUpdated = "app.updated"
    /// `fbsessiond key add`.
    case keyAdded = "key.added"
    /// `fbsessiond key update` (a new rate limit).
    case keyUpdated = "key.updated"
    /// `fbsessiond key revoke`.
    case keyRevoked = "key.revoked"
    /// `fbsessiond webhook add`.
    case webhookAdded = "webhook.added"
    /// `fbsessiond webhook remove`.
    case webhookRemoved = "webhook.removed"
    /// `fbsessiond reencrypt`.
    case keysReencrypted = "keys.reencrypted"
}

/// Who did it: an API key (by id, never its text) or an operator's command (by OS user).
public enum AuditActor: Sendable, Equatable {
    /// An API key's id.
    case key(id: String)
    /// A command of `fbsessiond`, run by this OS user.
    case cli(user: String)

    /// `{"kind": "key", "id": ...}` or `{"kind": "cli", "user": ...}`.
    public var json: String {
        switch self {
        case .key(let id): #"{"id":"# + JSONText.quoted(id) + #","kind":"key"}"#
        case .cli(let user): #"{"kind":"cli","user":"# + JSONText.quoted(user) + "}"
        }
    }
}

/// Who acted and in which request, handed down to a store that writes the entry in the statement or transaction
/// of the change itself.
public struct AuditStamp: Sendable, Equatable {
    /// Who.
    public var actor: AuditActor
    /// The HTTP request's id, for entries written by a route.
    public var requestID: String?

    /// Creates a stamp.
    public init(actor: AuditActor, requestID: String?) {
        self.actor = actor
        self.requestID = requestID
    }
}

/// An entry to append.
public struct AuditDraft: Sendable, Equatable {
    /// The app it concerns; nil for what concerns the whole service (`keys.reencrypted`).
    public var appID: String?
    /// What.
    public var action: AuditAction
    /// Who.
    public var actor: AuditActor
    /// On what: an object with `kind` and ids or names, never a secret.
    public var target: [String: AuditValue]
    /// The HTTP request's id, if a route wrote it.
    public var requestID: String?

    /// Creates a draft.
    public init(
        appID: String?, action: AuditAction, actor: AuditActor, target: [String: AuditValue], requestID: String? = nil
    ) {
        self.appID = appID
        self.action = action
        self.actor = actor
        self.target = target
        self.requestID = requestID
    }

    /// ``target`` as a JSON object, keys sorted.
    public var targetJSON: String {
        "{" + target.sorted { $0.key < $1.key }.map { JSONText.quoted($0.key) + ":" + $0.value.json }
            .joined(separator: ",") + "}"
    }
}

/// A value in an entry's target.
public enum AuditValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case strings([String])
    case null

    var json: String {
        switch self {
        case .string(let text): JSONText.quoted(text)
        case .int(let value): String(value)
        case .strings(let texts): "[" + texts.map(JSONText.quoted).joined(separator: ",") + "]"
        case .null: "null"
        }
    }
}

/// An entry as `GET /v1/audit` shows it: `{"id", "at", "action", "actor", "target", "request_id"}`.
public struct AuditEntry: Sendable, Equatable {
    /// The entry's id (a bigint, sent as a string, as event ids are).
    public let id: Int64
    /// When it was written.
    public let at: Date
    /// The action's name.
    public let action: String
    /// The actor object as JSON text, exactly as stored.
    public let actor: String
    /// The target object as JSON text, exactly as stored.
    public let target: String
    /// The request id, if any.
    public let requestID: String?
    /// A cursor that resumes right after it.
    public let cursor: AuditCursor

    /// Creates an entry.
    public init(
        id: Int64, at: Date, action: String, actor: String, target: String, requestID: String?, cursor: AuditCursor
    ) {
        self.id = id
        self.at = at
        self.action = action
        self.actor = actor
        self.target = target
        self.requestID = requestID
        self.cursor = cursor
    }

    /// The entry as a JSON object, keys sorted, `at` in RFC 3339 UTC, `actor` and `target` spliced in as stored.
    public var json: String {
        let fields: [String] = [
            #""action":"# + JSONText.quoted(action),
            #""actor":"# + actor,
            #""at":"# + JSONText.quoted(RFC3339.string(from: at)),
            #""id":"# + JSONText.quoted(String(id)),
            #""request_id":"# + (requestID.map(JSONText.quoted) ?? "null"),
            #""target":"# + target,
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// A page of entries and where the next one starts.
public struct AuditPage: Sendable, Equatable {
    /// The entries, oldest first.
    public let entries: [AuditEntry]
    /// After the last entry, or the given cursor when there is none.
    public let nextCursor: AuditCursor

    /// Creates a page.
    public init(entries: [AuditEntry], nextCursor: AuditCursor) {
        self.entries = entries
        self.nextCursor = nextCursor
    }
}

/// The bounds of `GET /v1/audit`'s `limit` and of `FBS_AUDIT_RETENTION`.
public enum AuditPolicy {
    /// `limit` from 1 to 500, as the events feed's.
    public static let limits = 1...500
    /// `limit` when none is given.
    public static let defaultLimit = 100
    /// `FBS_AUDIT_RETENTION`'s default: a year.
    public static let defaultRetentionDays = 365
    /// `FBS_AUDIT_RETENTION`'s bounds: at least a day (the trigger refuses less), at most a hundred years.
    public static let retentionDays = 1...36_500
}

/// A position in the audit log, opaque to clients: the writing transaction's id and the entry's id, as events'
/// cursors are (``EventCursor``), with a version byte of its own so that one feed's cursor is refused by the other.
///
/// The text is 17 bytes (version 2, then both numbers big-endian) in unpadded base64url: 23 characters.
public struct AuditCursor: Sendable, Hashable, CustomStringConvertible {
    /// The `xid8` of the transaction that wrote the entry.
    public let transactionID: UInt64
    /// The entry's id.
    public let entryID: Int64

    private static let version: UInt8 = 2

    /// Before every entry.
    public static let start = AuditCursor(transactionID: 0, entryID: 0)

    /// Creates a cursor from its parts.
    public init(transactionID: UInt64, entryID: Int64) {
        self.transactionID = transactionID
        self.entryID = entryID
    }

    /// Parses a cursor's text.
    /// - Throws: ``AuditCursorError`` when the text is not a cursor this service issued for the audit log.
    public init(parsing text: String) throws(AuditCursorError) {
        guard text.utf8.count <= 64, let bytes = Base64URL.decode(text), bytes.count == 17, bytes[0] == Self.version
        else { throw AuditCursorError() }
        let transaction = bytes[1..<9].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let entry = bytes[9..<17].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard entry <= UInt64(Int64.max) else { throw AuditCursorError() }
        self.init(transactionID: transaction, entryID: Int64(entry))
    }

    /// The text clients pass back as `after`.
    public var text: String {
        var bytes: [UInt8] = [Self.version]
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: transactionID >> UInt64(shift)))
        }
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: UInt64(entryID) >> UInt64(shift)))
        }
        return Base64URL.encode(bytes)
    }

    /// The same as ``text``.
    public var description: String { text }
}

/// A cursor text that is not one this service issued for the audit log. The API answers 400 `invalid_request`
/// naming `after`.
public struct AuditCursorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Creates the error.
    public init() {}

    /// A message safe to show the client; it does not repeat the text.
    public var description: String {
        "after is not a cursor from this service's next_cursor."
    }
}
