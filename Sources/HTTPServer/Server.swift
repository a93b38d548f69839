internal import CMicroHTTPD
import Foundation
import Support

/// An HTTP/1.1 server on libmicrohttpd that answers every request through a ``RequestHandler``.
///
/// Event loops: the server runs one libmicrohttpd daemon per thread in external-epoll mode, each on a thread of its
/// own (``EventLoop``), all accepting on the one listening socket (a duplicate descriptor each). A handler that must
/// wait answers with ``Reply/later(_:)``; the server then suspends the connection (`MHD_suspend_connection`), so the
/// waiting request holds no thread, and resumes it when the work returns. Keep-alive, the idle timeout, the
/// connection limit and the body and head limits are enforced here, so every handler sees a bounded request.
///
/// Each loop may have an ``EventLoopCompanion`` in the same `epoll` set: a request parked on a loop can then be woken
/// by what the companion reads, on that same thread (docs/caching.md, "A fence connection per event loop"). Without
/// one, a loop has nothing beside its sockets.
///
/// Why loops for every server, and not libmicrohttpd's own thread pool: a loop quiesces its daemon on its own
/// thread, the one that also takes the listening socket out of the daemon's `epoll` set at the connection limit.
/// With the pool, `MHD_quiesce_daemon` raced the workers doing that, and libmicrohttpd aborts when it loses
/// (docs/hostile-input.md, bug 7).
///
/// Ownership: owns the `MHD_Daemon`s (and the loops); ``shutdown(gracePeriod:)`` and `deinit` stop them. The
/// ``ServerCore`` that libmicrohttpd calls back into is retained here and outlives the daemons.
/// Thread safety: all methods may be called from any thread.
public final class Server: Sendable {
    /// The configuration the server started with.
    public let configuration: ServerConfiguration
    /// The port the server listens on (the chosen one when the configuration said 0).
    public let port: Int

    private let core: ServerCore
    /// The core's timer for the handler timeout; cancelled when the server stops. Its lock is held for the whole of
    /// ``shutdown(gracePeriod:)``, so that shutdowns run one at a time and each returns once the daemons have
    /// stopped.
    private let reaper = Locked<Reaper?>(nil)
    /// The event loops, under a lock of their own: the gauges read them and must not wait for ``reaper``'s lock
    /// while a shutdown holds it.
    private let loops = Locked<[EventLoop]>([])

