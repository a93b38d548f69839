import Foundation
import LocalCluster
import Testing
import TestSupport

/// `fbsessiond run`'s copy-paste Limited Login works as printed: the lines between "Limited Login" and the note
/// after them, run by bash with the printed key, get a nonce, a token the emulator signs with it, a session of
/// kind `limited`, its status, a token refreshed as iOS SDK 18.1 does (the emulator's direct refresh) that the
/// service takes, and a logout whose revocation Facebook (the emulator) confirmed.
@Suite(.serialized) struct RunLimitedLoginDemoTests {
    @Test(.enabled(if: CommandLineTests.isEnabled && PostgresBinaries.isAvailable))
    func thePrintedLimitedLoginRunsAsPrinted() async throws {
        guard let binary = CommandLineTests.binary else { return }
        let folder = try RunStackTests.makeFolder("fbs-limited")
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = Cluster.freePort()
        var candidate = Cluster.freePort()
        while candidate == port { candidate = Cluster.freePort() }
        let emulatorPort = candidate
        try await onThread {
            let printed = RunStackTests.Collected()
            let stack = RunStackTests.stack(binary, in: folder, port: port, emulatorPort: emulatorPort, printed: printed)
            try stack.run()
            defer { RunStackTests.end(stack, in: folder) }
            #expect(eventually(timeout: 90) { printed.text.contains("/v1/login-urls") }, "\(printed.text)")
            let lines = printed.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let key = try #require(lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("KEY='") })
            let start = try #require(lines.firstIndex { $0.contains("Limited Login (an iOS user") })
            let end = try #require(lines[start...].firstIndex { $0.trimmingCharacters(in: .whitespaces).hasPrefix("(the dialog") })
            let commands = lines[(start + 2)..<end].joined(separator: "\n")
            #expect(commands.contains("/v1/login-nonces") && commands.contains("authentication_token"))
            #expect(commands.contains("/limited_login/refresh/") && commands.contains("/authentication-token"))
            // After the printed lines, the session's token.changed events (the login's, then the refresh's).
            let events = "curl -s -H \"Authorization: Bearer $KEY\" http://127.0.0.1:\(port)/v1/events"
            let script = "set -e\n" + key + "\n" + commands + "\necho \"LIMITED=$LIMITED\"\n" + events + "\n"
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/bash")
            shell.arguments = ["-c", script]
            shell.environment = ["PATH": "/usr/bin:/bin"]
            let out = Pipe()
            shell.standardOutput = out
            shell.standardError = FileHandle.nullDevice
            try shell.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            shell.waitUntilExit()
            #expect(shell.terminationStatus == 0, "\(text)")
            #expect(text.contains(#""login_kind":"limited""#), "\(text)")
            #expect(text.contains(#""state":"open""#) && text.contains(#""validation":"cached""#), "\(text)")
            #expect(text.contains(#""revocation":"done""#), "\(text)")
            #expect(text.contains("LIMITED=ses_"), "\(text)")
            // The refresh was taken: no error anywhere, and its token.changed says the same person and device key.
            #expect(!text.contains(#""error""#), "\(text)")
            #expect(text.range(of: #""binding_changed": ?false"#, options: .regularExpression) != nil, "\(text)")
            #expect(text.range(of: #""user_changed": ?false"#, options: .regularExpression) != nil, "\(text)")
            // The emulator took the uninstall.
            let uninstalls = try CommandLineTests.get(emulatorPort, "/__emulator/limited/uninstalls")
            #expect(uninstalls.text.contains("10000000000000002"), "\(uninstalls.text)")
        }
    }
}
