import FBSessionsCore
import Foundation
import LocalCluster
import Postgres
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The `fbsessiond` binary as an operator uses it: commands, settings errors, and a clean stop on SIGTERM.
@Suite(.serialized) struct CommandLineTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var binary: String? {
        let path = root.appendingPathComponent(".build/debug/fbsessiond").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    static var isEnabled: Bool { binary != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    struct Outcome {
        let status: Int32
        let output: String
        let errors: String
        var lastLine: String { output.split(separator: "\n").last.map(String.init) ?? "" }
    }

    /// Runs the binary to completion with `environment` added to a minimal one.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        guard let binary else { throw TestSetupError("build fbsessiond first (swift build)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = root
        process.environment = ["PATH": "/usr/bin:/bin"].merging(SanitizerEnvironment.passedOn) { $1 }.merging(environment) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self))
    }

    @Test(.enabled(if: isEnabled)) func everyCommandHasHelp() async throws {
        try await onThread {
            let main = try Self.run(["--help"])
            #expect(main.status == 0 && main.output.contains("migrate") && main.output.contains("FBS_VALIDATE_TTL"))
            for command in [["serve"], ["run"], ["migrate"], ["app"], ["key"], ["webhook"], ["sweep"], ["reencrypt"], ["graph-emulator"]] {
                let help = try Self.run(command + ["--help"])
                #expect(help.status == 0 && help.output.contains("Usage: fbsessiond \(command[0])"))
            }
            let unknown = try Self.run(["frobnicate"])
            #expect(unknown.status == 2 && unknown.errors.contains("unknown command"))
        }
    }

    /// `--help` lists every setting by its whole name, each followed by its meaning (a name is never cut into the
    /// text, as long names once were: `FBS_DB_PREPARED_STATEMENfalse…`).
    @Test(.enabled(if: isEnabled)) func helpShowsEverySettingWhole() async throws {
        try await onThread {
            let help = try Self.run(["--help"])
            #expect(help.status == 0)
            let lines = help.output.split(separator: "\n").map(String.init)
            for (name, _, meaning) in Settings.documented {
                let line = lines.first { $0.hasPrefix("  \(name) ") }
                #expect(line != nil, "no line for \(name)")
                #expect(line?.dropFirst(2 + name.count).trimmingCharacters(in: .whitespaces).hasPrefix(meaning) == true, "\(name)")
            }
            #expect(help.output.contains("FBS_GRAPH_VERSION") && help.output.contains("(default v25.0)"))
        }
    }

    /// `app add|update --graph-version`: malformed versions are refused with one line and nothing changes; a
    /// version near its sunset is taken with a warning; `default` goes back to FBS_GRAPH_VERSION.
    @Test(.enabled(if: isEnabled && TestDatabase.isEnabled)) func appGraphVersionCommands() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try "fb-app-secret-value\n".write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let environment = [
            "DATABASE_URL": url, "FBS_ENCRYPTION_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString(),
        ]
        try await onThread {
            #expect(try Self.run(["migrate"], environment: environment).status == 0)
            let add = ["app", "add", "--name", "shop", "--facebook-app-id", "12345", "--facebook-app-secret-file", secretFile.path]
            for bad in ["21", "v21", "latest"] {
                let refused = try Self.run(add + ["--graph-version", bad], environment: environment)
                #expect(refused.status == 2, "\(bad)")
                #expect(refused.errors.contains("--graph-version: \"\(bad)\" is not a Graph API version"), "\(refused.errors)")
            }
            #expect(try Self.run(["app", "list"], environment: environment).output.isEmpty, "nothing was added")
            let added = try Self.run(add + ["--graph-version", "v21.0"], environment: environment)
            #expect(added.status == 0 && added.lastLine == "shop")
            #expect(added.output.contains("graph version: v21.0"))
            #expect(added.errors.contains("warning: --graph-version: v21.0 ") && added.errors.contains("2027-01-21"))
            let refused = try Self.run(["app", "update", "--app", "shop", "--graph-version", "v24.1"], environment: environment)
            #expect(refused.status == 2 && refused.errors.contains("v24.1 is not a Graph API version"))
            #expect(try Self.run(["app", "list"], environment: environment).output.contains("graph v21.0"))
            let updated = try Self.run(["app", "update", "--app", "shop", "--graph-version", "v26.0"], environment: environment)
            #expect(updated.status == 0 && updated.lastLine == "shop" && updated.errors.isEmpty)
            #expect(try Self.run(["app", "list"], environment: environment).output.contains("graph v26.0"))
            let reset = try Self.run(["app", "update", "--app", "shop", "--graph-version", "default"], environment: environment)
            #expect(reset.status == 0 && reset.output.contains("graph version: v25.0 (FBS_GRAPH_VERSION)"))
            let unknown = try Self.run(["app", "update", "--app", "nope", "--graph-version", "v25.0"], environment: environment)
            #expect(unknown.status == 1 && unknown.errors.contains("no app is named nope"))
        }
    }

    /// Every admin command that changes something writes its audit entry, with the OS user who ran it (the
    /// password database's name of the effective uid) and no secret; `FBS_AUDIT_RETENTION` out of range is refused
    /// at start.
    @Test(.enabled(if: isEnabled && TestDatabase.isEnabled)) func adminCommandsWriteAuditEntriesWithTheOSUser() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try "fb-app-secret-value\n".write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let oldKey = Data(repeating: 7, count: 32).base64EncodedString()
        let newKey = Data(repeating: 9, count: 32).base64EncodedString()
        let environment = ["DATABASE_URL": url, "FBS_ENCRYPTION_KEYS": "k1:" + oldKey]
        let expectedUser = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(geteuid())"
        let rows: [(app: String?, action: String, actor: String, target: String, request: String?)] = try await onThread {
            #expect(try Self.run(["migrate"], environment: environment).status == 0)
            let app = try Self.run(
                ["app", "add", "--name", "shop", "--facebook-app-id", "12345", "--facebook-app-secret-file", secretFile.path],
                environment: environment)
            #expect(app.status == 0, "\(app.errors)")
            #expect(try Self.run(["app", "update", "--app", "shop", "--graph-version", "v26.0"], environment: environment).status == 0)
            let key = try Self.run(["key", "add", "--app", "shop", "--scope", "sessions", "--scope", "audit"], environment: environment)
            #expect(key.status == 0 && key.output.contains("scopes sessions,audit"), "\(key.output)")
            let keyID = String(key.output.split(separator: " ")[2])
            #expect(try Self.run(["key", "revoke", keyID], environment: environment).status == 0)
            let hook = try Self.run(
                ["webhook", "add", "--app", "shop", "--url", "https://hooks.example/in?token=abc123"], environment: environment)
            #expect(hook.status == 0, "\(hook.errors)")
            let hookID = try #require(hook.output.wholeMatch(of: #/(?s)webhook id: (whk_[0-9a-f]+) .*/#)?.1)
            #expect(try Self.run(["webhook", "remove", String(hookID)], environment: environment).status == 0)
            let reencrypt = try Self.run(
                ["reencrypt"], environment: environment.merging(["FBS_ENCRYPTION_KEYS": "k2:\(newKey),k1:\(oldKey)"]) { $1 })
            #expect(reencrypt.status == 0, "\(reencrypt.errors)")
            // Refused commands write nothing.
            #expect(try Self.run(["key", "revoke", "k_nope"], environment: environment).status == 1)
            for bad in ["0", "-1", "abc", "36501"] {
                let sweep = try Self.run(["sweep"], environment: environment.merging(["FBS_AUDIT_RETENTION": bad]) { $1 })
                #expect(sweep.status != 0 && sweep.errors.contains("FBS_AUDIT_RETENTION"), "\(bad): \(sweep.errors)")
            }
            let sweep = try Self.run(["sweep"], environment: environment.merging(["FBS_AUDIT_RETENTION": "30"]) { $1 })
            #expect(sweep.status == 0 && sweep.output.contains("audit entries past retention deleted 0"), "\(sweep.output)")
            #expect(!key.lastLine.isEmpty)
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            let rows: [(app: String?, action: String, actor: String, target: String, request: String?)] = try connection.query(
                "SELECT app_id, action, actor::text AS actor, target::text AS target, request_id FROM audit_log ORDER BY id"
            ).map {
                (try $0.decode("app_id", as: String?.self), try $0.decode("action", as: String.self),
                 try $0.decode("actor", as: String.self), try $0.decode("target", as: String.self),
                 try $0.decode("request_id", as: String?.self))
            }
            for row in rows {
                for secret in ["fb-app-secret-value", key.lastLine, oldKey, newKey, "abc123", "whsec_"] {
                    #expect(!row.target.contains(secret) && !row.actor.contains(secret), "\(row.action)")
                }
            }
            return rows
        }
        #expect(rows.map(\.action) == [
            "app.added", "app.updated", "key.added", "key.revoked", "webhook.added", "webhook.removed", "keys.reencrypted",
        ])
        for row in rows {
            let actor = try JSONSerialization.jsonObject(with: Data(row.actor.utf8)) as? [String: String]
            #expect(actor == ["kind": "cli", "user": expectedUser], "\(row.action)")
            #expect(row.request == nil)
        }
        let appID = rows.first?.app
        #expect(appID != nil && rows.dropLast().allSatisfy { $0.app == appID } && rows.last?.app == nil)
        #expect(rows.first?.target.contains(#""name": "shop""#) == true)
        #expect(rows[1].target.contains(#""graph_version": "v26.0""#))
        #expect(rows[2].target.contains(#""scopes": ["sessions", "audit"]"#))
        #expect(rows[4].target.contains(#""host": "hooks.example""#))
        #expect(rows[6].target.contains(#""key_id": "k2""#) && rows[6].target.contains(#""left": 0"#))
    }

    @Test(.enabled(if: isEnabled)) func invalidSettingsAreAllReportedAtOnce() async throws {
        try await onThread {
            let outcome = try Self.run(
                ["serve"],
                environment: ["FBS_LISTEN": "nowhere", "FBS_LOG_LEVEL": "loud", "FBS_MAX_SLOTS": "0", "DATABASE_URL": "x"])
            #expect(outcome.status != 0)
            for name in ["FBS_LISTEN", "FBS_LOG_LEVEL", "FBS_MAX_SLOTS"] {
                #expect(outcome.errors.contains(name))
            }
        }
    }

    /// Issue 39: a bad `FBS_EXPIRY_WARNING` stops `serve` and `sweep` before they touch anything, naming the range.
    @Test(.enabled(if: isEnabled)) func aBadExpiryWarningIsRefusedAtStart() async throws {
        try await onThread {
            for command in ["serve", "sweep"] {
                for bad in ["-1", "a week", "7776001"] {
                    let outcome = try Self.run([command], environment: ["FBS_EXPIRY_WARNING": bad, "DATABASE_URL": "x"])
                    #expect(outcome.status != 0, "\(command) \(bad)")
                    #expect(
                        outcome.errors.contains("FBS_EXPIRY_WARNING: expected a whole number in 0...7776000"),
                        "\(command) \(bad): \(outcome.errors)")
                }
            }
        }
    }

    /// Issue 40: bad `OTEL_*` settings stop `serve` at start with the others, naming each variable, never quoting the
    /// exporter's headers (a secret).
    @Test(.enabled(if: isEnabled)) func badTracingSettingsAreRefusedAtStart() async throws {
        try await onThread {
            let outcome = try Self.run(
                ["serve"],
                environment: [
                    "DATABASE_URL": "x", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                    "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_SAMPLER": "sometimes",
                    "OTEL_TRACES_SAMPLER_ARG": "1.5", "OTEL_EXPORTER_OTLP_HEADERS": "authorization-without-equals-sign",
                ])
            #expect(outcome.status != 0)
            #expect(outcome.errors.contains("OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf is supported"), "\(outcome.errors)")
            for name in ["OTEL_TRACES_SAMPLER:", "OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_HEADERS"] {
                #expect(outcome.errors.contains(name), "\(name): \(outcome.errors)")
            }
            #expect(!outcome.errors.contains("authorization-without-equals-sign"))
        }
    }

    @Test(.enabled(if: isEnabled && TestDatabase.isEnabled)) func operatorFlowFromMigrateToSigterm() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let port = Cluster.freePort()
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try "fb-app-secret-value\n".write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let environment = [
            "DATABASE_URL": url, "FBS_ENCRYPTION_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString(),
            "FBS_LISTEN": "127.0.0.1:\(port)", "FBS_SHUTDOWN_GRACE": "5", "FBS_KEY_CACHE_TTL": "0",
        ]
        try await onThread {
            let migrated = try Self.run(["migrate"], environment: environment)
            #expect(migrated.status == 0 && migrated.output.contains("applied 0001_apps_and_api_keys.sql"))
            let status = try Self.run(["migrate", "status"], environment: environment)
            #expect(status.status == 0 && status.output.contains("0001  apps_and_api_keys  applied"))
            let app = try Self.run(
                ["app", "add", "--name", "shop", "--facebook-app-id", "12345", "--facebook-app-secret-file",
                 secretFile.path, "--redirect-uri", "https://shop.example/cb"],
                environment: environment)
            #expect(app.status == 0 && app.lastLine == "shop")
            let duplicate = try Self.run(
                ["app", "add", "--name", "shop", "--facebook-app-id", "999", "--facebook-app-secret-file", secretFile.path],
                environment: environment)
            #expect(duplicate.status == 1 && duplicate.errors.contains("already exists"))
            let key = try Self.run(["key", "add", "--app", "shop", "--scope", "sessions"], environment: environment)
            #expect(key.status == 0 && key.lastLine.hasPrefix("fbs_"))
            let list = try Self.run(["key", "list"], environment: environment)
            #expect(list.status == 0 && !list.output.contains(key.lastLine) && list.output.contains("active"))

            // serve, answer, and stop cleanly on SIGTERM.
            guard let binary = Self.binary else { return }
            let server = Process()
            server.executableURL = URL(fileURLWithPath: binary)
            server.arguments = ["serve"]
            server.currentDirectoryURL = Self.root
            server.environment = ["PATH": "/usr/bin:/bin"].merging(SanitizerEnvironment.passedOn) { $1 }
                .merging(environment) { $1 }
            let logs = Pipe()
            server.standardError = logs
            server.standardOutput = FileHandle.nullDevice
            try server.run()
            let ready = eventually(timeout: 10) { (try? Self.get(port, "/readyz").status) == 200 }
            #expect(ready)
            let answer = try Self.get(port, "/v1/app", key: key.lastLine)
            #expect(answer.status == 200 && answer.text.contains(#""name":"shop""#))
            #expect(!answer.text.contains("fb-app-secret-value"))
            // The exchange is recorded just after its response is sent: wait for it rather than race it.
            #expect(eventually { (try? Self.get(port, "/metrics").text.contains(#"route="/v1/app",le="+Inf"} 1"#)) == true })
            let metrics = try Self.get(port, "/metrics").text
            for series in [#"fbs_db_pool_connections{state="in_use"}"#, "fbs_db_pool_waiting", "fbs_http_requests_waiting",
                           #"fbs_http_request_duration_seconds_bucket{route="/v1/app",le="+Inf"} 1"#] {
                #expect(metrics.contains(series))
            }
            if metrics.contains("fbs_cache_fences") {
                // With a cache (FBS_CACHE_BYTES not 0), its fences are plain queries on this PostgreSQL 15 server once
                // the listener is up.
                #expect(eventually {
                    let now = (try? Self.get(port, "/metrics").text) ?? ""
                    return now.contains(#"fbs_cache_fence_method{method="sync"} 1"#)
                        && now.contains(#"fbs_cache_fence_method{method="notify"} 0"#)
                })
            }
            let revoke = try Self.run(["key", "revoke", String(key.output.split(separator: " ")[2])], environment: environment)
            #expect(revoke.status == 0)
            #expect(try Self.get(port, "/v1/app", key: key.lastLine).status == 401)
            server.terminate()
            let stopped = eventually(timeout: 10) { !server.isRunning }
            #expect(stopped)
            #expect(server.terminationStatus == 0)
            let logText = String(decoding: logs.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let lines = logText.split(separator: "\n")
            #expect(lines.contains { $0.contains(#""msg":"request""#) && $0.contains(#""route":"/v1/app""#) })
            #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
            #expect(!logText.contains(key.lastLine) && !logText.contains("fb-app-secret-value"))
            #expect(lines.last?.contains(#""msg":"stopped""#) == true)
        }
    }

    /// A SIGTERM sent the moment the service says it listens (as a supervisor or a script that stops what it just
    /// started would): the service must already catch it and stop in order, not die of it with nothing stopped.
    @Test(.enabled(if: isEnabled && TestDatabase.isEnabled)) func aSigtermTheMomentItListensStopsItInOrder() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let environment = [
            "DATABASE_URL": url, "FBS_ENCRYPTION_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString(),
            "FBS_SHUTDOWN_GRACE": "1",
        ]
        try await onThread {
            #expect(try Self.run(["migrate"], environment: environment).status == 0)
            guard let binary = Self.binary else { return }
            for round in 1...3 {
                let server = Process()
                server.executableURL = URL(fileURLWithPath: binary)
                server.arguments = ["serve"]
                server.currentDirectoryURL = Self.root
                server.environment = ["PATH": "/usr/bin:/bin"].merging(SanitizerEnvironment.passedOn) { $1 }
                    .merging(environment) { $1 }.merging(["FBS_LISTEN": "127.0.0.1:\(Cluster.freePort())"]) { $1 }
                let logs = Pipe()
                let printed = RunStackTests.Collected()
                logs.fileHandleForReading.readabilityHandler = { handle in
                    let data = handle.availableData
                    printed.append(data)
                    if String(decoding: data, as: UTF8.self).contains(#""msg":"listening""#) {
                        kill(server.processIdentifier, SIGTERM)
                    }
                }
                server.standardError = logs
                server.standardOutput = FileHandle.nullDevice
                try server.run()
                let ended = eventually(timeout: 30) { !server.isRunning }
                logs.fileHandleForReading.readabilityHandler = nil
                if !ended { server.interrupt() }
                #expect(ended, "round \(round): still running 30 s after SIGTERM")
                server.waitUntilExit()
                #expect(server.terminationStatus == 0 && server.terminationReason == .exit,
                        "round \(round): ended by \(server.terminationReason == .exit ? "exit" : "signal") \(server.terminationStatus)")
                #expect(printed.text.contains(#""msg":"stopped""#), "round \(round): \(printed.text.suffix(600))")
            }
        }
    }

    static func get(_ port: Int, _ path: String, key: String? = nil) throws -> RawConnection.Reply {
        let connection = try RawConnection(port: port)
        let authorization = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        connection.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\(authorization)\r\n")
        return try connection.readReply()
    }
}
