import Crypto
import FBSessionsCore
import FBSessionsService
import Foundation
import HTTPClient
import Support
import TestSupport
import Testing

@testable import FBSessionsStorage
@testable import fbsessiond

extension DatabaseTests {
    /// Webhook deliveries to an in-process peer: signature, retry with backoff, at least once, several senders.
    @Suite struct WebhookTests {
        /// Requests a peer received, and what it answers next.
        final class Inbox: Sendable {
            private struct State {
                var received: [PeerRequest] = []
                var statuses: [Int]
            }

            private let state: Locked<State>

            /// - Parameter statuses: The statuses of the first answers, in order; 200 after them.
            init(statuses: [Int] = []) {
                state = Locked(State(statuses: statuses))
            }

            func take(_ request: PeerRequest) -> PeerAction {
                let status = state.withLock { state in
                    state.received.append(request)
                    return state.statuses.isEmpty ? 200 : state.statuses.removeFirst()
                }
                return .text(status == 200 ? "ok" : "nope", status: status)
            }

            var requests: [PeerRequest] {
                state.withLock { $0.received }
            }
        }

        static func dispatcher(
            _ harness: EventHarness, client: Client, retry: Duration = .milliseconds(50),
            lease: Duration = .seconds(60),
            requestTimeout: Duration = .seconds(5), poll: Duration = .milliseconds(200)
        ) -> WebhookDispatcher {
            WebhookDispatcher(
                database: harness.database, keyring: harness.keyring, transport: ClientWebhookTransport(client: client),
                configuration: .init(
                    requestTimeout: requestTimeout, lease: lease, initialRetryDelay: retry, maxRetryDelay: .seconds(1),
                    pollInterval: poll),
                logger: SecretsTranscript.logger("webhooks", level: .error))
        }

        @Test func aDeliveryIsOneSignedEventPerPost() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let inbox = Inbox()
            let peer = try ScriptedPeer { inbox.take($0) }
            defer { peer.stop() }
            let client = try Client()
            defer { client.shutdown() }
            let webhooks = PostgresWebhookStore(database: harness.database, keyring: harness.keyring)
            try await harness.write(EventHarness.opened(1, prefix: "ses_before"))
            _ = try await harness.page("/v1/events", atLeast: 1)  // visible, so the webhook starts after it
            let (webhook, secret) = try await webhooks.addWebhook(
                appID: harness.app.id, url: peer.baseURL + "/hooks/fbs")
            SecretsTranscript.noted("webhook secret", secret)
            #expect(secret.hasPrefix("whsec_") && secret.count > 40)
            try await harness.write([
                SessionEvent(.sessionClosed, sessionID: "ses_x", owner: "u-1", data: ["reason": .string("logged_out")])
            ])
            try await harness.write(EventHarness.opened(1, prefix: "ses_elsewhere"), appID: harness.otherApp.id)
            _ = try await harness.page("/v1/events", atLeast: 2)
            _ = try await harness.page("/v1/events", key: harness.otherKey, atLeast: 1)
            let dispatcher = Self.dispatcher(harness, client: client)
            let pass = try await dispatcher.runPass()
            #expect(pass.enqueued == 1 && pass.delivered == 1 && pass.failed == 0)
            let requests = inbox.requests
            let request = try #require(requests.first)
            #expect(requests.count == 1, "only the event written after the webhook was added, only of its app")
            #expect(request.method == "POST" && request.path == "/hooks/fbs")
            #expect(request.header("Content-Type") == "application/json")
            #expect(request.header("X-FBS-Webhook-Id") == webhook.id && request.header("X-FBS-Delivery-Attempt") == "1")
            // The signature, checked the way a receiver would, by hand.
            let header = try #require(request.header("X-FBS-Signature"))
            let match = try #require(header.wholeMatch(of: #/t=(\d+),v1=([0-9a-f]{64})/#))
            let timestamp = try #require(Int(match.1))
            #expect(abs(timestamp - Int(Date().timeIntervalSince1970)) < 60)
            let expected = HMACSHA256.authenticationCode(
                for: Array("\(timestamp).".utf8) + request.body, key: Array(secret.utf8))
            #expect(Hex.encode(expected) == String(match.2))
            #expect(WebhookSignature.isValid(header, secret: secret, body: request.body))
            #expect(!WebhookSignature.isValid(header, secret: secret + "x", body: request.body))
            #expect(!WebhookSignature.isValid(header, secret: secret, body: request.body + [32]))
            // The body is the feed's event object.
            let event = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
            #expect(Set(event.keys) == ["id", "type", "session_id", "owner", "at", "data"])
            #expect(event["type"] as? String == "session.closed" && event["session_id"] as? String == "ses_x")
            #expect((event["data"] as? [String: Any])?["reason"] as? String == "logged_out")
            #expect(request.header("X-FBS-Event-Id") == event["id"] as? String)
            let deliveries = try await webhooks.deliveries(webhookID: webhook.id, limit: 10)
            #expect(deliveries.count == 1 && deliveries[0].deliveredAt != nil && deliveries[0].lastStatus == 200)
            #expect(deliveries[0].attempts == 1 && deliveries[0].lastError == nil)
            #expect(try await dispatcher.runPass() == WebhookDispatcher.PassResult())
            #expect(inbox.requests.count == 1)
        }

