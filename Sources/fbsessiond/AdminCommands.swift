import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphVersions
import Support

/// `migrate`, `app` and `key`.
enum AdminCommands {
    static func migrate(_ arguments: Arguments) async throws {
        if arguments.flag("help") { return print(Help.migrate) }
        let action = arguments.positional.first ?? "up"
        guard ["up", "status"].contains(action), arguments.positional.count <= 1 else {
            throw UsageError("expected `migrate`, `migrate up` or `migrate status`")
        }
        let runtime = try Runtime(settings: try Runtime.adminSettings(), applicationName: "fbsessiond-migrate")
        defer { runtime.shutdown() }
        if action == "up" {
            let applied = try await runtime.migrate()
            for migration in applied { print("applied \(migration.fileName)") }
            print(applied.isEmpty ? "migrations are current" : "applied \(applied.count) migration(s)")
            return
        }
        let migrator = runtime.migrator
        let states = try await runtime.withDirectConnection(named: "fbsessiond-migrate") { connection in
            try migrator.status(on: connection)
        }
        for state in states {
            let text: String
            switch state.state {
            case .applied(let at): text = "applied \(RFC3339.string(from: at))"
            case .pending: text = "pending"
            case .changed: text = "CHANGED since it was applied"
            case .unknown: text = "unknown to this binary"
            }
            print(String(format: "%04d", state.version) + "  \(state.name)  \(text)")
        }
    }

