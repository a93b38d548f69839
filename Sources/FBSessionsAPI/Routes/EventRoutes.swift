import FBSessionsCore
import Foundation
import HTTPServer

/// The change feed: `GET /v1/events`, with long polling.
enum EventRoutes {
    /// How often a reader looks again while events wait behind an older open transaction (which ends without a
    /// notification of its own): starting at the first value, doubling up to the second.
    static let pendingRecheck: (first: Duration, most: Duration) = (.milliseconds(20), .milliseconds(500))

    /// The routes.
    ///
    /// - Parameters:
    ///   - store: The feed; `nil` (route tests without a database) answers 503 `database_unavailable`.
    ///   - waiters: The long-poll readers, woken by ``EventNotifications`` in `fbsessiond serve`.
    static func routes(events store: (any EventStore)?, waiters: EventWaiters) -> [Route] {
        [
            /// - Remark: HTTP GET /v1/events (openapi.yaml operationId listEvents)
            Route(
                "GET", "/v1/events", operationID: "listEvents", scope: .events,
                handler: .waiting { context in
                    let app = try context.app()
                    let request = try FeedRequest(context)
                    guard let store else {
                        throw APIError.from(ServiceError.databaseUnavailable)
                    }
                    guard let page = try await read(store, waiters, appID: app.id, request) else {
                        return overloaded(requestID: context.requestID)
                    }
                    return Response.json(
                        status: 200, body: Array(render(page).utf8), headers: ["Cache-Control": "no-store"])
                })
        ]
    }

    /// The query of a feed request, checked.
    struct FeedRequest {
        let after: EventCursor?
        let wait: Duration
        let limit: Int

        init(_ context: RouteContext) throws {
            if let text = context.query("after") {
                do {
                    after = try EventCursor(parsing: text)
                } catch {
                    throw APIError.invalid(error.description, field: "after")
                }
            } else {
                after = nil
            }
            if let text = context.query("wait") {
                guard let seconds = Self.seconds(text), seconds <= EventFeed.maxWaitSeconds else {
                    throw APIError.invalid("wait must be a number of seconds from 0 to 30.", field: "wait")
                }
                wait = .milliseconds(Int((seconds * 1000).rounded()))
            } else {
                wait = .zero
            }
            if let text = context.query("limit") {
                guard text.utf8.count <= 4, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text),
                    EventFeed.limits.contains(value)
                else {
                    throw APIError.invalid("limit must be an integer from 1 to 500.", field: "limit")
                }
                limit = value
            } else {
                limit = EventFeed.defaultLimit
            }
        }

        /// Seconds as a JSON-style number (`10`, `0.5`, `2.5e-3`): digits, one point, an exponent; no `inf`,
        /// `nan`, hex or spaces. Negative numbers are refused by the caller's range check.
        static func seconds(_ text: String) -> Double? {
            guard (1...32).contains(text.utf8.count),
                text.utf8.allSatisfy({ (48...57).contains($0) || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 || $0 == 0x2B || $0 == 0x2D }),
                let value = Double(text), value.isFinite, value >= 0
            else { return nil }
            return value
        }
    }

    /// Reads a page; when it is empty and the caller may wait, suspends until the app is notified (or events
    /// pending behind an open transaction may have become visible), reads again, until `wait` runs out or the
    /// service shuts down.
    ///
    /// - Returns: The page, or `nil` when too many readers wait already.
    static func read(
        _ store: any EventStore, _ waiters: EventWaiters, appID: String, _ request: FeedRequest
    ) async throws -> EventPage? {
        let clock = ContinuousClock()
        let deadline = clock.now + request.wait
        var recheck = pendingRecheck.first
        while true {
            let generation = waiters.generation(appID: appID)
            let page = try await store.events(appID: appID, after: request.after, limit: request.limit)
            let remaining = deadline - clock.now
            guard page.events.isEmpty, remaining > .zero, !waiters.isShutDown else { return page }
            let slice = page.hasPendingEvents ? min(remaining, recheck) : remaining
            do {
                let notified = try await waiters.wait(appID: appID, after: generation, timeout: slice)
                recheck = notified ? pendingRecheck.first : min(recheck * 2, pendingRecheck.most)
            } catch is EventWaitersError {
                return nil
            }
        }
    }

    /// 503 `overloaded` with `Retry-After`: the long-poll registry is full.
    ///
    /// Written with `Response.error` because the code is a string here; it must also be in ``ErrorCode`` and in
    /// the spec's list (the conformance test checks the pair).
    static func overloaded(requestID: String) -> Response {
        var response = Response.error(
            status: 503, code: "overloaded", message: "Too many clients are waiting for events; try again shortly.",
            requestID: requestID)
        response.headers.add("Retry-After", "1")
        return response
    }

    /// `{"events": [...], "next_cursor": "..."}`.
    static func render(_ page: EventPage) -> String {
        #"{"events":["# + page.events.map(\.json).joined(separator: ",") + #"],"next_cursor":""#
            + page.nextCursor.text + #""}"#
    }
}
