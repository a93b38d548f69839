import Foundation
import HTTPServer
import Testing
import TestSupport

private struct NothingHandler: RequestHandler {
    func inspect(_ head: RequestHead) -> HeadDecision<Void> {
        .reject(.error(status: 404, code: "not_found", message: "No such route."), route: nil)
    }

    func respond(to request: Request, match: Void) -> Reply {
        .now(.error(status: 404, code: "not_found", message: "No such route."))
    }

    func completed(_ record: ExchangeRecord) {}
}

@Suite("HTTP server start failures")
struct ServerStartFailureTests {
    /// libmicrohttpd closes the listening socket it was given whenever it fails to start (every failure after it
    /// took the socket: a worker's epoll set or wake-up channel, a thread, memory). Closing it once more here would
    /// close whatever descriptor another thread opened under that number meanwhile: a database connection, another
    /// server's epoll set. That showed as libmicrohttpd's "Close socket failed" panic and a crash in
    /// `MHD_stop_daemon` in other tests running beside one whose server could not start.
    ///
    /// Here libmicrohttpd cannot start because no thread can get the stack it asks for (2^46 bytes), over and
    /// over, while another thread keeps opening descriptors and checks that each is still open when it closes it.
    /// (An impossible allocation, 2^31 workers, failed the start as well, but AddressSanitizer reports such a request
    /// as an error instead of failing it; a thread whose stack cannot be mapped is refused quietly, so this runs in
    /// CI's sanitized run too.)
    ///
    /// With a pool (two threads), libmicrohttpd 0.9.75 itself leaks one descriptor per failed start: when its first
    /// worker's thread cannot be made, it frees the pool without closing that worker's epoll set (daemon.c,
    /// `thread_failed`). So the pool case makes 50 starts, not 2,000, and allows one descriptor each: 2,000 of them
    /// once pushed the test process past 2,000 descriptors, where Foundation's `Process.run` reads past its buffer
    /// while listing `/proc/self/fd` (an AddressSanitizer report in another suite). Without a pool nothing leaks.
    @Test(arguments: [(threads: 1, starts: 2000), (threads: 2, starts: 50)])
    func aFailedStartClosesTheListeningSocketOnlyOnce(threads: Int, starts: Int) async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.threads = threads
        configuration.threadStackSize = 1 << 46
        let stop = LockedBox(false)
        let lost = LockedBox(0)
        let opener = Thread {
            while !stop.value {
                let descriptors = (0..<8).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
                for descriptor in descriptors where descriptor >= 0 {
                    if fcntl(descriptor, F_GETFD) < 0 { lost.update { $0 += 1 } } else { close(descriptor) }
                }
            }
        }
        let openBefore = openDescriptors()
        opener.start()
        var failures = 0
        for _ in 0..<starts {
            do {
                let server = try Server(configuration: configuration, handler: NothingHandler())
                server.shutdown(gracePeriod: 0)
            } catch let error as ServerError {
                #expect(error.code == .startFailed && error.detail.contains(" on 127.0.0.1:"), "\(error)")
                failures += 1
            }
        }
        stop.value = true
        while !opener.isFinished { usleep(1_000) }
        #expect(failures == starts, "libmicrohttpd started with 2^46-byte stacks \(starts - failures) times")
        #expect(lost.value == 0, "\(lost.value) descriptors of another thread were closed under it")
        let openAfter = openDescriptors()
        let leakedByLibrary = threads > 1 ? starts : 0
        #expect(
            openAfter <= openBefore + leakedByLibrary + 16,
            "\(starts) failed starts left \(openAfter - openBefore) descriptors open")
    }
}

/// The number of descriptors open in this process now.
private func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}
