import Crypto

/// A position in the change feed, opaque to clients: the writing transaction's id and the event id of the last
/// event read, as base64url text.
///
/// The text is 17 bytes (a version byte, then both numbers big-endian) in unpadded base64url: 23 characters.
public struct EventCursor: Sendable, Hashable, CustomStringConvertible {
    /// The `xid8` of the transaction that wrote the event.
    public let transactionID: UInt64
    /// The event's id.
    public let eventID: Int64

    private static let version: UInt8 = 1

    /// Before every event.
    public static let start = EventCursor(transactionID: 0, eventID: 0)

    /// Creates a cursor from its parts.
    public init(transactionID: UInt64, eventID: Int64) {
        self.transactionID = transactionID
        self.eventID = eventID
    }

    /// Parses a cursor's text.
    ///
    /// - Parameter text: Text from ``text``.
    /// - Throws: ``EventCursorError`` when the text is not a cursor this service issued: wrong alphabet, length
    ///   or version, or a negative event id.
    public init(parsing text: String) throws(EventCursorError) {
        guard text.utf8.count <= 64, let bytes = Base64URL.decode(text), bytes.count == 17, bytes[0] == Self.version
        else { throw EventCursorError() }
        let transaction = bytes[1..<9].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let event = bytes[9..<17].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard event <= UInt64(Int64.max) else { throw EventCursorError() }
        self.init(transactionID: transaction, eventID: Int64(event))
    }

    /// The text clients pass back as `after`.
    public var text: String {
        var bytes: [UInt8] = [Self.version]
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: transactionID >> UInt64(shift)))
        }
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: UInt64(eventID) >> UInt64(shift)))
        }
        return Base64URL.encode(bytes)
    }

    /// The same as ``text``.
    public var description: String {
        text
    }
}

/// A cursor text that is not one this service issued. The API answers 400 `invalid_request` naming `after`.
public struct EventCursorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Creates the error.
    public init() {}

    /// A message safe to show the client; it does not repeat the text.
    public var description: String {
        "after is not a cursor from this service's next_cursor."
    }
}
