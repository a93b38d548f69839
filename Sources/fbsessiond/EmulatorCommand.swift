import Foundation
import GraphEmulator
import HTTPServer

/// `fbsessiond graph-emulator`: the Graph API emulator alone, with the demo app and users.
enum EmulatorCommand {
    static func run(_ arguments: Arguments) async throws {
        if arguments.flag("help") { return print(Help.graphEmulator) }
        let unknown = arguments.unknown(besides: ["port", "host", "redirect-uri", "help"])
        guard unknown.isEmpty else { throw UsageError("unknown option --\(unknown[0])") }
        let port = Int(arguments.value("port") ?? "0") ?? -1
        guard (0...65535).contains(port) else { throw UsageError("--port must be 0 to 65535") }
        let host = arguments.value("host") ?? "127.0.0.1"
        let signals = TerminationSignals()
        let emulator = Emulator()
        let server: Server
        do {
            server = try emulator.start(host: host, port: port)
        } catch {
            throw CommandFailure("the emulator cannot listen on \(host):\(port): \(error)")
        }
        let seed = emulator.seedDemo(redirectURIs: arguments.values("redirect-uri"))
        print("Graph API emulator at \(emulator.baseURL)  (Ctrl-C stops it)")
        print("  control API: \(emulator.baseURL)/__emulator/  (see Sources/GraphEmulator/README.md)")
        print("  " + seed.instructions)
        _ = await signals.wait()
        server.shutdown(gracePeriod: 1)
    }
}