        @Test func aFailedDeliveryIsRetriedWithBackoffUntilItSucceeds() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let inbox = Inbox(statuses: [500, 503])
            let peer = try ScriptedPeer { inbox.take($0) }
            defer { peer.stop() }
            let client = try Client()
            defer { client.shutdown() }
            let webhooks = PostgresWebhookStore(database: harness.database, keyring: harness.keyring)
            let (webhook, secret) = try await webhooks.addWebhook(appID: harness.app.id, url: peer.baseURL + "/h")
            SecretsTranscript.noted("webhook secret", secret)
            try await harness.write(EventHarness.opened(1, prefix: "ses_retry"))
            _ = try await harness.page("/v1/events", atLeast: 1)
            let dispatcher = Self.dispatcher(harness, client: client, retry: .milliseconds(300))
            let first = try await dispatcher.runPass()
            #expect(first.failed == 1 && first.delivered == 0)
            let failed = try #require(try await webhooks.deliveries(webhookID: webhook.id, limit: 1).first)
            #expect(failed.deliveredAt == nil && failed.attempts == 1 && failed.lastStatus == 500)
            #expect(failed.lastError == "status 500")
            let wait = failed.nextAttemptAt.timeIntervalSince(try #require(failed.lastAttemptAt))
            #expect(wait >= 0.14 && wait <= 0.4, "first retry after \(wait) s")
            let early = try await dispatcher.runPass()
            #expect(early.delivered + early.failed == 0, "not due yet")
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await dispatcher.runPass().failed == 1)
            let second = try #require(try await webhooks.deliveries(webhookID: webhook.id, limit: 1).first)
            let secondWait = second.nextAttemptAt.timeIntervalSince(try #require(second.lastAttemptAt))
            #expect(second.attempts == 2 && second.lastStatus == 503 && secondWait >= 0.29 && secondWait <= 0.7)
            try await Task.sleep(for: .milliseconds(750))
            #expect(try await dispatcher.runPass().delivered == 1)
            let done = try #require(try await webhooks.deliveries(webhookID: webhook.id, limit: 1).first)
            #expect(done.deliveredAt != nil && done.attempts == 3 && done.lastStatus == 200 && done.lastError == nil)
            let ids = Set(inbox.requests.compactMap { $0.header("X-FBS-Event-Id") })
            #expect(inbox.requests.count == 3 && ids.count == 1)
            #expect(inbox.requests.map { $0.header("X-FBS-Delivery-Attempt") } == ["1", "2", "3"])
        }

