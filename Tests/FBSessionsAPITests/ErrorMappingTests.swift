import FBSessionsCore
import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

@testable import FBSessionsAPI

@Suite("Errors mapped to the contract's responses")
struct ErrorMappingTests {
    /// A request task cancelled by its deadline or by shutdown answers what the HTTP layer sends when a deadline
    /// passes (503 `timeout` with `Retry-After`), not 500: it is not an unexpected error, so it is not logged as one.
    @Test func cancellationIsATimeoutNotAnInternalError() async {
        let log = InMemoryLogHandler()
        let cancelled = Route(
            "GET", "/v1/cancelled", operationID: "cancelled", scope: nil,
            handler: .waiting { _ in throw CancellationError() })
        let router = Router(
            routes: [cancelled], keys: InMemoryKeyStore(),
            observer: Observer(metrics: MetricsRegistry(), logger: Logger(label: "http", handler: log)))
        let answer = await RouteCaller.call(router, "GET", "/v1/cancelled")
        #expect(answer.status == 503)
        #expect(String(decoding: answer.body, as: UTF8.self).contains(#""code":"timeout""#))
        #expect(answer.headers["Retry-After"] == "1")
        #expect(!log.records.contains { $0.level == .error }, "\(log.records.map(\.message))")
    }

    @Test func theDatabaseBeingAwayIsStillItsOwn503() {
        let mapped = APIError.from(ServiceError.databaseUnavailable)
        #expect(mapped.status == 503)
        #expect(mapped.code == .databaseUnavailable)
    }
}
