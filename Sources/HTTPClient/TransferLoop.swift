internal import CCurl
import Foundation
import InlineExecutor

/// Drives every transfer of one `Client` on one dedicated thread with a libcurl multi handle.
///
/// Other threads hand it work through a small inbox (`submit`, `cancel`, `shutdown`) and wake it with
/// `curl_multi_wakeup`; the thread adds and removes easy handles, runs `curl_multi_perform`, collects finished
/// transfers with `curl_multi_info_read`, and sleeps in `curl_multi_poll`. A request waiting on a slow peer is
/// just an easy handle in the multi handle: it holds no thread.
///
/// Ownership: owns the `MultiHandle`; the loop thread closes it on exit, after removing and failing every
/// transfer still in it. `active` holds each transfer while its easy handle is in the multi handle.
/// Thread safety: `lock` guards `incoming`, `cancellations` and `state`; `wakeup()` is called only under the lock
/// while `state == .running`, so never after the multi handle is closed. `active` and the multi handle are touched
/// only by the loop thread.
/// Sendable: `incoming`, `cancellations` and `state` are guarded by `lock` (an `NSCondition`, not a `Locked`:
/// ``shutdown()`` sleeps on it until the loop has stopped), and the multi handle (a C pointer) and `active` are the
/// loop thread's; the compiler can see neither.
final class TransferLoop: @unchecked Sendable {
    private enum State {
        case running, stopping, stopped
    }

    /// The loop thread's name, for debuggers and `top -H` (at most 15 bytes, Linux's limit).
    static let threadName = "http-client"

    private let multi: MultiHandle
    private let lock = NSCondition()
    private var state = State.running
    private var incoming: [Transfer] = []
    private var cancellations: [Transfer] = []
    private var threadStarted = false
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]

    init(configuration: Client.Configuration) throws {
        multi = try MultiHandle()
        if configuration.maxConnectionsPerHost > 0 {
            try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        }
        if configuration.maxTotalConnections > 0 {
            try multi.set(CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxTotalConnections)
        }
    }

    /// Starts the loop thread. Call once.
    func start() {
        let thread = Thread { [self] in
            // On Linux a name set before `start()` never reaches the OS thread (it kept its creator's), and one set
            // here is lost if the thread runs before `start()` has recorded it: passing through `lock`, which
            // `start()` holds across `thread.start()`, orders the two (as `PostgresPoolWorker` does). Linux thread
            // names hold at most 15 bytes; a longer one is refused and the thread keeps its creator's.
            lock.lock()
            lock.unlock()
            Thread.current.name = Self.threadName
            run()
        }
        lock.lock()
        threadStarted = true
        thread.start()
        lock.unlock()
    }

    /// Hands `transfer` to the loop; fails it with `.shutdown` when the loop is stopping or stopped.
    func submit(_ transfer: Transfer) {
        lock.lock()
        guard state == .running else {
            lock.unlock()
            transfer.fail(.shutdown)
            return
        }
        incoming.append(transfer)
        multi.wakeup()
        lock.unlock()
    }

    /// Asks the loop to abort `transfer` (already finished by the caller) and free its handles.
    func cancel(_ transfer: Transfer) {
        lock.lock()
        defer { lock.unlock() }
        guard state == .running else { return }
        cancellations.append(transfer)
        multi.wakeup()
    }

    /// Fails every pending transfer with `.shutdown`, stops the thread and frees the multi handle; returns when
    /// that is done. Idempotent.
    func shutdown() {
        lock.lock()
        defer { lock.unlock() }
        if state == .running {
            state = .stopping
            multi.wakeup()
        }
        guard threadStarted else {
            state = .stopped
            return
        }
        while state != .stopped {
            lock.wait()
        }
    }

    private func run() {
        while true {
            lock.lock()
            let stopping = state != .running
            let newTransfers = incoming
            let toCancel = cancellations
            incoming.removeAll()
            cancellations.removeAll()
            lock.unlock()

            for transfer in toCancel {
                detach(transfer)
            }
            if stopping {
                for transfer in newTransfers {
                    transfer.fail(.shutdown)
                    transfer.releaseHandles()
                }
                break
            }
            for transfer in newTransfers {
                attach(transfer)
            }
            let code = multi.perform()
            if code != CURLM_OK {
                failAll(.transport, detail: "curl_multi_perform: \(MultiHandle.message(for: code))")
            }
            collectFinished()
            multi.poll(timeoutMilliseconds: 1000)
        }
        failAll(.shutdown, detail: nil)
        lock.lock()
        state = .stopped
        multi.close()
        lock.broadcast()
        lock.unlock()
    }

    private func attach(_ transfer: Transfer) {
        guard !transfer.isFinished, let handle = transfer.easy.pointer else {
            transfer.releaseHandles()
            return
        }
        let code = multi.add(transfer.easy)
        guard code == CURLM_OK else {
            transfer.fail(.transport, detail: "curl_multi_add_handle: \(MultiHandle.message(for: code))")
            transfer.releaseHandles()
            return
        }
        active[handle] = transfer
    }

    private func detach(_ transfer: Transfer) {
        guard let handle = transfer.easy.pointer, active.removeValue(forKey: handle) != nil else {
            return
        }
        multi.remove(transfer.easy)
        transfer.releaseHandles()
    }

    private func collectFinished() {
        while let done = multi.nextDone() {
            guard let transfer = active.removeValue(forKey: done.easy) else {
                continue
            }
            multi.remove(transfer.easy)
            // On the loop thread, no lock held: the caller's task may go on here at once.
            InlineTaskExecutor.runsResumedTasksHere { transfer.complete(with: done.result) }
            transfer.releaseHandles()
        }
    }

    private func failAll(_ code: ClientError.Code, detail: String?) {
        for transfer in active.values {
            multi.remove(transfer.easy)
            transfer.fail(code, detail: detail)
            transfer.releaseHandles()
        }
        active.removeAll()
    }
}