        /// The backlog the alert `FBSWebhookBacklog` watches: undelivered deliveries counted by the pass that read
        /// them, the oldest one's age growing between passes, and the attempts by outcome; all back to 0 once
        /// delivered.
        @Test func theBacklogIsCountedAndAgedInMetrics() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let inbox = Inbox(statuses: [500, 500, 500])
            let peer = try ScriptedPeer { inbox.take($0) }
            defer { peer.stop() }
            let client = try Client()
            defer { client.shutdown() }
            let webhooks = PostgresWebhookStore(database: harness.database, keyring: harness.keyring)
            let (_, secret) = try await webhooks.addWebhook(appID: harness.app.id, url: peer.baseURL + "/h")
            SecretsTranscript.noted("webhook secret", secret)
            try await harness.write(EventHarness.opened(3, prefix: "ses_backlog"))
            _ = try await harness.page("/v1/events", atLeast: 3)
            let metrics = MetricsRegistry()
            let dispatcher = WebhookDispatcher(
                database: harness.database, keyring: harness.keyring, transport: ClientWebhookTransport(client: client),
                configuration: .init(initialRetryDelay: .milliseconds(400), maxRetryDelay: .seconds(1)),
                logger: SecretsTranscript.logger("webhooks", level: .error), metrics: metrics)
            /// One sample's value in the rendered registry.
            func sample(_ series: String) throws -> Double {
                let line = try #require(metrics.render().split(separator: "\n").first { $0.hasPrefix(series + " ") })
                return try #require(Double(line.dropFirst(series.count + 1)))
            }
            #expect(try sample("fbs_webhook_deliveries_pending") == 0, "no pass yet")
            #expect(try sample("fbs_webhook_oldest_pending_seconds") == 0)
            let first = try await dispatcher.runPass()
            #expect(first.enqueued == 3 && first.failed == 3)
            #expect(try sample("fbs_webhook_deliveries_pending") == 3)
            #expect(try sample(#"fbs_webhook_deliveries_total{outcome="failed"}"#) == 3)
            #expect(try sample(#"fbs_webhook_deliveries_total{outcome="delivered"}"#) == 0)
            let aged = try sample("fbs_webhook_oldest_pending_seconds")
            #expect(aged >= 0 && aged < 5)
            // No pass meanwhile: the age grows from the last reading all the same.
            try await Task.sleep(for: .milliseconds(300))
            let later = try sample("fbs_webhook_oldest_pending_seconds")
            #expect(later >= aged + 0.25, "\(aged) then \(later)")
            #expect(dispatcher.backlog.pending == 3)
            try await Task.sleep(for: .milliseconds(500))
            let second = try await dispatcher.runPass()
            #expect(second.delivered == 3, "\(second)")
            #expect(try sample("fbs_webhook_deliveries_pending") == 0)
            #expect(try sample("fbs_webhook_oldest_pending_seconds") == 0)
            #expect(try sample(#"fbs_webhook_deliveries_total{outcome="delivered"}"#) == 3)
            #expect(dispatcher.backlog == WebhookDispatcher.Backlog(pending: 0, oldestSeconds: 0))
        }

        @Test func aSenderThatDiesMidRequestIsCoveredByTheLease() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let inbox = Inbox()
            let peer = try ScriptedPeer { inbox.take($0) }
            defer { peer.stop() }
            let client = try Client()
            defer { client.shutdown() }
            let webhooks = PostgresWebhookStore(database: harness.database, keyring: harness.keyring)
            let (webhook, secret) = try await webhooks.addWebhook(appID: harness.app.id, url: peer.baseURL + "/h")
            SecretsTranscript.noted("webhook secret", secret)
            try await harness.write(EventHarness.opened(1, prefix: "ses_lease"))
            _ = try await harness.page("/v1/events", atLeast: 1)
            let dispatcher = Self.dispatcher(
                harness, client: client, lease: .milliseconds(400), requestTimeout: .milliseconds(200))
            _ = try await dispatcher.enqueue()
            #expect(try await dispatcher.claim().count == 1)  // claimed, then the sender "dies"
            #expect(try await dispatcher.runPass().delivered == 0, "leased to the dead sender")
            try await Task.sleep(for: .milliseconds(450))
            #expect(try await dispatcher.runPass().delivered == 1)
            let done = try #require(try await webhooks.deliveries(webhookID: webhook.id, limit: 1).first)
            #expect(done.attempts == 2 && done.deliveredAt != nil)
        }

        @Test func severalSendersDeliverEachEventOnceAndTheLoopIsWokenByCommits() async throws {
            let harness = try await EventHarness(listen: false)
            defer { harness.stop() }
            let inbox = Inbox()
            let peer = try ScriptedPeer { inbox.take($0) }
            defer { peer.stop() }
            let client = try Client()
            defer { client.shutdown() }
            let webhooks = PostgresWebhookStore(database: harness.database, keyring: harness.keyring)
            let (webhook, secret) = try await webhooks.addWebhook(appID: harness.app.id, url: peer.baseURL + "/h")
            SecretsTranscript.noted("webhook secret", secret)
            for batch in 0..<4 {
                try await harness.write(EventHarness.opened(10, prefix: "ses_many\(batch)_"))
            }
            _ = try await harness.page("/v1/events?limit=500", atLeast: 40)
            let senders = (0..<3).map { _ in Self.dispatcher(harness, client: client) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in senders {
                    group.addTask {
                        for _ in 0..<6 { try await sender.runPass() }
                    }
                }
                try await group.waitForAll()
            }
            let ids = inbox.requests.compactMap { $0.header("X-FBS-Event-Id") }
            #expect(ids.count == 40 && Set(ids).count == 40)
            // The running loop, woken through the listener, delivers a new event without waiting for its timer.
            let loop = Self.dispatcher(harness, client: client, poll: .seconds(60))
            let notifications = EventNotifications(
                connectionString: harness.databaseURL, waiters: harness.waiters, dispatcher: loop,
                logger: SecretsTranscript.logger("events", level: .error))
            notifications.start()
            defer { notifications.stop() }
            #expect(try await onThread { eventually { notifications.isListening } })
            loop.start()
            try await harness.write(EventHarness.opened(1, prefix: "ses_woken"))
            #expect(try await onThread { eventually(timeout: 5) { inbox.requests.count == 41 } })
            await loop.stop()
            await loop.stop()
            #expect(try await webhooks.webhooks(appID: harness.app.id).first?.pendingDeliveries == 0)
            // A removed webhook gets nothing more.
            #expect(try await webhooks.removeWebhook(id: webhook.id))
            #expect(try await !webhooks.removeWebhook(id: webhook.id))
            try await harness.write(EventHarness.opened(1, prefix: "ses_after_removal"))
            _ = try await harness.page("/v1/events?limit=500", atLeast: 42)
            #expect(try await senders[0].runPass() == WebhookDispatcher.PassResult())
            #expect(inbox.requests.count == 41)
        }

        @Test func retryDelaysGrowExponentiallyWithJitterAndACap() {
            let configuration = WebhookDispatcher.Configuration(
                initialRetryDelay: .seconds(5), maxRetryDelay: .seconds(3600))
            #expect(configuration.retryDelay(afterAttempts: 1, jitter: 1) == .seconds(5))
            #expect(configuration.retryDelay(afterAttempts: 1, jitter: 0) == .milliseconds(2500))
            #expect(configuration.retryDelay(afterAttempts: 4, jitter: 1) == .seconds(40))
            #expect(configuration.retryDelay(afterAttempts: 30, jitter: 1) == .seconds(3600))
            #expect(configuration.retryDelay(afterAttempts: 10_000, jitter: 0.5) == .seconds(2700))
            for attempt in 1...20 {
                let delay = configuration.retryDelay(afterAttempts: attempt)
                #expect(delay >= .milliseconds(2500) && delay <= .seconds(3600))
            }
        }
    }
}
