internal import CMicroHTTPD
import Foundation
import InlineExecutor
import Support
import Synchronization

/// The part of the server that libmicrohttpd calls into. Kept apart from ``Server`` so that the daemon, which
/// holds an unretained pointer to this object, is always stopped before this object can go away.
///
/// Thread safety: the `handle…` methods run on libmicrohttpd threads; `finish` runs on Swift tasks and `wake` on
/// whatever thread wakes a parked request; shared state (``Shared``, and the fields of an exchange that was ever
/// suspended) is guarded by `shared`'s lock, taken once per step; the count of live exchanges and the draining
/// flag are atomics. An exchange answered without suspending is only ever touched by its connection's thread, so
/// its path takes no lock: the two libmicrohttpd threads took this one lock four times per request
/// (docs/performance.md, round 3).
/// Sendable: libmicrohttpd calls in through an unretained C pointer on its threads; `shared` holds exchanges (not
/// `Sendable`: their fields are guarded by that same lock, or confined to their connection's thread), and
/// `resumed` is set once before the first loop starts. The compiler can check none of that.
final class ServerCore: @unchecked Sendable {
    let configuration: ServerConfiguration
    let handler: any RequestHandler
    /// What the threads share, under one lock. Its lock also guards the fields of every exchange that was ever
    /// suspended (``Exchange/suspended``), which is why a few C calls that resume a connection are made under it.
    private let shared = Locked(Shared())
    private let draining = Atomic<Bool>(false)
    /// `stopping`, for the requests parked in place, which check it on every turn without the lock.
    private let stoppingNow = Atomic<Bool>(false)
    private let liveExchanges = Atomic<Int>(0)
    /// Called after each `MHD_resume_connection`: libmicrohttpd run from an external loop does not wake
    /// that loop by itself (its manual, "Flow control", promises immediate processing of a resumed connection only
    /// with internal polling and `MHD_ALLOW_SUSPEND_RESUME`), so the server's loop for the connection is woken unless
    /// it is the calling thread. Set once, before the first loop starts.
    nonisolated(unsafe) var resumed: (@Sendable (OpaquePointer) -> Void)?

    /// The state ``shared`` guards.
    private struct Shared {
        /// The suspended exchanges (waiting for their handler's task, or parked), by identity.
        var waiting: [ObjectIdentifier: Exchange] = [:]
        /// Set by ``resumeAllForShutdown()``: no exchange suspends from then on.
        var stopping = false
    }

    init(configuration: ServerConfiguration, handler: any RequestHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// Starts the timer that answers requests past the handler timeout (``reapExpired()``), until ``Reaper/stop()``.
    func startReaper() -> Reaper {
        Reaper(self, interval: min(0.25, max(0.01, configuration.handlerTimeout / 4)))
    }

    /// Requests that have started and not yet ended.
    var activeExchanges: Int { liveExchanges.load(ordering: .sequentiallyConsistent) }

    // MARK: Called by the thunks

    func begin(rawURI: String) -> Exchange {
        liveExchanges.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return Exchange(rawURI: rawURI)
    }

    func end(_ exchange: Exchange, termination: MHD_RequestTerminationCode) {
        if exchange.suspended {
            shared.withLock { $0.waiting[ObjectIdentifier(exchange)] = nil }
        }
        leaveInPlace(exchange)
        liveExchanges.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        let outcome: ExchangeRecord.Outcome
        switch termination {
        case .REQUEST_TERMINATED_COMPLETED_OK: outcome = .completed
        case .REQUEST_TERMINATED_TIMEOUT_REACHED: outcome = .timedOut
        case .REQUEST_TERMINATED_DAEMON_SHUTDOWN: outcome = .shutdown
        default: outcome = .aborted
        }
        handler.completed(
            ExchangeRecord(
                requestID: exchange.head?.requestID ?? "-", method: exchange.head?.method ?? "-",
                route: exchange.route, status: exchange.status, duration: exchange.secondsSinceStart,
                outcome: outcome))
    }

    /// One call of the access handler. Returns false to make libmicrohttpd drop the connection.
    func handle(
        _ exchange: Exchange, connection: OpaquePointer, method: UnsafePointer<CChar>?, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>
    ) -> Bool {
        switch exchange.state {
        case .new:
            return start(exchange, connection: connection, method: method.map { String(cString: $0) } ?? "")
        case .receiving, .discarding:
            if uploadSize.pointee > 0 {
                return receive(exchange, bytes: upload, count: uploadSize)
            }
            return dispatch(exchange, connection: connection)
        case .waiting, .parked:
            return true
        case .parkedInPlace:
            return checkParkedInPlace(exchange, on: connection)
        case .woken(let next):
            leaveInPlace(exchange)
            return proceed(next(), for: exchange, on: connection)
        case .ready(let response):
            return queue(response, for: exchange, on: connection)  // suspended before: the locked path
        case .responded:
            uploadSize.pointee = 0
            return true
        }
    }

    // MARK: Steps

    private func start(_ exchange: Exchange, connection: OpaquePointer, method: String) -> Bool {
        // The fields are counted first (a walk of libmicrohttpd's list, no callback) so the list is allocated once.
        var collected = HeaderCollector(capacity: Int(MHD_get_connection_values(connection, .HEADER_KIND, nil, nil)))
        withUnsafeMutablePointer(to: &collected) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, headerIteratorThunk, UnsafeMutableRawPointer(pointer))
        }
        let requestID = RequestIDs.accept(collected.headers["X-Request-Id"])
        let (path, query) = exchange.pathAndQuery
        let head = RequestHead(
            method: method, path: path, rawQuery: query, headers: collected.headers, requestID: requestID)
        exchange.head = head

