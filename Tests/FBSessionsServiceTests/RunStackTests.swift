import Foundation
import GraphEmulator
import LocalCluster
import Support
import Testing
import TestSupport

/// `fbsessiond run` as a newcomer meets it, in a folder of its own: the printout says how to get the demo app's
/// secret (and that works), and the admin commands find the running stack without `DATABASE_URL`.
@Suite(.serialized) struct RunStackTests {
    /// Runs the binary to completion in `directory`, with only `PATH` (and `extra`) in its environment.
    static func run(_ arguments: [String], in directory: URL, extra: [String: String] = [:]) throws
        -> CommandLineTests.Outcome
    {
        guard let binary = CommandLineTests.binary else { throw TestSetupError("build fbsessiond first (swift build)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ["PATH": "/usr/bin:/bin"].merging(SanitizerEnvironment.passedOn) { $1 }.merging(extra) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandLineTests.Outcome(
            status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self))
    }

    /// Reads what a pipe holds so far without waiting for its end, into `into`.
    final class Collected: Sendable {
        private let data = Locked(Data())
        var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
        func append(_ more: Data) { data.withLock { $0.append(more) } }
    }

    /// A fresh folder under /tmp for `fbsessiond run`. The cluster inside runs as the postgres OS user when this is
    /// root: that user must reach the folder.
    static func makeFolder(_ prefix: String) throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        return folder
    }

    /// `fbsessiond run` in `folder`, listening on `port` with its emulator on `emulatorPort` (0: any), not started
    /// yet. What it prints goes to `printed`, each piece to `onOutput` too; its standard error is dropped.
    static func stack(
        _ binary: String, in folder: URL, port: Int, emulatorPort: Int, printed: Collected,
        onOutput: @escaping @Sendable (String) -> Void = { _ in }
    ) -> Process {
        let stack = Process()
        stack.executableURL = URL(fileURLWithPath: binary)
        stack.arguments = ["run"]
        stack.currentDirectoryURL = folder
        // The sanitizer's settings too: under AddressSanitizer, LeakSanitizer's suppressions and report folder.
        stack.environment = [
            "PATH": "/usr/bin:/bin", "FBS_LISTEN": "127.0.0.1:\(port)", "FBS_EMULATOR_PORT": String(emulatorPort),
            "FBS_LOG_LEVEL": "error",
        ].merging(SanitizerEnvironment.passedOn) { $1 }
        let output = Pipe()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            printed.append(data)
            onOutput(String(decoding: data, as: UTF8.self))
        }
        stack.standardOutput = output
        stack.standardError = FileHandle.nullDevice
        return stack
    }

    /// Ends a stack started by ``stack(_:in:port:emulatorPort:printed:onOutput:)``: SIGTERM if it still runs, then
    /// its PostgreSQL if the service did not get to stop it.
    static func end(_ stack: Process, in folder: URL) {
        (stack.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
        if stack.isRunning { stack.terminate() }
        stack.waitUntilExit()
        if let cluster = try? Cluster(directory: folder.path + "/.fbsessions/pg", port: 1) { try? cluster.stop(mode: .fast) }
    }

    @Test(.enabled(if: CommandLineTests.isEnabled && PostgresBinaries.isAvailable))
    func adminCommandsFindTheRunningStackAndTheDemoSecretIsPrinted() async throws {
        guard let binary = CommandLineTests.binary else { return }
        let folder = try Self.makeFolder("fbs-run")
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = Cluster.freePort()
        var candidate = Cluster.freePort()
        while candidate == port { candidate = Cluster.freePort() }
        let emulatorPort = candidate
        try await onThread {
            // --help says so, for each admin command.
            for command in ["migrate", "app", "key", "webhook", "sweep", "reencrypt"] {
                let help = try Self.run([command, "--help"], in: folder)
                #expect(help.output.contains("uses the stack `fbsessiond run` keeps in ./.fbsessions"), "\(command)")
            }
            // Before any stack exists, the admin commands say what is missing.
            let none = try Self.run(["app", "list"], in: folder)
            #expect(none.status == 1 && none.errors.contains("DATABASE_URL is not set"), "\(none.errors)")

            let printed = Collected()
            let stack = Self.stack(binary, in: folder, port: port, emulatorPort: emulatorPort, printed: printed)
            try stack.run()
            defer { Self.end(stack, in: folder) }
            // The whole printout: it is longer than one pipe buffer, so it may arrive in more than one piece.
            #expect(eventually(timeout: 90) { printed.text.contains("/v1/login-urls") }, "\(printed.text)")
            // The printout says where the demo app's secret is, and it is there.
            let emulator = "http://127.0.0.1:\(emulatorPort)"
            #expect(printed.text.contains("the demo Facebook app is \(Emulator.demoAppID)"))
            #expect(printed.text.contains("curl -s \(emulator)/__emulator/apps"), "\(printed.text)")
            let apps = try CommandLineTests.get(emulatorPort, "/__emulator/apps")
            let listed = try JSONSerialization.jsonObject(with: Data(apps.body)) as? [String: Any]
            let demo = (listed?["apps"] as? [[String: Any]])?.first { $0["id"] as? String == Emulator.demoAppID }
            #expect(demo?["secret"] as? String == Emulator.demoAppSecret)
            #expect((demo?["redirect_uris"] as? [String]) == [Emulator.demoRedirectURI])

            // The admin commands work beside it, with no DATABASE_URL and no FBS_ENCRYPTION_KEYS.
            let list = try Self.run(["app", "list"], in: folder)
            #expect(list.status == 0 && list.output.contains("demo\t"), "\(list.errors)")
            let key = try Self.run(["key", "add", "--app", "demo"], in: folder)
            #expect(key.status == 0 && key.lastLine.hasPrefix("fbs_"), "\(key.errors)")
            let answer = try CommandLineTests.get(port, "/v1/app", key: key.lastLine)
            #expect(answer.status == 200 && answer.text.contains(#""name":"demo""#))
            let hook = try Self.run(["webhook", "add", "--app", "demo", "--url", "http://127.0.0.1:9/hook"], in: folder)
            #expect(hook.status == 0, "\(hook.errors)")
            #expect(try Self.run(["webhook", "list"], in: folder).output.contains("http://127.0.0.1:9/hook"))
            let migrated = try Self.run(["migrate", "status"], in: folder)
            #expect(migrated.status == 0 && migrated.output.contains("applied"))
            // An explicit DATABASE_URL still wins.
            let elsewhere = try Self.run(
                ["app", "list"], in: folder, extra: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"])
            #expect(elsewhere.status != 0)

            stack.terminate()
            #expect(eventually(timeout: 30) { !stack.isRunning })
            // Stopped in order, not by a crash on the way out.
            #expect(!stack.isRunning && stack.terminationReason == .exit && stack.terminationStatus == 0,
                    "fbsessiond run ended with \(stack.terminationReason == .exit ? "status" : "signal") \(stack.terminationStatus)")
            // Once it has stopped, the commands say so instead of hanging or guessing.
            let stopped = try Self.run(["key", "list"], in: folder)
            #expect(stopped.status == 1 && stopped.errors.contains("not running"), "\(stopped.errors)")
        }
    }

    /// A SIGTERM while `fbsessiond run` is still starting (PostgreSQL up, the service not yet listening) stops it in
    /// order, PostgreSQL included, instead of killing it and leaving PostgreSQL running behind it.
    @Test(.enabled(if: CommandLineTests.isEnabled && PostgresBinaries.isAvailable))
    func aSigtermWhileItStartsStopsPostgresToo() async throws {
        guard let binary = CommandLineTests.binary else { return }
        let folder = try Self.makeFolder("fbs-run")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await onThread {
            let printed = Collected()
            let pid = Locked<pid_t>(0)
            let stack = Self.stack(binary, in: folder, port: Cluster.freePort(), emulatorPort: 0, printed: printed) {
                // Never 0 here: kill(0, ...) would signal this test's whole process group.
                let known = pid.withLock { $0 }
                if $0.contains("PostgreSQL on 127.0.0.1:"), known > 0 { kill(known, SIGTERM) }
            }
            try stack.run()
            let started = stack.processIdentifier
            pid.withLock { $0 = started }
            defer { Self.end(stack, in: folder) }
            #expect(eventually(timeout: 90) { !stack.isRunning }, "\(printed.text)")
            #expect(!stack.isRunning && stack.terminationReason == .exit && stack.terminationStatus == 0,
                    "ended with \(stack.terminationReason == .exit ? "status" : "signal") \(stack.terminationStatus): \(printed.text)")
            #expect(printed.text.contains("PostgreSQL stopped"), "\(printed.text)")
            let cluster = try? Cluster(directory: folder.path + "/.fbsessions/pg", port: 1)
            #expect(cluster?.isRunning == false, "PostgreSQL still runs in \(folder.path)")
        }
    }
}
