import Crypto
import FBSessionsCore
import FBSessionsStorage
import GraphEmulator
import HTTPServer
import Foundation
import GraphVersions
import LocalCluster
import Support

/// `fbsessiond run`: the one-command local start. Everything it keeps lives in `./.fbsessions/`.
enum RunCommand {
    static let home = FileManager.default.currentDirectoryPath + "/.fbsessions"

    static func run() async throws {
        // Caught from the start: a SIGTERM while PostgreSQL starts or the migrations run still stops the service
        // in order, and PostgreSQL with it.
        let signals = TerminationSignals()
        var environment = ProcessInfo.processInfo.environment
        // Searchable but not listable by others: when run as root, the cluster inside belongs to the postgres OS
        // user, who must be able to reach it. The secrets beside it are files of mode 0600.
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o711], ofItemAtPath: home)
        if environment["FBS_ENCRYPTION_KEYS", default: ""].isEmpty {
            environment["FBS_ENCRYPTION_KEYS"] = try secretFile("encryption-keys") { Keyring.generate().text }
        }
        // Without a Graph URL of the operator's, the built-in emulator plays Facebook, seeded with a demo app.
        var emulator: (Emulator, Server)?
        if environment["FBS_GRAPH_URL", default: ""].isEmpty {
            let instance = Emulator()
            let server = try instance.start(port: Int(environment["FBS_EMULATOR_PORT"] ?? "0") ?? 0)
            instance.seedDemo()
            emulator = (instance, server)
            environment["FBS_GRAPH_URL"] = instance.baseURL
            environment["FBS_DIALOG_URL"] = instance.dialogBaseURL
            environment["FBS_LIMITED_JWKS_URL"] = instance.limitedJWKSURL
            environment["FBS_LIMITED_UNINSTALL_URL"] = instance.limitedUninstallURL
            environment["FBS_PICTURE_HOSTS"] = environment["FBS_PICTURE_HOSTS"] ?? "127.0.0.1,localhost"
            environment["FBS_PICTURE_ALLOW_HTTP"] = environment["FBS_PICTURE_ALLOW_HTTP"] ?? "true"
        }
        defer { emulator?.1.shutdown(gracePeriod: 1) }
        let settings = try Runtime.settings(environment)

        var cluster: Cluster?
        var databaseURL = settings.databaseURL
        if databaseURL == nil {
            let local = try startCluster()
            cluster = local
            databaseURL = local.connectionURL(database: "fbsessions")
        }
        defer {
            if let cluster {
                do {
                    try cluster.stop(mode: .fast)
                    announce("PostgreSQL stopped; data kept in \(cluster.directory)")
                } catch {
                    CommandLineTool.printError("could not stop PostgreSQL: \(error)")
                }
            }
        }

        let runtime = try Runtime(settings: settings, databaseURL: databaseURL)
        for migration in try await runtime.migrate() {
            announce("applied migration \(migration.fileName)")
        }
        let key = try await demoKey(runtime, emulated: emulator != nil)
        try await ServiceHost.serve(runtime, signals: signals) { server in
            let base = "http://\(settings.listenHost == "0.0.0.0" ? "127.0.0.1" : settings.listenHost):\(server.port)"
            print(
                """

                fbsessiond is running at \(base)  (Ctrl-C stops it and its database)
                  docs:      \(base)/docs  (try every operation in a browser, with the demo key)
                  spec:      \(base)/openapi.yaml
                  health:    \(base)/healthz   ready: \(base)/readyz   metrics: \(base)/metrics
                  graph:     Graph API \(settings.graphVersion) (FBS_GRAPH_VERSION), served until \(graphVersionEnd(settings));
                             GET /v1/app shows what Facebook serves; app update --graph-version moves an app
                  demo key:  \(key)
                """)
            if let (instance, _) = emulator {
                print(
                    """
                  Facebook:  the built-in Graph emulator at \(instance.baseURL) (demo users alice and bob)
                  Graph yourself: the demo Facebook app is \(Emulator.demoAppID); its secret and app token (they work
                    only against this emulator) are the "secret" and "app_token" of
                    curl -s \(instance.baseURL)/__emulator/apps
                  Admin commands (app list, key add, webhook add, ...) in this folder use this stack by themselves.

                  Try a whole login, status, picture and logout:
                    KEY='\(key)'
                    TOKEN=$(curl -s -X POST '\(instance.baseURL)/__emulator/demo-token?user=alice' | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')
                    SESSION=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\
                      -d "{\\"owner\\":\\"demo-user\\",\\"access_token\\":\\"$TOKEN\\"}" \(base)/v1/sessions | sed -E 's/.*"id":"(ses_[^"]+)".*/\\1/')
                    curl -s -w '\\n' -H "Authorization: Bearer $KEY" "\(base)/v1/sessions/$SESSION?validate=always"
                    curl -s -w '\\n' -H "Authorization: Bearer $KEY" \(base)/v1/owners/demo-user/sessions
                    curl -s -o /dev/null -w '%{http_code} %{content_type} %{size_download} bytes\\n' -H "Authorization: Bearer $KEY" "\(base)/v1/sessions/$SESSION/picture?type=large"
                    curl -s -w '\\n' -X DELETE -H "Authorization: Bearer $KEY" "\(base)/v1/sessions/$SESSION"

                  Limited Login (an iOS user who declined tracking: the app gets an AuthenticationToken, no Graph token):
                  a nonce for the SDK, a token the emulator signs for bob with it, the login, a refresh, logout:
                    NONCE=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
                      -d '{"owner":"demo-user"}' \(base)/v1/login-nonces | sed -E 's/.*"nonce":"([^"]+)".*/\\1/')
                    IDTOKEN=$(curl -s -X POST "\(instance.baseURL)/__emulator/limited/demo-token?user=bob&nonce=$NONCE&jkt=demo-device-key" | sed -E 's/.*"authentication_token":"([^"]+)".*/\\1/')
                    LIMITED=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
                      -d "{\\"owner\\":\\"demo-user\\",\\"authentication_token\\":\\"$IDTOKEN\\"}" \(base)/v1/sessions | sed -E 's/.*"id":"(ses_[^"]+)".*/\\1/')
                    curl -s -w '\\n' -H "Authorization: Bearer $KEY" "\(base)/v1/sessions/$LIMITED"
                    REFRESHED=$(curl -s -H 'DPoP: demo-device-proof' --data-urlencode "id_token_hint=$IDTOKEN" -d app_id=\(Emulator.demoAppID) \(instance.baseURL)/limited_login/refresh/ | sed -E 's/.*"id_token":"([^"]+)".*/\\1/')
                    curl -s -w '\\n' -X PUT -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\
                      -d "{\\"authentication_token\\":\\"$REFRESHED\\"}" "\(base)/v1/sessions/$LIMITED/authentication-token"
                    curl -s -w '\\n' -X DELETE -H "Authorization: Bearer $KEY" "\(base)/v1/sessions/$LIMITED?revoke=true"
                  (the dialog below offers the same choice: "Ask app not to track" with a nonce in the login URL's
                  query, e.g. &tracking=limited&nonce=$NONCE, lands on the callback with #id_token=... instead.)
                  (The refresh is what iOS SDK 18.1 does by itself: it POSTs the token to Limited Login's
                  /limited_login/refresh/ with a DPoP proof of its device key and gets a new one, which the backend
                  hands to PUT /v1/sessions/{id}/authentication-token; a replay of it is refused as not_newer.)

                  Or log in through the dialog in a browser: get a login URL, open its "url", pick a demo user;
                  the browser lands on \(Emulator.demoRedirectURI)?code=...&state=... (nothing listens there:
                  copy code and state from the address bar) and POST them as {"owner","code","state"} to /v1/sessions.
                  (The dialog, like Facebook's, redirects only to the app's registered URI.)
                    curl -s -w '\\n' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\
                      -d '{"owner":"demo-user","redirect_uri":"\(Emulator.demoRedirectURI)","scopes":["email"]}' \(base)/v1/login-urls
                """)
            } else {
                print("\n  curl -s -H 'Authorization: Bearer \(key)' \(base)/v1/app\n")
            }
            // Shown now even when standard output is a pipe or a file (`fbsessiond run | tee run.log`).
            fflush(nil)
        }
    }

    /// The last day Meta's table gives the version of `settings`, or what the table says instead.
    private static func graphVersionEnd(_ settings: Settings) -> String {
        guard let version = GraphVersion(settings.graphVersion) else { return "an unknown day" }
        guard let release = GraphVersionTable.meta.release(of: version) else { return "a day not in Meta's table" }
        return release.availableUntil?.description ?? "a day Meta has not announced"
    }

    /// Prints a line of progress and flushes it, so that it shows at once when standard output is a pipe or a file.
    private static func announce(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// Starts (and on first use creates) the private cluster on a port remembered across runs.
    private static func startCluster() throws -> Cluster {
        let portFile = home + "/pg-port"
        let port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        } ?? Cluster.freePort()
        try String(port).write(toFile: portFile, atomically: true, encoding: .utf8)
        let cluster = try Cluster(directory: home + "/pg", port: port)
        if try cluster.initializeIfNeeded() {
            announce("created a PostgreSQL cluster in \(cluster.directory)")
        }
        if !cluster.isRunning {
            try cluster.start()
        }
        try cluster.waitUntilAccepting()
        if try !cluster.databaseExists("fbsessions") {
            try cluster.createDatabase("fbsessions")
        }
        announce("PostgreSQL on 127.0.0.1:\(port), data in \(cluster.directory)")
        return cluster
    }

    /// The demo app and a key for it; the key is kept in `.fbsessions/demo-key` and reused while it still works.
    private static func demoKey(_ runtime: Runtime, emulated: Bool) async throws -> String {
        let apps = try runtime.apps
        let app: App
        if let existing = try await apps.app(named: "demo") {
            app = existing
        } else {
            // Against the emulator the demo app is the emulator's; otherwise a placeholder until the operator
            // adds a real Facebook app with `fbsessiond app add`.
            let secret = emulated ? Emulator.demoAppSecret : try secretFile("demo-app-secret") { Hex.encodeRandom(16) }
            app = try await apps.addApp(
                AppDraft(
                    name: "demo", facebookAppID: Emulator.demoAppID, secret: secret,
                    redirectURIs: [Emulator.demoRedirectURI], requiredPermissions: []))
            announce("created the demo app (facebook app id \(app.facebookAppID))")
        }
        let keyPath = home + "/demo-key"
        if let saved = try? String(contentsOfFile: keyPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
            try await runtime.keys.authenticate(saved) != nil
        {
            return saved
        }
        let made = try await runtime.keys.addKey(appID: app.id, scopes: Scope.allCases)
        try writePrivate(made.text, to: keyPath)
        return made.text
    }

    /// Reads `.fbsessions/NAME`, or writes `make()` there first (mode 0600).
    private static func secretFile(_ name: String, make: () -> String) throws -> String {
        let path = home + "/" + name
        if let text = try? String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
            !text.isEmpty
        {
            return text
        }
        let text = make()
        try writePrivate(text, to: path)
        return text
    }

    private static func writePrivate(_ text: String, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data((text + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw CommandFailure("cannot write \(path)") }
    }
}

extension Hex {
    /// `count` random bytes as hex.
    static func encodeRandom(_ count: Int) -> String { encode(SecureRandom.bytes(count)) }
}
