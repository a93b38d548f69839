import FBSessionsCore
import FBSessionsStorage
import Foundation
import Support

/// `webhook add`, `webhook list` and `webhook remove`.
enum WebhookCommands {
    static let help = """
        Usage: fbsessiond webhook add --app NAME --url URL
               fbsessiond webhook list [--app NAME]
               fbsessiond webhook remove WEBHOOK_ID

        add registers a URL that receives each of the app's events from now on, one JSON event per POST, signed
        with X-FBS-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>. It prints the
        webhook id and then the signing secret alone on the last line; the secret is stored encrypted under
        FBS_ENCRYPTION_KEYS and not shown again. Answers other than 2xx are retried with exponential backoff
        until they succeed (at least once; deduplicate by X-FBS-Event-Id). list shows ids, URLs, state and
        pending deliveries, never secrets. remove stops all further deliveries to the webhook.

        """ + LocalStack.helpNote

    /// Runs a `webhook` subcommand against the database of the environment's settings.
    ///
    /// - Parameter arguments: The words after `webhook`.
    /// - Throws: ``UsageError`` for a wrong command line, ``CommandFailure`` for a failure the operator can fix.
    static func run(_ arguments: Arguments) async throws {
        if arguments.flag("help") || arguments.positional.first == nil { return print(help) }
        let runtime = try Runtime(settings: try Runtime.adminSettings(), applicationName: "fbsessiond-webhook")
        defer { runtime.shutdown() }
        let store = PostgresWebhookStore(database: runtime.database, keyring: try runtime.keyring())
        try await run(arguments, webhooks: store, apps: try runtime.apps, audit: runtime.audit) { print($0) }
    }

    /// Runs a `webhook` subcommand against the given stores, writing each output line to `output`.
    ///
    /// - Parameters:
    ///   - arguments: The words after `webhook`.
    ///   - webhooks: The webhook store.
    ///   - apps: The app store, to find apps by name.
    ///   - audit: Where `add` and `remove` record what they did (``AuditTrail``).
    ///   - output: Receives each line printed.
    /// - Throws: ``UsageError`` or ``CommandFailure``.
    static func run(
        _ arguments: Arguments, webhooks: some WebhookStore, apps: some AppStore, audit: any AuditLog,
        output: (String) -> Void
    ) async throws {
        switch arguments.positional.first {
        case "add":
            let unknown = arguments.unknown(besides: ["app", "url"])
            guard unknown.isEmpty else { throw UsageError("unknown option --\(unknown[0])") }
            guard arguments.positional.count == 1, let name = arguments.value("app"), let url = arguments.value("url")
            else { throw UsageError("webhook add needs --app NAME and --url URL") }
            if let problem = Webhook.problem(withURL: url) { throw UsageError("--url: \(problem)") }
            guard let app = try await apps.app(named: name) else { throw CommandFailure("no app named \(name)") }
            let made = try await webhooks.addWebhook(appID: app.id, url: url)
            // The host only: a URL's path and query may carry the receiver's own credentials.
            try await AuditTrail.record(
                audit, .webhookAdded, appID: app.id,
                target: [
                    "kind": .string("webhook"), "id": .string(made.webhook.id),
                    "host": URLComponents(string: made.webhook.url)?.host.map(AuditValue.string) ?? .null,
                ])
            output("webhook id: \(made.webhook.id) (app \(app.name); \(made.webhook.url))")
            output("the signing secret is shown once; store it now:")
            output(made.secret)
        case "list":
            let unknown = arguments.unknown(besides: ["app"])
            guard unknown.isEmpty, arguments.positional.count == 1 else {
                throw UsageError("expected `webhook list [--app NAME]`")
            }
            var appID: String?
            if let name = arguments.value("app") {
                guard let app = try await apps.app(named: name) else { throw CommandFailure("no app named \(name)") }
                appID = app.id
            }
            for webhook in try await webhooks.webhooks(appID: appID) {
                let state = webhook.disabledAt.map { "removed \(RFC3339.string(from: $0))" } ?? "active"
                output(
                    "\(webhook.id)\t\(webhook.appID)\t\(webhook.url)\t\(state)\t\(webhook.pendingDeliveries) pending")
            }
        case "remove":
            guard arguments.positional.count == 2 else {
                throw UsageError("webhook remove needs WEBHOOK_ID (from `webhook list`)")
            }
            let id = arguments.positional[1]
            let appID = try await webhooks.webhooks(appID: nil).first { $0.id == id }?.appID
            guard try await webhooks.removeWebhook(id: id) else {
                throw CommandFailure("no active webhook with id \(id)")
            }
            try await AuditTrail.record(
                audit, .webhookRemoved, appID: appID, target: ["kind": .string("webhook"), "id": .string(id)])
            output("removed \(id)")
        default:
            throw UsageError("expected `webhook add`, `webhook list` or `webhook remove`")
        }
    }
}
