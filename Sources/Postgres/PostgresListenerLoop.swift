internal import CLibPQ
import Foundation
import Support

/// The thread behind a ``PostgresListener``: connect, `LISTEN`, wait in `poll()`, hand out notifications,
/// reconnect with backoff.
///
/// Ownership: owns the wake pipe (both ends closed in `deinit`) and, on its thread only, the connection. The
///   thread's closure retains the loop until the thread ends.
/// Thread safety: `start()`, `stop()` and `isListening` go through `state`; everything else runs on the thread.
/// Sendable: `state` is under its lock but holds the `Thread` (not `Sendable`), and `fenceMethod` and the libpq
///   connection are touched only on the loop's own thread, which the compiler cannot see.
final class PostgresListenerLoop: @unchecked Sendable {
    private struct State {
        var started = false
        var stopping = false
        var listening = false
        var thread: Thread?
        /// A fence token waiting to be sent (``PostgresListener/sendFence(_:)``).
        var fence: String?
        /// How fences go on the current connection; nil while not listening or without a fence channel.
        var fenceMethod: PostgresListener.FenceMethod?
    }

    private let configuration: PostgresListener.Configuration
    private let onSignal: @Sendable (PostgresListener.Signal) -> Void
    private let state = Locked(State())
    private let ended = DispatchSemaphore(value: 0)
    /// Read and write ends of a non-blocking pipe; `stop()` writes a byte so `poll()` returns at once. When
    /// `pipe` fails (no descriptors left), both are -1 and the thread wakes every 100 ms to check instead.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// How fences go on the current connection (decided in `connect()`; the thread's only, published in `state`).
    private var fenceMethod = PostgresListener.FenceMethod.notify

    init(configuration: PostgresListener.Configuration, onSignal: @escaping @Sendable (PostgresListener.Signal) -> Void)
    {
        self.configuration = configuration
        self.onSignal = onSignal
        var descriptors: [Int32] = [-1, -1]
        if pipe(&descriptors) == 0 {
            for descriptor in descriptors {
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            }
        } else {
            descriptors = [-1, -1]
        }
        self.wakeRead = descriptors[0]
        self.wakeWrite = descriptors[1]
    }

    deinit {
        if wakeRead >= 0 {
            close(wakeRead)
            close(wakeWrite)
        }
    }

    var isListening: Bool {
        state.withLock { $0.listening }
    }

    var currentFenceMethod: PostgresListener.FenceMethod? {
        state.withLock { $0.fenceMethod }
    }

    func start() {
        let thread = Thread { [self] in
            // Set here: on Linux a name set before start() is lost. At most 15 bytes (Linux's limit).
            Thread.current.name = "pg-listener"
            run()
            state.withLock { state in
                state.listening = false
                state.thread = nil  // The thread retains this loop through its closure; let both go.
            }
            ended.signal()
        }
        let shouldStart = state.withLock { state in
            guard !state.started, !state.stopping else { return false }
            state.started = true
            state.thread = thread
            return true
        }
        if shouldStart {
            thread.start()
        }
    }

    func stop() {
        let (wasRunning, thread) = state.withLock { state -> (Bool, Thread?) in
            guard !state.stopping else { return (false, nil) }
            state.stopping = true
            return (state.started, state.thread)
        }
        guard wasRunning else { return }
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        if let thread, thread === Thread.current {
            return  // Called from the callback: the thread ends once the callback returns.
        }
        ended.wait()
    }

    func requestFence(_ token: String) {
        state.withLock { $0.fence = token }
        if wakeWrite >= 0 {
            var byte: UInt8 = 2
            _ = write(wakeWrite, &byte, 1)
        }
    }

    private var isStopping: Bool {
        state.withLock { $0.stopping }
    }

    // MARK: The thread

    private func run() {
        var delay = configuration.initialReconnectDelay
        var missedNotifications = false
        while !isStopping {
            guard let connection = connect() else {
                missedNotifications = true
                pause(delay)
                delay = min(delay * 2, configuration.maxReconnectDelay)
                continue
            }
            delay = configuration.initialReconnectDelay
            let method = configuration.fenceChannel == nil ? nil : fenceMethod
            state.withLock { state in
                state.listening = true
                state.fenceMethod = method
            }
            if missedNotifications {
                onSignal(.reconnected)
            }
            listen(on: connection)
            connection.close()
            state.withLock { state in
                state.listening = false
                state.fenceMethod = nil
            }
            if isStopping {
                return
            }
            missedNotifications = true
            onSignal(.disconnected)
        }
    }

    /// Opens a connection and listens on every channel, or returns `nil`.
    private func connect() -> PostgresConnection? {
        do {
            let connection = try PostgresConnection(
                connectionString: configuration.connectionString,
                options: PostgresConnection.Options(
                    connectTimeout: configuration.connectTimeout, statementTimeout: configuration.pingTimeout,
                    deadlineMargin: .zero, applicationName: configuration.applicationName,
                    keepalives: configuration.keepalives, preparedStatements: .never))
            for channel in configuration.channels {
                // The names were checked against [a-z_][a-z0-9_]* in PostgresListener.init, and LISTEN takes
                // no parameters.
                try connection.simpleQuery(unsafeSQL: "LISTEN \"\(channel)\"")
            }
            if let fence = configuration.fenceChannel {
                fenceMethod = configuration.fenceMethod ?? Self.fenceMethod(serverVersion: connection.serverVersion)
                if fenceMethod == .notify {
                    // Checked like the channels; see `fenceChannel` for the commit setting.
                    try connection.simpleQuery(unsafeSQL: "LISTEN \"\(fence)\"")
                    try connection.simpleQuery(unsafeSQL: "SET synchronous_commit = off")
                }
            }
            return connection
        } catch {
            return nil
        }
    }

