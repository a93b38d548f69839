import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

private struct NothingHandler: RequestHandler {
    func inspect(_ head: RequestHead) -> HeadDecision {
        .reject(.error(status: 404, code: "not_found", message: "No such route."), route: nil)
    }

    func completed(_ record: ExchangeRecord) {}
}

@Suite("HTTP server start failures")
struct ServerStartFailureTests {
    /// libmicrohttpd closes the listening socket it was given whenever it fails to start, and a daemon stopped
    /// without being quiesced closes it too. Closing it once more here would close whatever descriptor another
    /// thread opened under that number meanwhile: a database connection, another server's epoll set. That showed as
    /// libmicrohttpd's "Close socket failed" panic and a crash in `MHD_stop_daemon` in other tests running beside
    /// one whose server could not start.
    ///
    /// Here a loop's thread cannot start because no thread can get the stack it asks for (2^46 bytes), over and
    /// over, while another thread keeps opening descriptors and checks that each is still open when it closes it.
    /// With two loops the first daemon has started and the second too when the first thread fails, so the clean-up
    /// of started daemons is covered as well. Nothing may leak: every daemon, listening duplicate and wake-up
    /// channel is closed. (An impossible allocation, 2^31 loops, failed the start as well, but AddressSanitizer
    /// reports such a request as an error instead of failing it; a thread whose stack cannot be mapped is refused
    /// quietly, so this runs in CI's sanitized run too.)
    @Test(arguments: [(threads: 1, starts: 2000), (threads: 2, starts: 500)])
    func aFailedStartClosesTheListeningSocketOnlyOnce(threads: Int, starts: Int) async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.threads = threads
        configuration.threadStackSize = 1 << 46
        let stop = Locked(false)
        let lost = Locked(0)
        let opener = Thread {
            while !stop.withLock({ $0 }) {
                let descriptors = (0..<8).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
                for descriptor in descriptors where descriptor >= 0 {
                    if fcntl(descriptor, F_GETFD) < 0 { lost.withLock { $0 += 1 } } else { close(descriptor) }
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
        stop.withLock { $0 = true }
        while !opener.isFinished { usleep(1_000) }
        #expect(failures == starts, "a loop started with a 2^46-byte stack \(starts - failures) times")
        let closedUnder = lost.withLock { $0 }
        #expect(closedUnder == 0, "\(closedUnder) descriptors of another thread were closed under it")
        let openAfter = openDescriptors()
        #expect(
            openAfter <= openBefore + 16,
            "\(starts) failed starts left \(openAfter - openBefore) descriptors open")
    }
}

/// The number of descriptors open in this process now.
private func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}
