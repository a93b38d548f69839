import FBSessionsCore
import Foundation
import HTTPServer
import Postgres
import Support
import TestSupport
import Testing

@testable import FBSessionsStorage

extension DatabaseTests {
    /// Long polling: woken by a commit on another connection, empty after `wait`, bounded, cancellable; and the
    /// listener that wakes it surviving the loss of its connection.
    @Suite struct LongPollTests {
        /// Writes one event on a connection of its own and returns the moment just before COMMIT was sent.
        static func commit(_ sessionID: String, appID: String, url: String) async throws -> ContinuousClock.Instant {
            try await onThread {
                let connection = try PostgresConnection(connectionString: url)
                defer { connection.close() }
                try connection.simpleQuery(unsafeSQL: "BEGIN")
                try EventWriter.write(
                    [SessionEvent(.sessionOpened, sessionID: sessionID, owner: "o")], appID: appID, on: connection)
                let committing = ContinuousClock.now
                try connection.simpleQuery(unsafeSQL: "COMMIT")
                return committing
            }
        }

        @Test func aLongPollWakesWithinMillisecondsOfACommit() async throws {
            let harness = try await EventHarness()
            defer { harness.stop() }
            let start = try #require(await harness.page("/v1/events"))
            var figures: [Double] = []
            var cursor = start.nextCursor
            for round in 0..<5 {
                let poll = Task { [cursor] in
                    (await harness.page("/v1/events?wait=10&after=\(cursor)"), ContinuousClock.now)
                }
                #expect(try await onThread { eventually { harness.waiters.count == 1 } })
                try await Task.sleep(for: .milliseconds(50))
                let committed = try await Self.commit(
                    "ses_wake\(round)", appID: harness.app.id, url: harness.databaseURL)
                let (page, answered) = await poll.value
                #expect(page?.sessionIDs == ["ses_wake\(round)"])
                let latency = answered - committed
                figures.append(
                    Double(latency.components.attoseconds) / 1e15 + Double(latency.components.seconds) * 1000)
                #expect(latency < .seconds(1))
                cursor = page?.nextCursor ?? cursor
            }
            let rounds = figures.map { String(format: "%.1f", $0) }.joined(separator: ", ")
            let median = String(format: "%.1f", figures.sorted()[2])
            print("long-poll answered after COMMIT was sent, ms: \(rounds) (median \(median))")
            #expect(harness.waiters.count == 0)
        }

        @Test func aLongPollOverARealSocketWakesAndTimesOut() async throws {
            let harness = try await EventHarness()
            defer { harness.stop() }
            var configuration = ServerConfiguration()
            configuration.port = 0
            let server = try Server(configuration: configuration, handler: SecretsTranscript.recording(harness.router))
            defer { server.shutdown(gracePeriod: 1) }
            let key = harness.key
            let port = server.port
            let request: @Sendable (String) throws -> (RawConnection.Reply, Double) = { target in
                let began = Date()
                let connection = try RawConnection(port: port, timeout: 15)
                defer { connection.close() }
                connection.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n\r\n")
                return (try connection.readReply(), Date().timeIntervalSince(began))
            }
            let (quiet, waited) = try await onThread { try request("/v1/events?wait=2") }
            #expect(quiet.status == 200 && quiet.text.hasPrefix(#"{"events":[]"#))
            #expect(waited >= 1.9 && waited < 4, "waited \(waited) s")
            let poll = Task { try await onThread { try request("/v1/events?wait=20") } }
            #expect(try await onThread { eventually { harness.waiters.count == 1 } })
            _ = try await Self.commit("ses_live", appID: harness.app.id, url: harness.databaseURL)
            let (woken, took) = try await poll.value
            #expect(woken.status == 200 && woken.text.contains("ses_live"))
            #expect(took < 5, "took \(took) s")
        }

