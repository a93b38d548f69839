import Foundation

/// Receives PostgreSQL notifications (`LISTEN` / `NOTIFY`) on a connection and a thread of its own.
///
/// The thread connects, runs `LISTEN` for each channel, then blocks in `poll()` on the connection's socket
/// (and on a wake pipe that `stop()` writes to). Each notification is handed to the callback as
/// ``Signal/notification(channel:payload:)``. When the connection is lost (server restart,
/// `pg_terminate_backend`, network failure) the callback gets ``Signal/disconnected``, and the thread reconnects
/// with exponential backoff; once it listens again the callback gets ``Signal/reconnected``: notifications sent
/// in between are lost, so whoever waits for one must check again. A quiet connection is pinged (`SELECT 1`)
/// every `keepaliveInterval` and given up when the answer takes longer than `pingTimeout`, and TCP keepalives are
/// on, so a server that froze or vanished without closing the socket is noticed within seconds too.
///
/// ```swift
/// let listener = PostgresListener(configuration: .init(connectionString: url, channels: ["fbs_events"])) {
///     signal in waiters.handle(signal)
/// }
/// listener.start()
/// defer { listener.stop() }
/// ```
///
/// Ownership: owns its thread, its connection (opened and closed on that thread) and its wake pipe; `stop()`
/// (also run by `deinit`) ends the thread and closes the connection.
/// Thread safety: `start()`, `stop()` and `isListening` may be called from any thread. The callback runs on the
/// listener's thread, one signal at a time, in order; it must return quickly and must not block.
public final class PostgresListener: Sendable {
    /// What the callback is told.
    public enum Signal: Sendable, Equatable {
        /// A `NOTIFY` on one of the channels, with its payload (empty when none was given).
        case notification(channel: String, payload: String)
        /// The connection was lost. The thread is reconnecting.
        case disconnected
        /// Listening again after a lost connection or a failed first attempt. Notifications sent meanwhile
        /// were not received: check for whatever they would have announced.
        case reconnected
        /// The fence sent for `token` (``PostgresListener/sendFence(_:)``) came back: every notification of a
        /// transaction that committed before the fence was sent has been handed out before this signal.
        case fence(token: String)
    }

    /// How a fence is sent (``Configuration/fenceMethod``; docs/caching.md, "The fence, and why it proves
    /// enough").
    public enum FenceMethod: Sendable, Equatable {
        /// A Sync message alone on the listening connection (``PostgresConnection/synchronize()``), which the
        /// server answers with ReadyForQuery. From PostgreSQL 15 on, a listening backend that was signalled about
        /// a commit hands out that commit's notifications before it reports itself ready, and the committer
        /// signals before its own client hears of the commit. The Sync runs no statement: no parse, no plan, no
        /// transaction id, no WAL, no lock, and it wakes no other backend.
        case sync
        /// `NOTIFY` on ``Configuration/fenceChannel``, which comes back after the notifications of every earlier
        /// commit (commit order). Each one takes a transaction id, writes a commit record, takes the cluster-wide
        /// notify lock and wakes every listening backend of the database, other instances' included.
        case notify
    }

    /// The settings of the listener.
    public let configuration: Configuration
    private let loop: PostgresListenerLoop

    /// Creates a listener; nothing connects until ``start()``.
    ///
    /// - Parameters:
    ///   - configuration: The connection and channels. Each channel name must be a lowercase SQL identifier
    ///     (`[a-z_][a-z0-9_]*`, at most 63 bytes); anything else is a programming error and stops the process.
    ///   - onSignal: Called on the listener's thread for each notification and connection change.
    public init(configuration: Configuration, onSignal: @escaping @Sendable (Signal) -> Void) {
        for channel in configuration.channels + [configuration.fenceChannel].compactMap({ $0 }) {
            precondition(Self.isValidChannel(channel), "PostgresListener: invalid channel name \(channel)")
        }
        self.configuration = configuration
        self.loop = PostgresListenerLoop(configuration: configuration, onSignal: onSignal)
    }

    deinit {
        loop.stop()
    }

    /// Starts the thread, which connects and listens. Calling it again, or after ``stop()``, does nothing.
    public func start() {
        loop.start()
    }

    /// Stops the thread and closes the connection, and returns once the thread has ended (at most about
    /// `connectTimeout` when it is in the middle of connecting). Calling it again does nothing. Called from
    /// the callback, it returns at once and the thread ends after the callback returns.
    public func stop() {
        loop.stop()
    }

    /// True while the connection is up and listening on every channel.
    public var isListening: Bool {
        loop.isListening
    }

    /// How fences go on the current connection (``Configuration/fenceMethod``, or the server version's choice);
    /// nil while not listening, or without a fence channel.
    public var fenceMethod: FenceMethod? {
        loop.currentFenceMethod
    }

