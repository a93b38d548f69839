import FBSessionsCore
import FBSessionsStorage
import Foundation
import Support
import TestSupport
import Testing

@testable import fbsessiond

extension DatabaseTests {
    /// `fbsessiond webhook add|list|remove`, called as functions against a real database.
    @Suite struct WebhookCommandTests {
        final class Lines: Sendable {
            private let lines = Locked<[String]>([])
            func append(_ line: String) {
                lines.withLock { $0.append(line) }
            }
            func take() -> [String] {
                lines.withLock { lines in
                    defer { lines = [] }
                    return lines
                }
            }
        }

        @Test func addListAndRemove() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let store = PostgresWebhookStore(database: harness.database, keyring: harness.keyring)
            let audit = PostgresAuditLog(database: harness.database)
            let output = Lines()
            func run(_ words: [String]) async throws {
                try await WebhookCommands.run(try Arguments(words), webhooks: store, apps: harness.apps, audit: audit) {
                    output.append($0)
                }
            }
            try await run(["add", "--app", "shop", "--url", "https://shop.example/hooks?tenant=7"])
            let added = output.take()
            let secret = SecretsTranscript.noted("webhook secret", try #require(added.last))
            #expect(secret.hasPrefix("whsec_") && !secret.contains(" "), "the secret alone on the last line")
            let id = try #require(added.first?.wholeMatch(of: #/webhook id: (whk_[0-9a-f]{16}) .*/#)?.1)
            try await run(["add", "--app=blog", "--url", "http://127.0.0.1:9/h"])
            _ = output.take()

            try await run(["list"])
            let all = output.take()
            #expect(all.count == 2 && all.allSatisfy { !$0.contains("whsec_") })
            #expect(all.contains { $0.hasPrefix(String(id)) && $0.contains("https://shop.example/hooks?tenant=7") })
            try await run(["list", "--app", "shop"])
            let shop = output.take()
            #expect(shop.count == 1 && shop[0].contains("\tactive\t"))

            try await run(["remove", String(id)])
            #expect(output.take() == ["removed \(id)"])
            try await run(["list", "--app", "shop"])
            #expect(output.take().first?.contains("\tremoved ") == true)
            await #expect(throws: CommandFailure.self) { try await run(["remove", String(id)]) }
            await #expect(throws: CommandFailure.self) {
                try await run(["add", "--app", "nope", "--url", "https://x.example"])
            }
            for words in [
                ["add", "--app", "shop"], ["add", "--app", "shop", "--url", "ftp://x.example/h"],
                ["add", "--app", "shop", "--url", "https://user:pw@x.example/"],
                ["add", "--app", "shop", "--url", "/rel"],
                ["add", "--app", "shop", "--url", "https://x.example", "--secret", "s"], ["remove"], ["frobnicate"],
            ] {
                await #expect(throws: UsageError.self, "\(words)") { try await run(words) }
            }
            #expect(try await store.webhooks(appID: nil).count == 2)

            // The audit log: each add and the remove, with the OS user and the host alone (never the path, the
            // query or the secret); refused commands wrote nothing.
            let shopID = try #require(try await harness.apps.app(named: "shop")?.id)
            var rows: [(app: String?, action: String, actor: String, target: String)] = []
            for _ in 0..<100 {
                rows = try await harness.database.run { connection in
                    try connection.query(
                        "SELECT app_id, action, actor::text AS actor, target::text AS target FROM audit_log ORDER BY id"
                    ).map {
                        (try $0.decode("app_id", as: String?.self), try $0.decode("action", as: String.self),
                         try $0.decode("actor", as: String.self), try $0.decode("target", as: String.self))
                    }
                }
                if rows.count >= 3 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(rows.map(\.action) == ["webhook.added", "webhook.added", "webhook.removed"])
            #expect(rows[0].app == shopID && rows[2].app == shopID)
            let user = AuditTrail.osUser
            #expect(!user.isEmpty)
            for row in rows {
                let actor = try JSONSerialization.jsonObject(with: Data(row.actor.utf8)) as? [String: String]
                #expect(actor == ["kind": "cli", "user": user])
            }
            #expect(rows[0].target.contains(#""host": "shop.example""#) && rows[0].target.contains(String(id)))
            #expect(rows.allSatisfy { !$0.target.contains("tenant") && !$0.target.contains("whsec_") && !$0.target.contains(secret) })
        }
    }
}