    static func app(_ arguments: Arguments) async throws {
        let action = arguments.positional.first
        if arguments.flag("help") || action == nil { return print(Help.app) }
        let runtime = try Runtime(settings: try Runtime.adminSettings(), applicationName: "fbsessiond-app")
        defer { runtime.shutdown() }
        switch action {
        case "add":
            let unknown = arguments.unknown(besides: [
                "name", "facebook-app-id", "facebook-app-secret-file", "redirect-uri", "required-permission",
                "graph-version",
            ])
            guard unknown.isEmpty else { throw UsageError("unknown option --\(unknown[0])") }
            guard let name = arguments.value("name"), let facebookAppID = arguments.value("facebook-app-id"),
                let secretFile = arguments.value("facebook-app-secret-file")
            else {
                throw UsageError("app add needs --name, --facebook-app-id and --facebook-app-secret-file")
            }
            let redirectURIs = arguments.values("redirect-uri")
            var problems = App.validate(name: name, facebookAppID: facebookAppID, redirectURIs: redirectURIs)
            let secret = (try? String(contentsOfFile: secretFile, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if secret?.isEmpty ?? true { problems.append("--facebook-app-secret-file: cannot read a secret from \(secretFile)") }
            var graphVersion: GraphVersion?
            var warnings: [String] = []
            if let text = arguments.value("graph-version") {
                switch checkGraphVersion(text) {
                case .accepted(let version, let found): (graphVersion, warnings) = (version, found)
                case .refused(let line): problems.append(line)
                }
            }
            guard problems.isEmpty, let secret else { throw UsageError(problems.joined(separator: "\n")) }
            do {
                let app = try await runtime.apps.addApp(
                    AppDraft(
                        name: name, facebookAppID: facebookAppID, secret: secret, redirectURIs: redirectURIs,
                        requiredPermissions: arguments.values("required-permission"),
                        graphVersion: graphVersion?.description))
                try await AuditTrail.record(
                    runtime.audit, .appAdded, appID: app.id,
                    target: [
                        "kind": .string("app"), "id": .string(app.id), "name": .string(app.name),
                        "facebook_app_id": .string(app.facebookAppID),
                        "graph_version": app.graphVersion.map(AuditValue.string) ?? .null,
                    ])
                for warning in warnings { CommandLineTool.printError("warning: \(warning)") }
                print("app id: \(app.id)")
                print("graph version: \(app.graphVersion ?? "\(runtime.settings.graphVersion) (FBS_GRAPH_VERSION)")")
                print(app.name)
            } catch ServiceError.appExists(let what) {
                throw CommandFailure("an app with \(what) already exists")
            }
        case "update":
            let unknown = arguments.unknown(besides: ["app", "graph-version"])
            guard unknown.isEmpty else { throw UsageError("unknown option --\(unknown[0])") }
            guard let name = arguments.value("app"), let text = arguments.value("graph-version") else {
                throw UsageError("app update needs --app NAME and --graph-version vMAJOR.MINOR (or default)")
            }
            var version: String?
            var warnings: [String] = []
            if text != "default" {
                switch checkGraphVersion(text) {
                case .accepted(let checked, let found): (version, warnings) = (checked.description, found)
                case .refused(let line): throw UsageError(line)
                }
            }
            let app: App
            do {
                app = try await runtime.apps.setGraphVersion(version, ofAppNamed: name)
            } catch ServiceError.unknownApp {
                throw CommandFailure("no app is named \(name)")
            }
            try await AuditTrail.record(
                runtime.audit, .appUpdated, appID: app.id,
                target: [
                    "kind": .string("app"), "id": .string(app.id), "name": .string(app.name),
                    "graph_version": app.graphVersion.map(AuditValue.string) ?? .null,
                ])
            for warning in warnings { CommandLineTool.printError("warning: \(warning)") }
            print("graph version: \(app.graphVersion ?? "\(runtime.settings.graphVersion) (FBS_GRAPH_VERSION)")")
            print(
                "running instances use it within FBS_KEY_CACHE_TTL (\(Int(runtime.settings.keyCacheTTL)) s); "
                    + "GET /v1/app shows what Facebook serves")
            print(app.name)
        case "list":
            for app in try await runtime.apps.apps() {
                let version = app.graphVersion ?? "\(runtime.settings.graphVersion) (default)"
                print(
                    "\(app.name)\t\(app.id)\tfacebook app \(app.facebookAppID)\tgraph \(version)\t"
                        + app.redirectURIs.joined(separator: " "))
            }
        default:
            throw UsageError("expected `app add`, `app update` or `app list`")
        }
    }

    static func key(_ arguments: Arguments) async throws {
        let action = arguments.positional.first
        if arguments.flag("help") || action == nil { return print(Help.key) }
        let runtime = try Runtime(settings: try Runtime.adminSettings(), applicationName: "fbsessiond-key")
        defer { runtime.shutdown() }
        switch action {
        case "add":
            guard let name = arguments.value("app") else { throw UsageError("key add needs --app NAME") }
            var rateLimit: Int?
            if let text = arguments.value("rate") {
                switch APIKey.parseRateLimit(text) {
                case .success(let rate): rateLimit = rate
                case .failure(let problem): throw UsageError(problem.description)
                }
            }
            var scopes: [Scope] = []
            for text in arguments.values("scope") {
                guard let scope = Scope(rawValue: text) else {
                    throw UsageError("unknown scope \(text); use sessions, events, tokens:read or audit")
                }
                if !scopes.contains(scope) { scopes.append(scope) }
            }
            guard let app = try await runtime.apps.app(named: name) else { throw CommandFailure("no app named \(name)") }
            let made = try await runtime.keys.addKey(
                appID: app.id, scopes: scopes.isEmpty ? Scope.defaults : scopes, rateLimit: rateLimit)
            try await AuditTrail.record(
                runtime.audit, .keyAdded, appID: app.id,
                target: [
                    "kind": .string("key"), "id": .string(made.key.id),
                    "scopes": .strings(made.key.scopes.map(\.rawValue)),
                    "rate": made.key.rateLimit.map { .int($0) } ?? .null,
                ])
            print(
                "key id: \(made.key.id) (app \(app.name); scopes \(made.key.scopes.map(\.rawValue).joined(separator: ","));"
                    + " rate \(describe(rate: made.key.rateLimit)))")
            print("the key is shown once; store it now:")
            print(made.text)
        case "list":
            var appID: String?
            if let name = arguments.value("app") {
                guard let app = try await runtime.apps.app(named: name) else { throw CommandFailure("no app named \(name)") }
                appID = app.id
            }
            for key in try await runtime.keys.keys(appID: appID) {
                let state = key.revokedAt.map { "revoked \(RFC3339.string(from: $0))" } ?? "active"
                print(
                    "\(key.id)\t\(key.appID)\t\(key.scopes.map(\.rawValue).joined(separator: ","))\t\(state)\t"
                        + "rate \(describe(rate: key.rateLimit))")
            }
        case "revoke":
            guard arguments.positional.count == 2 else { throw UsageError("key revoke needs KEY_ID (from `key list`)") }
            let id = arguments.positional[1]
            let appID = try await runtime.keys.keys(appID: nil).first { $0.id == id }?.appID
            guard try await runtime.keys.revokeKey(id: id) else { throw CommandFailure("no key with id \(id)") }
            try await AuditTrail.record(
                runtime.audit, .keyRevoked, appID: appID, target: ["kind": .string("key"), "id": .string(id)])
            print("revoked \(id)")
        case "update":
            let unknown = arguments.unknown(besides: ["rate"])
            guard unknown.isEmpty else { throw UsageError("unknown option --\(unknown[0])") }
            guard arguments.positional.count == 2, let text = arguments.value("rate") else {
                throw UsageError("key update needs KEY_ID (from `key list`) and --rate N (or --rate none)")
            }
            let id = arguments.positional[1]
            let rateLimit: Int?
            switch APIKey.parseRateLimit(text) {
            case .success(let rate): rateLimit = rate
            case .failure(let problem): throw UsageError(problem.description)
            }
            guard let key = try await runtime.keys.setRateLimit(rateLimit, keyID: id) else {
                throw CommandFailure("no key with id \(id)")
            }
            try await AuditTrail.record(
                runtime.audit, .keyUpdated, appID: key.appID,
                target: ["kind": .string("key"), "id": .string(key.id), "rate": key.rateLimit.map { .int($0) } ?? .null])
            print("key id: \(key.id) rate \(describe(rate: key.rateLimit))")
            print(
                "per instance: each running instance allows this rate on its own; instances with an exact cache "
                    + "use it from their next request, others within FBS_KEY_CACHE_TTL (\(Int(runtime.settings.keyCacheTTL)) s)")
        default:
            throw UsageError("expected `key add`, `key list`, `key update` or `key revoke`")
        }
    }

    /// A key's rate limit as the commands print it.
    private static func describe(rate: Int?) -> String {
        rate.map { "\($0)/s per instance (burst \(2 * $0))" } ?? "unlimited"
    }

    /// An operator's `--graph-version`, checked against Meta's table today.
    private static func checkGraphVersion(_ text: String) -> GraphVersionTable.Check {
        GraphVersionTable.meta.check(
            text, as: "--graph-version", on: CalendarDay(unixSeconds: Date().timeIntervalSince1970))
    }
}