    /// Binds the socket and starts serving.
    ///
    /// - Parameters:
    ///   - configuration: Address, limits and threads.
    ///   - handler: What answers the requests.
    ///   - companion: Called on each loop's thread as it starts (with the loop's index), it makes what that loop
    ///     watches beside its sockets; nil for nothing.
    /// - Throws: ``ServerError`` when the address is invalid, the port is taken, or a daemon or a loop's thread
    ///   cannot start.
    public init(
        configuration: ServerConfiguration, handler: some RequestHandler,
        companion: (@Sendable (Int) -> any EventLoopCompanion)? = nil
    ) throws {
        LibraryPanic.install()
        self.configuration = configuration
        self.core = ServerCore(configuration: configuration, handler: handler)
        let socket = try ListenSocket(host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        self.port = socket.port

        let threads = configuration.threads > 0 ? configuration.threads : ProcessInfo.processInfo.activeProcessorCount
        let context = Unmanaged.passUnretained(core).toOpaque()
        let completed: MHD_RequestCompletedCallback = requestCompletedThunk
        let uriLog: URILogCallback = uriLogThunk
        let options: [any CVarArg] = [
            MHD_OPTION.LISTEN_SOCKET.rawValue, socket.descriptor,
            MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, configuration.connectionMemoryLimit,
            MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(configuration.connectionLimit),
            MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(configuration.connectionTimeout),
            MHD_OPTION.NOTIFY_COMPLETED.rawValue, Int(bitPattern: unsafeBitCast(completed, to: UnsafeRawPointer.self)), Int(bitPattern: context),
            MHD_OPTION.URI_LOG_CALLBACK.rawValue, Int(bitPattern: unsafeBitCast(uriLog, to: UnsafeRawPointer.self)), Int(bitPattern: context),
            // Strict parsing: HTTP/1.1 without Host is 400, no spaces in the URL (docs/hostile-input.md).
            MHD_OPTION.STRICT_FOR_CLIENT.rawValue, Int32(1),
            MHD_OPTION.END.rawValue,
        ]
        try startLoops(threads, socket: socket, options: options, companion: companion ?? { _ in IdleCompanion() })
        let started = core.startReaper()
        reaper.withLock { $0 = started }
    }

    /// The event loops serving; 0 once stopped.
    public var loopCount: Int { loops.withLock { $0.count } }

    /// Requests in progress (head received, response not yet finished).
    public var activeRequests: Int { core.activeExchanges }

    /// Requests waiting while their handler works or their wake is due (suspended, or parked in place on a loop).
    public var waitingRequests: Int {
        core.waitingCount + loops.withLock { $0.reduce(0) { $0 + $1.waitingInPlace.load(ordering: .relaxed) } }
    }

    /// Stops accepting connections, lets in-flight requests finish for up to `gracePeriod` seconds, answers the
    /// rest with 503, and stops. Idempotent; blocks the calling thread until the daemons have stopped.
    public func shutdown(gracePeriod: Double = 10) {
        // Held throughout, deliberately (see `reaper`): a second caller waits for the first shutdown to end.
        reaper.withLock { reaper in
            defer {
                reaper?.stop()
                reaper = nil
            }
            let running = loops.withLock { $0 }
            guard !running.isEmpty else { return }
            stopLoops(running, gracePeriod: gracePeriod)
        }
    }

    /// Once no new connection is accepted: lets in-flight requests finish for up to `gracePeriod` seconds, answers
    /// the suspended rest with 503, and gives those a second to go out.
    private func drain(gracePeriod: Double) {
        let deadline = Date().addingTimeInterval(gracePeriod)
        while core.activeExchanges > 0 && Date() < deadline {
            usleep(5_000)
        }
        core.resumeAllForShutdown()
        let last = Date().addingTimeInterval(1)
        while core.activeExchanges > 0 && Date() < last {
            usleep(5_000)
        }
    }

    deinit {
        shutdown(gracePeriod: 0)
    }

    // MARK: Event loops

    /// Starts a daemon and its loop per thread, each on its own duplicate of the listening socket (non-blocking, so
    /// that a loop that loses the race for a new connection does not block in `accept`). The connection limit is
    /// shared out among them. On a failure, stops what it started and throws.
    private func startLoops(
        _ count: Int, socket: ListenSocket, options: [any CVarArg],
        companion: @escaping @Sendable (Int) -> any EventLoopCompanion
    ) throws {
        let flags = MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_TURBO.rawValue
        let context = Unmanaged.passUnretained(core).toOpaque()
        let shared = socket.descriptor
        _ = fcntl(shared, F_SETFL, fcntl(shared, F_GETFL) | O_NONBLOCK)
        let place = "\(configuration.host):\(port)"
        var made: [EventLoop] = []
        var running = 0
        do {
            for index in 0..<count {
                let descriptor = fcntl(shared, F_DUPFD_CLOEXEC, 0)
                guard descriptor >= 0, let listening = ListeningSocket(descriptor) else {
                    let reason = String(cString: strerror(errno))
                    if descriptor >= 0 { close(descriptor) }
                    throw ServerError(.startFailed, "event loop \(index) did not start on \(place): \(reason)")
                }
                var own = options
                own[1] = descriptor  // After MHD_OPTION.LISTEN_SOCKET.
                own[5] = UInt32((configuration.connectionLimit + count - 1) / count)  // After CONNECTION_LIMIT.
                // libmicrohttpd owns the duplicate from here: it closes it itself when it fails to start, and a second
                // close here would close whatever another thread opened under that number meanwhile
                // (ServerStartFailureTests).
                let daemon = withVaList(own) { arguments in
                    MHD_start_daemon_va(flags, 0, nil, nil, accessHandlerThunk, context, arguments)
                }
                guard let daemon else {
                    let reason = String(cString: strerror(errno))
                    throw ServerError(.startFailed, "libmicrohttpd did not start on \(place): \(reason)")
                }
                do {
                    made.append(
                        try EventLoop(daemon: daemon, index: index, listening: listening, makeCompanion: companion))
                } catch {
                    MHD_stop_daemon(daemon)
                    throw error
                }
            }
            let all = made
            core.resumed = { connection in
                // The loop that runs the connection's daemon, unless that is this thread (it runs the daemon next).
                let daemon = fbs_mhd_connection_daemon(connection)
                guard let owner = all.first(where: { $0.daemon == daemon }), owner !== EventLoop.onThisThread
                else { return }
                owner.wake()
            }
            for loop in made {
                do {
                    try loop.start(stackSize: configuration.threadStackSize)
                } catch let error as ServerError {
                    throw ServerError(
                        .startFailed, "event loop \(loop.index) did not start on \(place): \(error.detail)")
                }
                running += 1
            }
        } catch {
            for loop in made.prefix(running) { loop.join() }
            stopDaemons(of: made)
            throw error
        }
        loops.withLock { $0 = made }
    }

    /// ``shutdown(gracePeriod:)``: each loop stops accepting (on its own thread), in-flight requests
    /// finish or get 503, then the loops end, their companions stop, and the daemons stop.
    ///
    /// A loop held up past the second it is given (a long turn, a loaded machine) is quiesced once it has ended, so
    /// that libmicrohttpd never closes a listening socket itself: the server closes each one, and only while its
    /// number still names it (``ListeningSocket``). A daemon whose number was closed by something else is left
    /// unstopped, and reported: stopping it would close that number again, and libmicrohttpd aborts the process
    /// when that close fails (docs/hostile-input.md, bug 10).
    private func stopLoops(_ running: [EventLoop], gracePeriod: Double) {
        core.beginDraining()
        for loop in running { loop.beginQuiescing() }
        let deadline = Date().addingTimeInterval(1)
        for loop in running {
            if let given = loop.takeListeningSocket(waitingUpTo: deadline.timeIntervalSinceNow) {
                if given == .socket { closeListening(of: loop) }
            } else {
                configuration.reportProblem(
                    "event loop \(loop.index) had not stopped accepting 1 s after the shutdown began; its thread was "
                        + "\(loop.phaseDescription)")
            }
        }
        drain(gracePeriod: gracePeriod)
        for loop in running { loop.join() }
        stopDaemons(of: running)
        loops.withLock { $0 = [] }
    }

    /// Stops the daemons of loops that have ended (or never started): each daemon is quiesced first if its loop did
    /// not do it, and its listening socket closed here, only while its number still names it.
    private func stopDaemons(of ended: [EventLoop]) {
        for loop in ended {
            switch loop.takeListeningSocketAfterEnd() {
            case .socket:
                closeListening(of: loop)
                MHD_stop_daemon(loop.daemon)
            case .nothing:
                MHD_stop_daemon(loop.daemon)
            case .notOurs:
                Self.abandoned.withLock { $0.append(AbandonedDaemon(daemon: loop.daemon)) }
                configuration.reportProblem(
                    "the listening socket of event loop \(loop.index) (descriptor \(loop.listening.descriptor)) was "
                        + "closed by something else in this process; its daemon is left unstopped")
            }
        }
    }

    /// Closes a listening socket a loop gave back, unless its number no longer names it (closed and perhaps reused
    /// elsewhere: closing it would close another thread's file).
    private func closeListening(of loop: EventLoop) {
        let socket = loop.listening.descriptor
        guard loop.listening.isStillOurs else {
            configuration.reportProblem(
                "the listening socket of event loop \(loop.index) (descriptor \(socket)) was closed by something else "
                    + "in this process before the shutdown closed it; left alone")
            return
        }
        close(socket)
    }

    /// Daemons never stopped because their listening socket was closed elsewhere (``stopLoops(_:gracePeriod:)``):
    /// kept reachable, as the deliberate leak they are.
    private static let abandoned = Locked<[AbandonedDaemon]>([])
}

/// A daemon left unstopped (``Server``'s `abandoned`).
///
/// Sendable: the C pointer is only kept, so that the leak stays reachable; nothing calls through it again.
private struct AbandonedDaemon: @unchecked Sendable {
    let daemon: OpaquePointer
}

/// libmicrohttpd's URI logger: `void *(*)(void *cls, const char *uri, struct MHD_Connection *con)`.
typealias URILogCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) ->
    UnsafeMutableRawPointer?
