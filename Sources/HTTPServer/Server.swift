internal import CMicroHTTPD
import Foundation

/// An HTTP/1.1 server on libmicrohttpd that answers every request through a ``RequestHandler``.
///
/// libmicrohttpd polls sockets with epoll on a small pool of threads. A handler that must wait answers with
/// ``Reply/later(_:)``; the server then suspends the connection (`MHD_suspend_connection`), so the waiting request
/// holds no thread, and resumes it when the work returns. Keep-alive, the idle timeout, the connection limit and
/// the body and head limits are enforced here, so every handler sees a bounded request.
///
/// Ownership: owns the `MHD_Daemon`; ``shutdown(gracePeriod:)`` and `deinit` stop it. The ``ServerCore`` that
/// libmicrohttpd calls back into is retained here and outlives the daemon.
/// Thread safety: all methods may be called from any thread.
public final class Server: @unchecked Sendable {
    /// The configuration the server started with.
    public let configuration: ServerConfiguration
    /// The port the server listens on (the chosen one when the configuration said 0).
    public let port: Int

    private let core: ServerCore
    private let lock = NSLock()
    private var daemon: OpaquePointer?

    /// Binds the socket and starts serving.
    /// - Throws: ``ServerError`` when the address is invalid, the port is taken, or libmicrohttpd fails to start.
    public init(configuration: ServerConfiguration, handler: some RequestHandler) throws {
        LibraryPanic.install()
        self.configuration = configuration
        self.core = ServerCore(configuration: configuration, handler: ErasedHandler(handler))
        let socket = try ListenSocket(host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        self.port = socket.port

        let threads = configuration.threads > 0 ? configuration.threads : ProcessInfo.processInfo.activeProcessorCount
        let flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_TURBO.rawValue
        let context = Unmanaged.passUnretained(core).toOpaque()
        let completed: MHD_RequestCompletedCallback = requestCompletedThunk
        let uriLog: URILogCallback = uriLogThunk
        var options: [any CVarArg] = [
            MHD_OPTION.LISTEN_SOCKET.rawValue, socket.descriptor,
            MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, configuration.connectionMemoryLimit,
            MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(configuration.connectionLimit),
            MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(configuration.connectionTimeout),
            MHD_OPTION.NOTIFY_COMPLETED.rawValue, Int(bitPattern: unsafeBitCast(completed, to: UnsafeRawPointer.self)), Int(bitPattern: context),
            MHD_OPTION.URI_LOG_CALLBACK.rawValue, Int(bitPattern: unsafeBitCast(uriLog, to: UnsafeRawPointer.self)), Int(bitPattern: context),
            // Strict parsing: HTTP/1.1 without Host is 400, no spaces in the URL (docs/hostile-input.md).
            MHD_OPTION.STRICT_FOR_CLIENT.rawValue, Int32(1),
        ]
        if threads > 1 {
            options += [MHD_OPTION.THREAD_POOL_SIZE.rawValue, UInt32(threads)]
        }
        if configuration.threadStackSize > 0 {
            options += [MHD_OPTION.THREAD_STACK_SIZE.rawValue, configuration.threadStackSize]
        }
        options.append(MHD_OPTION.END.rawValue)
        // Handed over before the call, not after it succeeds: libmicrohttpd closes the socket itself when it fails
        // to start (a worker's epoll set, its wake-up channel or thread, memory), and a second close here would
        // close whatever another thread opened under that number meanwhile (ServerStartFailureTests).
        _ = socket.handOver()
        let started = withVaList(options) { arguments in
            MHD_start_daemon_va(flags, 0, nil, nil, accessHandlerThunk, context, arguments)
        }
        guard let started else {
            // errno is what failed last (its clean-up only closes what it made, which leaves errno alone):
            // usually out of descriptors, threads or memory.
            let reason = String(cString: strerror(errno))
            throw ServerError(.startFailed, "libmicrohttpd did not start on \(configuration.host):\(port): \(reason)")
        }
        self.daemon = started
    }

    /// Requests in progress (head received, response not yet finished).
    public var activeRequests: Int { core.activeExchanges }

    /// Requests suspended while their handler waits.
    public var waitingRequests: Int { core.waitingCount }

    /// Stops accepting connections, lets in-flight requests finish for up to `gracePeriod` seconds, answers the
    /// rest with 503, and stops. Idempotent; blocks the calling thread until the daemon has stopped.
    public func shutdown(gracePeriod: Double = 10) {
        lock.lock()
        defer { lock.unlock() }
        guard let daemon else { return }
        core.beginDraining()
        let listener = MHD_quiesce_daemon(daemon)
        if listener >= 0 { close(listener) }
        let deadline = Date().addingTimeInterval(gracePeriod)
        while core.activeExchanges > 0 && Date() < deadline {
            usleep(5_000)
        }
        core.resumeAllForShutdown()
        let last = Date().addingTimeInterval(1)
        while core.activeExchanges > 0 && Date() < last {
            usleep(5_000)
        }
        MHD_stop_daemon(daemon)
        self.daemon = nil
    }

    deinit {
        shutdown(gracePeriod: 0)
    }
}

/// libmicrohttpd's URI logger: `void *(*)(void *cls, const char *uri, struct MHD_Connection *con)`.
typealias URILogCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) ->
    UnsafeMutableRawPointer?
