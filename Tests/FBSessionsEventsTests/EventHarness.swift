import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsService
import Foundation
import HTTPServer
import Postgres
import Support
import TestSupport

@testable import FBSessionsStorage

/// A fresh database with two apps and their keys, and the service as `fbsessiond serve` wires it
/// (``ServiceAssembly``, without an exact cache): its router (no socket) and the listener that wakes long-poll
/// readers.
final class EventHarness: Sendable {
    let databaseURL: String
    let pool: PostgresPool
    let keyring: Keyring
    let service: ServiceAssembly
    let app: App
    let otherApp: App
    /// A key of `app` with the `events` scope.
    let key: String
    /// A key of `otherApp` with the `events` scope.
    let otherKey: String
    /// A key of `app` with only `sessions`.
    let sessionsKey: String

    var database: Database { service.database.database }
    var apps: PostgresAppStore { service.apps }
    var waiters: EventWaiters { service.eventWaiters }
    var store: PostgresEventStore { service.events }
    var router: Router { service.router }
    var notifications: EventNotifications { service.notifications }

    init(maxWaiters: Int = 100, listen: Bool = true) async throws {
        databaseURL = try TestDatabase.create()
        pool = PostgresPool(configuration: .init(connectionString: databaseURL, size: 6, connectTimeout: .seconds(2)))
        keyring = SecretsTranscript.notingKeyring(Keyring.generate()).ring
        var parts = try ServiceParts.test()
        parts.cache = .given(nil)
        parts.maxEventWaiters = maxWaiters
        service = try ServiceAssembly(parts, database: .test(pool: pool, url: databaseURL, keyring: keyring))
        let apps = service.apps
        app = try await apps.addApp(
            AppDraft(name: "shop", facebookAppID: "1001", secret: "s1", redirectURIs: [], requiredPermissions: []))
        otherApp = try await apps.addApp(
            AppDraft(name: "blog", facebookAppID: "1002", secret: "s2", redirectURIs: [], requiredPermissions: []))
        let keys = service.keys
        key = SecretsTranscript.noted("api key", try await keys.addKey(appID: app.id, scopes: [.events]).text)
        otherKey = SecretsTranscript.noted("api key", try await keys.addKey(appID: otherApp.id, scopes: [.events]).text)
        sessionsKey = SecretsTranscript.noted("api key", try await keys.addKey(appID: app.id, scopes: [.sessions]).text)
        if listen {
            let notifications = service.notifications
            notifications.start()
            _ = try await onThread { eventually { notifications.isListening } }
        }
    }

    /// Writes events in one transaction, as the session store does.
    func write(_ events: [SessionEvent], appID: String? = nil) async throws {
        let appID = appID ?? app.id
        try await database.transaction { connection in
            try EventWriter.write(events, appID: appID, on: connection)
        }
    }

    /// `count` events of distinct sessions, each `session.opened`.
    static func opened(_ count: Int, owner: String = "user-1", prefix: String = "ses_a") -> [SessionEvent] {
        (0..<count).map { SessionEvent(.sessionOpened, sessionID: "\(prefix)\($0)", owner: owner) }
    }

    /// A GET through the router, with the harness key unless another is given.
    func get(_ target: String, key: String? = nil) async -> Response {
        var headers: HTTPHeaders = [:]
        headers.add("Authorization", "Bearer \(key ?? self.key)")
        return await RouteCaller.call(router, "GET", target, headers: headers)
    }

    /// A feed page as JSON, or `nil` when the answer is not a 200 with a JSON object.
    func page(_ target: String, key: String? = nil) async -> FeedPage? {
        FeedPage(await get(target, key: key))
    }

    /// A feed page once it holds at least `count` events (or after 10 s, whatever it holds then).
    ///
    /// Committed events can stay invisible for a moment: any transaction on the server that started before
    /// them holds them back, and other test targets create databases (a transaction) all the time.
    func page(_ target: String, key: String? = nil, atLeast count: Int) async throws -> FeedPage? {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let page = await page(target, key: key)
            if (page?.events.count ?? 0) >= count || ContinuousClock.now > deadline { return page }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func stop() {
        notifications.stop()
        service.shutdown()
        pool.shutdown()
        TestDatabase.drop(databaseURL)
    }
}

/// A `GET /v1/events` answer: kept as its body (bytes, so the page passes between tasks as a plain value) and
/// decoded again on each read of ``events``.
struct FeedPage: Sendable {
    private let body: [UInt8]
    let nextCursor: String

    init?(_ response: Response) {
        guard response.status == 200, let (_, cursor) = Self.decode(response.body) else { return nil }
        self.body = response.body
        self.nextCursor = cursor
    }

    /// The page's events, as JSON objects.
    var events: [[String: Any]] { Self.decode(body)?.events ?? [] }

    private static func decode(_ body: [UInt8]) -> (events: [[String: Any]], cursor: String)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let events = object["events"] as? [[String: Any]], let cursor = object["next_cursor"] as? String
        else { return nil }
        return (events, cursor)
    }

    var ids: [String] { events.compactMap { $0["id"] as? String } }
    var sessionIDs: [String] { events.compactMap { $0["session_id"] as? String } }
}

/// The error body of a response: code and field.
func errorOf(_ response: Response) -> (code: String?, field: String?) {
    let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    let error = object?["error"] as? [String: Any]
    return (error?["code"] as? String, error?["field"] as? String)
}

/// A connection handed between test threads one step at a time (never used by two at once).
///
/// Sendable: `PostgresConnection` (a libpq connection) is not; the test hands it on whole, and the compiler cannot
/// see that.
final class HeldConnection: @unchecked Sendable {
    let connection: PostgresConnection

    init(_ url: String) throws {
        connection = try PostgresConnection(connectionString: url)
    }
}
