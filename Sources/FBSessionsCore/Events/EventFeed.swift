/// The change feed's limits, shared by the API, the stores and the webhook dispatcher.
public enum EventFeed {
    /// Events per page when the caller does not say.
    public static let defaultLimit = 100
    /// The allowed page sizes.
    public static let limits = 1...500
    /// The longest long-poll, in seconds.
    public static let maxWaitSeconds = 30.0
}

/// Reading the change feed. Implemented over PostgreSQL in FBSessionsStorage.
///
/// An event is visible only once every transaction that started before it has ended, and pages are ordered by
/// the writing transaction and then the event id, so a cursor never passes an event that commits later.
public protocol EventStore: Sendable {
    /// Up to `limit` events of one app after `cursor`, oldest first.
    ///
    /// - Parameters:
    ///   - appID: The app whose events are read; no other app's event is ever returned.
    ///   - cursor: Where the previous page ended, or `nil` for the oldest retained event.
    ///   - limit: The most events to return, within ``EventFeed/limits``.
    /// - Returns: The events and the cursor to continue from.
    /// - Throws: ``ServiceError/databaseUnavailable`` when the database cannot be reached.
    func events(appID: String, after cursor: EventCursor?, limit: Int) async throws -> EventPage
}

/// One page of the feed.
public struct EventPage: Sendable, Equatable {
    /// The events, oldest first.
    public var events: [FeedEvent]
    /// The last event's cursor; the given cursor when there are none (so polling can go on with it); without
    /// either, ``EventCursor/start``.
    public var nextCursor: EventCursor
    /// True when events after the cursor exist but are not visible yet, because a transaction that started
    /// before them is still open. They appear when it ends, which sends no notification of its own, so a
    /// waiting reader should look again soon.
    public var hasPendingEvents: Bool

    /// Creates a page.
    public init(events: [FeedEvent], nextCursor: EventCursor, hasPendingEvents: Bool = false) {
        self.events = events
        self.nextCursor = nextCursor
        self.hasPendingEvents = hasPendingEvents
    }
}