        let headBytes = method.utf8.count + exchange.rawURI.utf8.count + collected.bytes
        if headBytes > configuration.maxHeaderBytes {
            let response = Response.error(
                status: 431, code: "headers_too_large",
                message: "The request head is larger than \(configuration.maxHeaderBytes) bytes.")
            return queue(response, for: exchange, on: connection)
        }
        if let problem = RequestFraming.problem(collected.headers) {
            var response = Response.error(
                status: problem.status, code: "invalid_request", message: problem.message, requestID: requestID)
            response.headers.add("Connection", "close")
            return queue(response, for: exchange, on: connection)
        }
        switch handler.inspect(head) {
        case .reject(let response, let route):
            exchange.route = route
            return queue(response, for: exchange, on: connection)
        case .proceed(let route, let respond):
            exchange.route = route
            exchange.respond = respond
        }
        if let length = head.headers["Content-Length"], let declared = Int(length),
            declared > configuration.maxBodyBytes
        {
            return queue(Self.tooLarge(configuration.maxBodyBytes), for: exchange, on: connection)
        }
        exchange.state = .receiving
        return true
    }

    private func receive(_ exchange: Exchange, bytes: UnsafePointer<CChar>?, count: UnsafeMutablePointer<Int>) -> Bool {
        let size = count.pointee
        count.pointee = 0
        if case .receiving = exchange.state, let bytes, exchange.body.count + size <= configuration.maxBodyBytes {
            bytes.withMemoryRebound(to: UInt8.self, capacity: size) {
                exchange.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
            }
            return true
        }
        // Over the limit (a chunked body, or one longer than it said): drop the rest, answer 413 at the end,
        // and cut off a client that keeps sending far past the limit.
        exchange.state = .discarding
        exchange.body = []
        exchange.discardedBytes += size
        return exchange.discardedBytes <= 4 * configuration.maxBodyBytes
    }

    private func dispatch(_ exchange: Exchange, connection: OpaquePointer) -> Bool {
        guard case .receiving = exchange.state, let head = exchange.head, let respond = exchange.respond else {
            return queue(Self.tooLarge(configuration.maxBodyBytes), for: exchange, on: connection)
        }
        let request = Request(head: head, body: exchange.body)
        exchange.body = []
        exchange.respond = nil
        return proceed(respond(request), for: exchange, on: connection)
    }

    /// Carries out a handler's reply for an exchange on its connection's thread.
    private func proceed(_ reply: Reply, for exchange: Exchange, on connection: OpaquePointer) -> Bool {
        switch reply {
        case .now(let response):
            return queue(response, for: exchange, on: connection)
        case .later(let work):
            guard suspend(exchange, as: .waiting, on: connection) else {
                return queue(Self.shuttingDown(exchange.head?.requestID), for: exchange, on: connection)
            }
            run(work, for: exchange)
            return true
        case .parked(let park):
            if let loop = EventLoop.onThisThread {
                return parkInPlace(exchange, park, on: loop, connection: connection)
            }
            guard suspend(exchange, as: .parked, on: connection) else {
                return queue(Self.shuttingDown(exchange.head?.requestID), for: exchange, on: connection)
            }
            let box = ExchangeBox(exchange)
            park(Wake { [self] next in wake(box.exchange, with: next) })
            return true
        }
    }

    /// Suspends the connection while its exchange waits in `state`; false when the server is stopping.
    private func suspend(_ exchange: Exchange, as state: Exchange.State, on connection: OpaquePointer) -> Bool {
        let accepted: Bool = shared.withLock { shared in
            guard !shared.stopping else { return false }
            exchange.state = state
            exchange.suspended = true
            exchange.connection = connection
            shared.waiting[ObjectIdentifier(exchange)] = exchange
            return true
        }
        if accepted { MHD_suspend_connection(connection) }
        return accepted
    }

    // MARK: Parked in place

    /// Parks an exchange on its loop without suspending the connection: suspending and resuming cost two `epoll_ctl`
    /// calls, two locks and a walk of libmicrohttpd's lists per request, a tenth of a status request answered from
    /// the exact cache (docs/benchmarks.md). The connection stays on the daemon's list of connections to process,
    /// so the handler is called again on every turn of the loop; it answers nothing until the wake has come, and
    /// 503 once the handler timeout has passed or the server is stopping. A wake on the loop's thread (a fence on
    /// the loop's own connection) takes effect at once; one from any other thread is posted to the loop.
    private func parkInPlace(
        _ exchange: Exchange, _ park: @Sendable (Wake) -> Void, on loop: EventLoop, connection: OpaquePointer
    ) -> Bool {
        guard !stoppingNow.load(ordering: .relaxed) else {
            return queue(Self.shuttingDown(exchange.head?.requestID), for: exchange, on: connection)
        }
        exchange.state = .parkedInPlace
        exchange.loop = loop
        loop.parkedInPlace += 1
        let box = ExchangeBox(exchange)
        park(
            Wake { [self] next in
                if EventLoop.onThisThread === loop {
                    wakeInPlace(box.exchange, with: next)
                } else {
                    loop.post { [self] in wakeInPlace(box.exchange, with: next) }
                }
            })
        return true
    }

    /// On the exchange's loop: the wake of an exchange parked in place, unless it was answered meanwhile.
    private func wakeInPlace(_ exchange: Exchange, with next: @escaping @Sendable () -> Reply) {
        guard case .parkedInPlace = exchange.state, let loop = exchange.loop else { return }
        exchange.state = .woken(next)
        loop.parkedInPlace -= 1
        loop.wokenInPlace += 1
    }

    /// The handler called again for an exchange still parked in place: nothing yet, or 503 when its time is up.
    private func checkParkedInPlace(_ exchange: Exchange, on connection: OpaquePointer) -> Bool {
        let response: Response
        if stoppingNow.load(ordering: .relaxed) {
            response = Self.shuttingDown(exchange.head?.requestID)
        } else if exchange.started + UInt64(configuration.handlerTimeout * 1e9) < DispatchTime.now().uptimeNanoseconds {
            response = .handlerTimedOut(requestID: exchange.head?.requestID)
        } else {
            return true
        }
        leaveInPlace(exchange)
        return queue(response, for: exchange, on: connection)
    }

    /// The exchange is no longer parked or woken in place (it runs again, is answered, or ended): its loop stops
    /// counting it.
    private func leaveInPlace(_ exchange: Exchange) {
        guard let loop = exchange.loop else { return }
        exchange.loop = nil
        switch exchange.state {
        case .parkedInPlace: loop.parkedInPlace -= 1
        case .woken: loop.wokenInPlace -= 1
        default: break
        }
    }

    /// Resumes a parked exchange to run `next` on its connection's thread, unless it was answered meanwhile (timed
    /// out, or the server is stopping).
    func wake(_ exchange: Exchange, with next: @escaping @Sendable () -> Reply) {
        shared.withLock { shared in
            guard case .parked = exchange.state, let connection = exchange.connection,
                shared.waiting.removeValue(forKey: ObjectIdentifier(exchange)) != nil
            else { return }
            exchange.state = .woken(next)
            exchange.connection = nil
            MHD_resume_connection(connection)
            resumed?(connection)
        }
    }

    /// Runs a waiting handler on a task that prefers `InlineTaskExecutor`: it starts on this thread and goes on,
    /// after each suspension, on the thread that resumed it where that thread allows it (a pool or HTTP client
    /// thread), else on a Dispatch worker. The handler timeout is enforced by ``reapExpired()``, not by a sleeping
    /// task per request: a cancelled `Task.sleep` keeps its timer until the deadline, which at thousands of
    /// requests per second held hundreds of megabytes.
    private func run(_ work: @escaping @Sendable () async -> Response, for exchange: Exchange) {
        let box = ExchangeBox(exchange)
        let task = InlineTaskExecutor.runsResumedTasksHere {
            Task.detached(executorPreference: InlineTaskExecutor.shared) { [self] in
                let response = await work()
                self.finish(box.exchange, with: response)
            }
        }
        shared.withLock { _ in
            if case .waiting = exchange.state { exchange.task = task }
        }
    }

    /// Answers 503 for every waiting request past the handler timeout and cancels its work. Called by a timer.
    func reapExpired() {
        let now = DispatchTime.now().uptimeNanoseconds
        let limit = UInt64(configuration.handlerTimeout * 1e9)
        let expired: [Exchange] = shared.withLock { shared in
            // `started` may be later than `now` (an exchange begun since `now` was read): compare by addition.
            shared.waiting.values.filter { $0.started + limit < now }
        }
        for exchange in expired {
            let task = shared.withLock { _ in exchange.task }
            finish(exchange, with: .handlerTimedOut(requestID: exchange.head?.requestID))
            task?.cancel()
        }
    }

    /// Hands a finished response back to the suspended connection and resumes it.
    func finish(_ exchange: Exchange, with response: Response) {
        shared.withLock { shared in
            switch exchange.state {
            case .waiting, .parked: break
            default: return
            }
            guard let connection = exchange.connection,
                shared.waiting.removeValue(forKey: ObjectIdentifier(exchange)) != nil
            else { return }
            exchange.state = .ready(response)
            exchange.connection = nil
            exchange.task = nil
            MHD_resume_connection(connection)
            resumed?(connection)
        }
    }

    /// Answers every suspended request with 503 and refuses new waiting work. Called before the daemon stops.
    func resumeAllForShutdown() {
        let pending: [Exchange] = shared.withLock { shared in
            shared.stopping = true
            stoppingNow.store(true, ordering: .relaxed)
            return Array(shared.waiting.values)
        }
        for exchange in pending {
            finish(exchange, with: Self.shuttingDown(exchange.head?.requestID))
        }
    }

    /// From now on every response asks the client to close its connection.
    func beginDraining() {
        draining.store(true, ordering: .sequentiallyConsistent)
    }

    /// Number of requests suspended while a handler works.
    var waitingCount: Int { shared.withLock { $0.waiting.count } }

    private func queue(_ response: Response, for exchange: Exchange, on connection: OpaquePointer) -> Bool {
        EventLoop.onThisThread?.queuedThisTurn = true
        // Under the lock once the exchange was suspended: `finish` reads the state under it from other threads (a
        // handler's task finishing after the reaper answered 503, or the other way round), and `State` carries a
        // `Response`, so an unlocked write is a data race (ThreadSanitizer reported it here). An exchange never
        // suspended is known to no other thread.
        if exchange.suspended {
            shared.withLock { _ in exchange.state = .responded }
        } else {
            exchange.state = .responded
        }
        guard !response.dropsConnection else { return false }
        exchange.status = response.status
        let made = Self.makeResponse(body: response.body)
        guard let made else { return false }
        defer { MHD_destroy_response(made) }
        for field in response.headers {
            Self.addHeader(field.name, field.value, to: made)
        }
        if let requestID = exchange.head?.requestID {
            Self.addHeader("X-Request-Id", requestID, to: made)
        }
        if draining.load(ordering: .relaxed) {
            _ = MHD_add_response_header(made, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(response.status), made) == .YES
    }

    /// Adds a header through `withCString`: the implicit conversion of a `String` argument to a C string copies a
    /// short (inline) string into a new heap array, and most header names and many values are short.
    private static func addHeader(_ name: String, _ value: String, to response: OpaquePointer) {
        name.withCString { name in
            value.withCString { value in _ = MHD_add_response_header(response, name, value) }
        }
    }

    /// Bodies at least this long are handed to libmicrohttpd without a copy (a cached picture: 100 KB copied per
    /// request was a tenth of the picture path); shorter ones are copied, which costs less than the retain.
    static let zeroCopyThreshold = 4096

    /// An `MHD_Response` over `body`: copied when short, else borrowed, with the array's storage kept alive by a
    /// retained ``BodyOwner`` that libmicrohttpd releases (``releaseBodyThunk``) when it destroys the response.
    private static func makeResponse(body: [UInt8]) -> OpaquePointer? {
        guard body.count >= zeroCopyThreshold else {
            return body.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(
                    raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        let owner = BodyOwner(body)
        let context = Unmanaged.passRetained(owner).toOpaque()  // balanced by releaseBodyThunk, or just below
        let made = MHD_create_response_from_buffer_with_free_callback_cls(
            owner.count, UnsafeMutableRawPointer(mutating: owner.start), releaseBodyThunk, context)
        if made == nil {
            Unmanaged<BodyOwner>.fromOpaque(context).release()
        }
        return made
    }

    // MARK: Errors the HTTP layer answers itself

    static func tooLarge(_ limit: Int) -> Response {
        .error(status: 413, code: "payload_too_large", message: "The request body is larger than \(limit) bytes.")
    }

    static func shuttingDown(_ requestID: String?) -> Response {
        var response = Response.error(
            status: 503, code: "shutting_down", message: "The server is shutting down; try again.",
            requestID: requestID)
        response.headers.add("Retry-After", "1")
        response.headers.add("Connection", "close")
        return response
    }
}

/// The timer that calls ``ServerCore/reapExpired()``. It holds the core strongly but only until ``stop()``: a weak
/// reference would move the core's reference count to a side table, and libmicrohttpd's threads retain the core on
/// every call (docs/performance.md, "Figures behind the code"); and libdispatch lets go of a cancelled timer's handler only later,
/// on its own queue, so a handler that held the core itself would keep the whole service alive past the server's
/// end (LeakSanitizer reported it at exit).
///
/// Sendable: libdispatch's timers are safe to use from any thread, but its Swift overlay does not mark
/// `DispatchSourceTimer` `Sendable`.
final class Reaper: @unchecked Sendable {
    /// What the handler holds: the core, until ``stop()``.
    private final class Target: Sendable {
        let core: Locked<ServerCore?>
        init(_ core: ServerCore) { self.core = Locked(core) }
    }

    private let timer: any DispatchSourceTimer
    private let target: Target

    init(_ core: ServerCore, interval: Double) {
        let target = Target(core)
        self.target = target
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(20))
        timer.setEventHandler { target.core.withLock { $0 }?.reapExpired() }
        timer.resume()
    }

    /// Stops the timer and lets go of the core. Idempotent.
    func stop() {
        target.core.withLock { $0 = nil }
        timer.cancel()
    }
}

/// Carries an exchange into a task or a wake. The exchange is only touched there through `ServerCore.finish` and
/// `wake`, under the core's lock, or on its own loop's thread (`wakeInPlace`, posted to that loop).
///
/// Sendable: `Exchange` is not (its fields are guarded by the core's lock once suspended, or confined to one thread),
/// and this box is how it crosses to the task; the compiler cannot see that discipline.
private struct ExchangeBox: @unchecked Sendable {
    let exchange: Exchange
    init(_ exchange: Exchange) { self.exchange = exchange }
}

/// Keeps a response body's bytes alive, unchanged and at one address, while libmicrohttpd sends them.
///
/// Ownership: retained once for libmicrohttpd when its response is made, released by ``releaseBodyThunk`` when the
/// response is destroyed. The buffer is its own copy of the array's storage (an array's elements may move only
/// when it is mutated, and `body` is a `let` no one else can mutate, so no bytes are copied).
/// Sendable: immutable; only `start`, the C pointer into its own `body` that libmicrohttpd reads, is not `Sendable`.
final class BodyOwner: @unchecked Sendable {
    let body: [UInt8]
    let start: UnsafeRawPointer?
    let count: Int

    init(_ body: [UInt8]) {
        self.body = body
        self.count = body.count
        self.start = body.withUnsafeBytes { UnsafeRawPointer($0.baseAddress) }
    }
}

/// Collects header fields during `MHD_get_connection_values`; lives on the caller's stack frame.
struct HeaderCollector {
    var headers: HTTPHeaders
    var bytes = 0

    init(capacity: Int) {
        headers = HTTPHeaders(capacity: capacity)
    }
}