    /// Waits for notifications until the connection is lost or `stop()` is called.
    private func listen(on connection: PostgresConnection) {
        guard let handle = connection.handle else { return }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return }
        let keepalive = configuration.keepaliveInterval
        var quietSince = ContinuousClock.now
        drain(handle)  // Anything that arrived with the LISTEN answers.
        while !isStopping {
            if let fence = configuration.fenceChannel, let token = state.withLock({ state in
                defer { state.fence = nil }
                return state.fence
            }) {
                // Bounded like a ping. The token is digits (PostgresListener.sendFence) and the channel was checked.
                let sent: Bool
                switch fenceMethod {
                case .sync:
                    sent = (try? connection.synchronize()) != nil
                case .notify:
                    sent = (try? connection.simpleQuery(unsafeSQL: "SELECT pg_notify('\(fence)', '\(token)')")) != nil
                }
                guard sent, connection.isUsable else {
                    state.withLock { $0.fence = $0.fence ?? token }  // Sent again on the next connection.
                    return
                }
                // Every notification the server sent before its answer, first (a NOTIFY fence among them).
                drain(handle)
                if fenceMethod == .sync {
                    onSignal(.fence(token: token))
                }
                quietSince = ContinuousClock.now
                continue
            }
            let quietFor = ContinuousClock.now - quietSince
            if quietFor >= keepalive {
                // Bounded by the connection's deadline (pingTimeout): a frozen server ends the wait too.
                guard (try? connection.simpleQuery(unsafeSQL: "SELECT 1")) != nil, connection.isUsable else { return }
                drain(handle)
                quietSince = ContinuousClock.now
                continue
            }
            switch wait(for: socket, timeout: keepalive - quietFor) {
            case .stop:
                return
            case .timeout, .woken:
                continue
            case .readable:
                guard PQconsumeInput(handle) != 0 else { return }
                drain(handle)
                guard connection.isUsable else { return }
                quietSince = ContinuousClock.now
            }
        }
    }

    /// Hands every queued notification to the callback, freeing each with `PQfreemem`.
    private func drain(_ handle: OpaquePointer) {
        while let (channel, payload) = Self.nextNotification(handle) {
            if channel == configuration.fenceChannel {
                onSignal(.fence(token: payload))
            } else {
                onSignal(.notification(channel: channel, payload: payload))
            }
        }
    }

    /// The next notification libpq has parsed on `handle` (`PQnotifies`, freed here), or nil.
    static func nextNotification(_ handle: OpaquePointer) -> (channel: String, payload: String)? {
        guard let notify = PQnotifies(handle) else { return nil }
        defer { PQfreemem(notify) }
        return (notify.pointee.relname.map { String(cString: $0) } ?? "", notify.pointee.extra.map { String(cString: $0) } ?? "")
    }

    /// Fences by a bare Sync from PostgreSQL 15 on (`PostgresListener.FenceMethod.sync`), by `NOTIFY` before:
    /// older servers may hand out another session's notifications only after reporting themselves idle.
    static func fenceMethod(serverVersion: Int) -> PostgresListener.FenceMethod {
        serverVersion >= 150_000 ? .sync : .notify
    }

    private enum WaitResult {
        case readable, timeout, stop, woken
    }

    /// Blocks in `poll()` until `socket` (if any) is readable, the wake pipe is written, or `timeout` passes.
    private func wait(for socket: Int32?, timeout: Duration) -> WaitResult {
        let wakeable = wakeRead >= 0
        let slice = wakeable ? timeout : min(timeout, .milliseconds(100))
        let milliseconds = Int32(clamping: max(1, slice.postgresMilliseconds))
        var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        if let socket {
            descriptors.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0))
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if isStopping {
            return .stop
        }
        if ready < 0 {
            return errno == EINTR ? .timeout : (socket == nil ? .timeout : .readable)
        }
        if ready == 0 {
            return .timeout
        }
        if let last = descriptors.last, socket != nil, last.revents != 0 {
            return .readable  // Data, or POLLHUP/POLLERR: PQconsumeInput then finds out which.
        }
        if wakeable, descriptors[0].revents != 0 {
            var bytes = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &bytes, bytes.count) > 0 {}  // Non-blocking: empties the pipe.
            return .woken
        }
        return .timeout
    }

    /// Sleeps `duration` unless `stop()` is called first.
    private func pause(_ duration: Duration) {
        let deadline = ContinuousClock.now + duration
        while !isStopping, ContinuousClock.now < deadline {
            if wait(for: nil, timeout: deadline - ContinuousClock.now) == .stop {
                return
            }
        }
    }
}