        @Test func anEmptyLongPollAnswersAfterWait() async throws {
            let harness = try await EventHarness()
            defer { harness.stop() }
            try await harness.write(EventHarness.opened(1), appID: harness.otherApp.id)  // another app's news
            let began = ContinuousClock.now
            let page = try #require(await harness.page("/v1/events?wait=1"))
            let took = ContinuousClock.now - began
            #expect(page.events.isEmpty && page.nextCursor == EventCursor.start.text)
            #expect(took >= .milliseconds(950) && took < .seconds(6), "took \(took)")
            #expect(harness.waiters.count == 0)
        }

        @Test func waitersAreBoundedAndLeaveWhenCancelled() async throws {
            let harness = try await EventHarness(maxWaiters: 1)
            defer { harness.stop() }
            let first = Task { await harness.get("/v1/events?wait=20") }
            #expect(try await onThread { eventually { harness.waiters.count == 1 } })
            let refused = await harness.get("/v1/events?wait=5")
            #expect(refused.status == 503 && errorOf(refused).code == "overloaded")
            #expect(refused.headers["Retry-After"] == "1")
            #expect(await harness.get("/v1/events").status == 200, "a request that does not wait is still served")
            first.cancel()
            _ = await first.value
            #expect(harness.waiters.count == 0)
            let generation = harness.waiters.generation(appID: harness.app.id)
            let direct = Task {
                try await harness.waiters.wait(appID: harness.app.id, after: generation, timeout: .seconds(20))
            }
            #expect(try await onThread { eventually { harness.waiters.count == 1 } })
            direct.cancel()
            await #expect(throws: CancellationError.self) { try await direct.value }
            #expect(harness.waiters.count == 0)
        }

        @Test func aShutdownAnswersLongPollsAtOnce() async throws {
            let harness = try await EventHarness()
            defer { harness.stop() }
            let began = ContinuousClock.now
            let poll = Task { await harness.page("/v1/events?wait=20") }
            #expect(try await onThread { eventually { harness.waiters.count == 1 } })
            harness.waiters.shutdown()
            let page = await poll.value
            #expect(page?.events.isEmpty == true && ContinuousClock.now - began < .seconds(5))
        }

        @Test func theListenerSurvivesTerminationOfItsConnection() async throws {
            let url = try TestDatabase.create()
            defer { TestDatabase.drop(url) }
            let name = "listener-" + UUID().uuidString.prefix(8).lowercased()
            let signals = SignalLog()
            let listener = PostgresListener(
                configuration: .init(
                    connectionString: url, channels: ["fbs_events", "other_channel"], applicationName: name,
                    initialReconnectDelay: .milliseconds(20))
            ) { signals.append($0) }
            listener.start()
            defer { listener.stop() }
            try await onThread {
                let admin = try PostgresConnection(connectionString: url)
                defer { admin.close() }
                #expect(eventually { listener.isListening })
                try admin.execute("SELECT pg_notify('fbs_events', 'before')")
                #expect(eventually { signals.contains(.notification(channel: "fbs_events", payload: "before")) })
                let killed = try admin.query(
                    "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = \(name)")
                #expect(killed.count == 1)
                #expect(eventually { signals.contains(.disconnected) && signals.contains(.reconnected) })
                #expect(eventually { listener.isListening })
                try admin.execute("SELECT pg_notify('other_channel', 'after')")
                #expect(eventually { signals.contains(.notification(channel: "other_channel", payload: "after")) })
            }
            listener.stop()
            listener.stop()
            #expect(!listener.isListening)
            let disconnected = signals.all.firstIndex(of: .disconnected) ?? -1
            let reconnected = signals.all.firstIndex(of: .reconnected) ?? -1
            #expect(disconnected >= 0 && reconnected > disconnected)
        }
    }
}

/// The signals a listener sent, in order.
final class SignalLog: Sendable {
    private let signals = Locked<[PostgresListener.Signal]>([])

    func append(_ signal: PostgresListener.Signal) {
        signals.withLock { $0.append(signal) }
    }

    var all: [PostgresListener.Signal] {
        signals.withLock { $0 }
    }

    func contains(_ signal: PostgresListener.Signal) -> Bool { all.contains(signal) }
}
