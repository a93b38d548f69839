internal import CLibPQ

/// A listening connection that an event loop drives without ever blocking: it sends bare Sync messages (fences) and
/// reads what comes back, the notifications first.
///
/// It is made on a thread that may block (``init(connectionString:channels:options:)`` connects and runs `LISTEN`),
/// then handed to the loop, which watches ``descriptor`` for input and calls ``read()`` when it is readable and
/// ``sendSync()`` to fence. The connection stays in libpq's pipeline mode from then on, where a Sync goes out alone;
/// the server answers it with ReadyForQuery after handing out, first, every notification it was signalled about
/// (docs/caching.md, "The proof"). Only PostgreSQL 15 and later do that for a bare Sync, so the initializer refuses
/// older servers.
///
/// Ownership: owns its ``PostgresConnection``; ``close()`` (idempotent) or `deinit` ends it.
/// Thread safety: not thread-safe; one thread at a time (the loop's, once handed over).
public final class PostgresFenceConnection {
    private let connection: PostgresConnection
    /// Syncs sent and not yet answered.
    public private(set) var syncsInFlight = 0

    /// What one ``read()`` found.
    public struct Input {
        /// Syncs answered, in the order they were sent.
        public var syncs = 0
        /// Notifications, in the order the server sent them (all of them before the syncs they came with).
        public var notifications: [(channel: String, payload: String)] = []
        /// The connection is over (the server ended it, the socket closed, or an answer made no sense): close it.
        public var lost = false
    }

    /// Connects, listens on `channels`, and enters pipeline mode. Blocks for at most the options' connect and
    /// statement timeouts.
    ///
    /// - Throws: `PostgresError`: `.connectionFailed` when the server cannot be reached, is older than
    ///   PostgreSQL 15, or refuses pipeline mode; whatever `LISTEN` threw.
    public init(connectionString: String, channels: [String], options: PostgresConnection.Options) throws {
        for channel in channels where !PostgresListener.isValidChannel(channel) {
            throw PostgresError(.queryFailed, detail: "not a channel name: \(channel)")
        }
        connection = try PostgresConnection(connectionString: connectionString, options: options)
        guard connection.serverVersion >= 150_000 else {
            connection.close()
            throw PostgresError(.connectionFailed, detail: "fences by a bare Sync need PostgreSQL 15 or later")
        }
        do {
            for channel in channels {
                // Checked against [a-z_][a-z0-9_]* above; LISTEN takes no parameters.
                try connection.simpleQuery(unsafeSQL: "LISTEN \"\(channel)\"")
            }
        } catch {
            connection.close()
            throw error
        }
        guard let handle = connection.handle, PQsetnonblocking(handle, 1) == 0, PQenterPipelineMode(handle) == 1 else {
            connection.close()
            throw PostgresError(.connectionFailed, detail: "the connection refused pipeline mode")
        }
    }

    /// The socket to watch for input; -1 once closed.
    public var descriptor: Int32 {
        connection.handle.map { PQsocket($0) } ?? -1
    }

    /// Sends a Sync without waiting for its answer. False when the connection is over (close it).
    public func sendSync() -> Bool {
        guard let handle = connection.handle, PQpipelineSync(handle) == 1 else { return false }
        // Five bytes into an idle socket's empty send buffer: PQflush writes them at once. A socket that takes
        // nothing for this many tries is as good as gone; the fence's timeout would end it anyway.
        var tries = 0
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            tries += 1
            if flushed < 0 || tries > 100 { return false }
        }
        syncsInFlight += 1
        return true
    }

    /// Reads what arrived (call when ``descriptor`` is readable; harmless otherwise).
    public func read() -> Input {
        var input = Input()
        guard let handle = connection.handle, PQconsumeInput(handle) != 0 else {
            input.lost = true
            return input
        }
        while PQisBusy(handle) == 0, let raw = PQgetResult(handle) {
            let status = PQresultStatus(raw)
            PQclear(raw)
            if status == PGRES_PIPELINE_SYNC, syncsInFlight > 0 {
                syncsInFlight -= 1
                input.syncs += 1
            } else {
                // Nothing else was sent: an error here is the server ending the session (FATAL: terminated).
                input.lost = true
            }
        }
        while let notification = PostgresListenerLoop.nextNotification(handle) {
            input.notifications.append(notification)
        }
        if PQstatus(handle) != CONNECTION_OK { input.lost = true }
        return input
    }

    /// Closes the connection. Idempotent.
    public func close() {
        connection.close()
    }
}