    /// Sends a fence on the listener's own connection, from its thread, as soon as it can (``FenceMethod``); the
    /// callback gets ``Signal/fence(token:)`` once every notification of a transaction that committed before the
    /// fence was sent has been handed out (docs/caching.md, "The fence, and why it proves enough"). A request made
    /// while another is waiting to be sent replaces it; one made while the connection is down is sent once it is
    /// back. Needs ``Configuration/fenceChannel``.
    ///
    /// - Parameter token: Decimal digits, at most 20 (a programming error otherwise).
    public func sendFence(_ token: String) {
        precondition(configuration.fenceChannel != nil, "PostgresListener: sendFence needs a fence channel")
        precondition(
            (1...20).contains(token.utf8.count) && token.utf8.allSatisfy { (48...57).contains($0) },
            "PostgresListener: a fence token is decimal digits")
        loop.requestFence(token)
    }

    /// Whether `name` is a channel name this listener accepts.
    static func isValidChannel(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 63, first == UInt8(ascii: "_") || (97...122).contains(first)
        else { return false }
        return bytes.allSatisfy { $0 == UInt8(ascii: "_") || (97...122).contains($0) || (48...57).contains($0) }
    }
}

extension PostgresListener {
    /// How a listener connects, what it listens to, and how it recovers. Every setting but the connection
    /// string and the channels has a documented default.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// A libpq URI or `key=value` string. It may hold a password, so it is left out of `description`.
        public var connectionString: String
        /// The channels to `LISTEN` on.
        public var channels: [String]
        /// A channel of this listener's own for ``PostgresListener/sendFence(_:)``: with one, the listener sends
        /// fences. When they go by ``FenceMethod/notify`` it listens on the channel too, and the connection runs
        /// with `synchronous_commit = off` (a fence needs no durability, and must not wait for a disk flush).
        /// Default none.
        public var fenceChannel: String?
        /// How fences are sent; nil (the default): by a bare Sync when the server is PostgreSQL 15 or later, else by
        /// `NOTIFY`. Decided again on every connection, so a failover to another version is followed.
        public var fenceMethod: FenceMethod?
        /// `application_name` of the connection, to find it in `pg_stat_activity`. Default
        /// `fbsessiond-listener`.
        public var applicationName: String?
        /// libpq's `connect_timeout` when the connection string sets none (whole seconds, at least 2 in effect).
        /// Default 5 seconds.
        public var connectTimeout: Duration
        /// How long the connection may be quiet before it is pinged with `SELECT 1`. Default 2 seconds.
        public var keepaliveInterval: Duration
        /// How long a ping (and the connection's `LISTEN`) may wait for its answer before the connection is given
        /// up; it is also the session's `statement_timeout`. Default 3 seconds.
        public var pingTimeout: Duration
        /// TCP keepalives and `tcp_user_timeout`, unless the connection string sets them. Default on.
        public var keepalives: PostgresConnection.Keepalives
        /// The first pause before reconnecting; it doubles after each failed attempt. Default 100 ms.
        public var initialReconnectDelay: Duration
        /// The longest pause between reconnection attempts. Default 5 seconds.
        public var maxReconnectDelay: Duration

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - connectionString: A libpq URI or `key=value` string.
        ///   - channels: The channels to listen on.
        ///   - applicationName: The session's `application_name`, or `nil` for the connection string's.
        ///   - connectTimeout: The longest wait while connecting.
        ///   - keepaliveInterval: The quiet time before a ping.
        ///   - pingTimeout: The longest wait for a ping's answer.
        ///   - initialReconnectDelay: The first reconnection pause.
        ///   - maxReconnectDelay: The cap on reconnection pauses.
        public init(
            connectionString: String,
            channels: [String],
            applicationName: String? = "fbsessiond-listener",
            connectTimeout: Duration = .seconds(5),
            keepaliveInterval: Duration = .seconds(2),
            pingTimeout: Duration = .seconds(3),
            initialReconnectDelay: Duration = .milliseconds(100),
            maxReconnectDelay: Duration = .seconds(5)
        ) {
            self.connectionString = connectionString
            self.channels = channels
            self.applicationName = applicationName
            self.connectTimeout = connectTimeout
            self.keepaliveInterval = keepaliveInterval
            self.pingTimeout = pingTimeout
            self.keepalives = PostgresConnection.Keepalives()
            self.initialReconnectDelay = initialReconnectDelay
            self.maxReconnectDelay = maxReconnectDelay
        }

        /// The settings without the connection string.
        public var description: String {
            "PostgresListener.Configuration(channels: \(channels), fenceChannel: \(fenceChannel ?? "none"), "
                + "fenceMethod: \(fenceMethod.map { "\($0)" } ?? "by server version"), "
                + "applicationName: \(applicationName ?? "default"), "
                + "connectTimeout: \(connectTimeout), keepaliveInterval: \(keepaliveInterval), "
                + "pingTimeout: \(pingTimeout), "
                + "reconnectDelay: \(initialReconnectDelay)...\(maxReconnectDelay))"
        }
    }
}
