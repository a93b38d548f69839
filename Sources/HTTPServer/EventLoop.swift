internal import CMicroHTTPD
import Foundation
import Support
import Synchronization

/// Something an event loop watches beside its HTTP sockets, on the loop's own thread: a database connection whose
/// answers wake requests parked on that loop (an exact cache's fences), with no lock and no other thread between.
///
/// Every method is called on the loop's thread, but ``stop()``, which is called once the loop has ended.
public protocol EventLoopCompanion: AnyObject {
    /// The descriptor to watch for input, and a number that changes whenever it is another connection's (so that
    /// the loop follows a reconnect even when the new socket got the old one's number); nil while there is none.
    var watched: (descriptor: Int32, serial: UInt64)? { get }
    /// The descriptor is readable (or hung up).
    func readable()
    /// After each turn of the loop, once the turn's requests were handled. Returns the longest the loop may sleep
    /// before calling again, in nanoseconds (nil: no limit).
    func afterTurn() -> UInt64?
    /// The loop has ended: release what it holds.
    func stop()
}

/// One thread that runs one libmicrohttpd daemon in external-epoll mode and a companion in the same `epoll` set
/// (one of a ``Server``'s loops).
///
/// The thread waits in `epoll_wait` on the daemon's own `epoll` descriptor (which libmicrohttpd's wake-up channel
/// makes readable when another thread resumes a connection), the companion's descriptor and a wake-up `eventfd`, for
/// at most the daemon's and the companion's next deadline and never more than 100 ms; then it runs the daemon
/// (`MHD_run`) and the companion's ``EventLoopCompanion/afterTurn()``.
///
/// Ownership: the loop owns its `epoll` descriptor (closed when its thread ends) and its `eventfd` (closed in
/// `deinit`); the daemon is the server's, stopped by it after ``join()``.
/// Sendable: the libmicrohttpd daemon pointer, `companion` and the counts of requests parked in place are touched
/// only on the loop's thread (`companion` again in ``join()``, once that thread has ended); what other threads
/// reach is in `Locked`s and atomics. The compiler sees neither the C pointer's rules nor the thread.
final class EventLoop: @unchecked Sendable {
    let daemon: OpaquePointer
    /// The loop's number, for its thread's name and for reports.
    let index: Int
    /// The daemon's listening socket (a duplicate of the server's, the daemon's own), and what it was when the loop
    /// started: before the server closes that number, or lets libmicrohttpd touch it, it checks that the number still
    /// names this socket (``ListeningSocket``).
    let listening: ListeningSocket
    private let makeCompanion: @Sendable (Int) -> any EventLoopCompanion
    private let wakeDescriptor: Int32
    private let stopping = Atomic<Bool>(false)
    private let quiescing = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)
    /// Whether the daemon still accepts, and the listening socket once it has stopped (``quiesce()``), until the
    /// server takes it to close it.
    private let listeningState = Locked<Listening>(.accepting)
    /// What the loop's thread is doing (a ``Phase``), for the report on a loop late to stop accepting.
    private let phase = Atomic<UInt8>(Phase.starting.rawValue)
    /// Set once the companion exists (on the loop's thread), for ``join()``.
    private var companion: (any EventLoopCompanion)?

    // Requests parked in place (``ServerCore``): their connections stay in libmicrohttpd's `epoll` set and its list
    // of connections to process, so the daemon asks for a turn at once (a timeout of 0) while any is parked, and the
    // loop must tell that apart from work of its own. Touched on the loop's thread only.
    /// Requests parked in place whose ``Wake`` has not come yet.
    var parkedInPlace = 0 { didSet { publishWaiting() } }
    /// Requests woken in place that the daemon has not run again yet.
    var wokenInPlace = 0 { didSet { publishWaiting() } }
    /// Whether a response was queued during the turn (libmicrohttpd sends one queued outside its first read on a
    /// later turn).
    var queuedThisTurn = false
    /// The requests parked or woken in place, for ``Server/waitingRequests`` (read on any thread).
    let waitingInPlace = Atomic<Int>(0)
    /// Work posted by other threads for the loop's thread (``post(_:)``).
    private let mailbox = Locked<[@Sendable () -> Void]>([])

    /// The longest the loop sleeps while it has requests parked in place and nothing else known to do, in
    /// milliseconds: a parked request's wake comes with a wake-up of the loop, so this only bounds how soon the
    /// handler timeout is seen, and how long work libmicrohttpd has pending and gives no sign of waits meanwhile
    /// (a socket buffer it filled in one read).
    static let parkedTick: UInt64 = 1

    init(
        daemon: OpaquePointer, index: Int, listening: ListeningSocket,
        makeCompanion: @escaping @Sendable (Int) -> any EventLoopCompanion
    ) throws {
        self.daemon = daemon
        self.index = index
        self.listening = listening
        self.makeCompanion = makeCompanion
        wakeDescriptor = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard wakeDescriptor >= 0 else { throw ServerError(.startFailed, String(cString: strerror(errno))) }
    }

    deinit {
        // Here rather than when the thread ends: a late ``wake()`` must never write to a number reused meanwhile.
        close(wakeDescriptor)
    }

    /// Starts the loop's thread, with `stackSize` bytes of stack (0: the system's default).
    ///
    /// - Throws: ``ServerError`` `.startFailed` when no such thread can be made (out of threads or memory).
    func start(stackSize: Int) throws {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if stackSize > 0 {
            let status = pthread_attr_setstacksize(&attributes, stackSize)
            guard status == 0 else { throw ServerError(.startFailed, String(cString: strerror(status))) }
        }
        // The thread holds the loop until it ends.
        let context = Unmanaged.passRetained(self).toOpaque()  // balanced by eventLoopThreadThunk, or below on failure
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, eventLoopThreadThunk, context)
        guard status == 0 else {
            Unmanaged<EventLoop>.fromOpaque(context).release()
            throw ServerError(.startFailed, String(cString: strerror(status)))
        }
        pthread_detach(thread)
    }

    /// Asks the loop to stop accepting connections (any thread); ``takeListeningSocket(waitingUpTo:)`` then gives
    /// the listening socket back.
    func beginQuiescing() {
        quiescing.store(true, ordering: .releasing)
        wake()
    }

    /// What a loop gives back when it stops accepting.
    enum GivenBack: Equatable {
        /// The listening socket (``listening``, the number `MHD_quiesce_daemon` returns), for the caller to close.
        case socket
        /// Nothing to close: the socket was taken already.
        case nothing
        /// The daemon's socket number no longer names its socket (``ListeningSocket``): something else in the process
        /// closed it. The daemon must then not be stopped: `MHD_stop_daemon` would close that number again.
        case notOurs
    }

    /// Where the daemon stands with its listening socket.
    private enum Listening {
        case accepting
        case givenBack
        case taken
        case notOurs
    }

    /// Once the loop has stopped accepting: what it gave back (taken from it by this call). nil when it has not
    /// stopped within `seconds`; ``takeListeningSocketAfterEnd()`` then takes it once the loop has ended.
    func takeListeningSocket(waitingUpTo seconds: Double) -> GivenBack? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let given = listeningState.withLock({ Self.take(&$0) }) { return given }
            guard Date() < deadline else { return nil }
            usleep(1_000)
        }
    }

    /// After ``join()``, or for a loop never started: what the loop gave back, as
    /// ``takeListeningSocket(waitingUpTo:)``. A loop that did not stop accepting before it ended is quiesced here,
    /// on the caller's thread, which is safe now that no thread runs the daemon.
    func takeListeningSocketAfterEnd() -> GivenBack {
        listeningState.withLock { state in
            if case .accepting = state { state = quiesce() }
            return Self.take(&state) ?? .nothing
        }
    }

    /// What a loop that has stopped accepting gives back, marking the socket taken; nil while it still accepts.
    private static func take(_ state: inout Listening) -> GivenBack? {
        switch state {
        case .accepting: return nil
        case .givenBack:
            state = .taken
            return .socket
        case .taken: return .nothing
        case .notOurs: return .notOurs
        }
    }

    /// Takes the daemon off its listening socket (`MHD_quiesce_daemon`), on the thread that runs the daemon or once
    /// none does; but only while the socket is still the one it started with: libmicrohttpd takes the number out of
    /// the daemon's `epoll` set and aborts when that fails.
    private func quiesce() -> Listening {
        guard listening.isStillOurs else { return .notOurs }
        return MHD_quiesce_daemon(daemon) >= 0 ? .givenBack : .taken
    }

    /// What the loop's thread was doing when last seen, in words.
    var phaseDescription: String {
        (Phase(rawValue: phase.load(ordering: .relaxed)) ?? .starting).description
    }

    /// Stops the loop and waits for its thread to end; then stops the companion.
    func join() {
        stopping.store(true, ordering: .releasing)
        wake()
        ended.wait()
        companion?.stop()
        companion = nil
    }

    /// The loop running on the calling thread, if any.
    static var onThisThread: EventLoop? {
        pthread_getspecific(threadKey).map { Unmanaged<EventLoop>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Wakes the loop (any thread): it runs its daemon at once rather than at its next deadline.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    /// Runs `work` on the loop's thread before its next turn (any thread). Work posted after the loop ended never
    /// runs.
    func post(_ work: @escaping @Sendable () -> Void) {
        mailbox.withLock { $0.append(work) }
        wake()
    }

    private func deliverMail() {
        let posted = mailbox.withLock { box -> [@Sendable () -> Void] in
            defer { box.removeAll() }
            return box
        }
        for work in posted { work() }
    }

    private func publishWaiting() {
        waitingInPlace.store(parkedInPlace + wokenInPlace, ordering: .relaxed)
    }

    /// How long the loop may sleep for the daemon, in milliseconds, given what `MHD_get_timeout` said.
    private func daemonSleep(_ said: UInt64) -> UInt64 {
        // 0 means work is pending. While requests are parked in place it always says 0 (they stay on its list), so
        // the loop runs again at once only when something besides them is known to be pending: a woken request, or
        // a response queued in the last turn (libmicrohttpd sends it on the next).
        guard said == 0, parkedInPlace > 0, wokenInPlace == 0, !queuedThisTurn else { return said }
        return Self.parkedTick
    }

    /// The body of the loop's thread (``start(stackSize:)``).
    func run() {
        fbs_name_this_thread("fbs-loop-\(index)")
        pthread_setspecific(Self.threadKey, Unmanaged.passUnretained(self).toOpaque())
        let companion = makeCompanion(index)
        self.companion = companion
        defer { phase.store(Phase.ended.rawValue, ordering: .relaxed) }
        let poller = epoll_create1(Int32(EPOLL_CLOEXEC))
        defer {
            close(poller)
            ended.signal()
        }
        Self.watch(wakeDescriptor, in: poller, as: Self.wakeTag)
        Self.watch(fbs_mhd_epoll_fd(daemon), in: poller, as: Self.daemonTag)
        var companionWatched: (descriptor: Int32, serial: UInt64)?
        var events = [epoll_event](repeating: epoll_event(), count: 8)
        var companionDeadline: UInt64?
        while !stopping.load(ordering: .acquiring) {
            if quiescing.load(ordering: .relaxed) {
                listeningState.withLock { state in
                    if case .accepting = state { state = quiesce() }
                }
            }
            var timeout: UInt64 = 100
            var daemonTimeout: UInt64 = 0
            if MHD_get_timeout(daemon, &daemonTimeout) == .YES { timeout = min(timeout, daemonSleep(daemonTimeout)) }
            if let companionDeadline { timeout = min(timeout, (companionDeadline + 999_999) / 1_000_000) }
            enter(.waiting)
            let ready = epoll_wait(poller, &events, Int32(events.count), Int32(timeout))
            for event in events.prefix(Int(max(0, ready))) {
                switch event.data.u64 {
                case Self.companionTag:
                    enter(.companionReading)
                    companion.readable()
                case Self.wakeTag:
                    var count: UInt64 = 0
                    _ = read(wakeDescriptor, &count, 8)
                    enter(.mail)
                    deliverMail()
                default: break
                }
            }
            queuedThisTurn = false
            enter(.daemon)
            _ = MHD_run(daemon)
            enter(.companionTurn)
            companionDeadline = companion.afterTurn()
            let now = companion.watched
            if now?.descriptor != companionWatched?.descriptor || now?.serial != companionWatched?.serial {
                // The old socket may be closed already (then it left the set by itself): an error here is harmless.
                if let old = companionWatched { _ = epoll_ctl(poller, EPOLL_CTL_DEL, old.descriptor, nil) }
                if let now { Self.watch(now.descriptor, in: poller, as: Self.companionTag) }
                companionWatched = now
            }
        }
    }

    /// Records what the thread does next: one plain store, as only this thread writes it.
    private func enter(_ next: Phase) {
        phase.store(next.rawValue, ordering: .relaxed)
    }

    /// The parts of a turn, for ``phaseDescription``.
    private enum Phase: UInt8, CustomStringConvertible {
        case starting, waiting, companionReading, mail, daemon, companionTurn, ended

        var description: String {
            switch self {
            case .starting: "starting"
            case .waiting: "waiting in epoll_wait"
            case .companionReading: "reading its companion's input"
            case .mail: "running work posted to it"
            case .daemon: "in MHD_run (answering requests)"
            case .companionTurn: "in its companion's turn"
            case .ended: "ended"
            }
        }
    }

    private static let wakeTag: UInt64 = 0
    private static let daemonTag: UInt64 = 1
    private static let companionTag: UInt64 = 2

    private static func watch(_ descriptor: Int32, in poller: Int32, as tag: UInt64) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = tag
        _ = epoll_ctl(poller, EPOLL_CTL_ADD, descriptor, &event)
    }
}

/// The companion of a loop that has none: nothing to watch beside the sockets.
final class IdleCompanion: EventLoopCompanion {
    var watched: (descriptor: Int32, serial: UInt64)? { nil }
    func readable() {}
    func afterTurn() -> UInt64? { nil }
    func stop() {}
}
