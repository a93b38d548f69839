import FBSessionsCore
import Foundation
import Testing

@testable import FBSessionsAPI

@Suite("Errors mapped to the contract's responses")
struct ErrorMappingTests {
    /// A request task cancelled by its deadline or by shutdown answers 503 `timeout` with `Retry-After`, not
    /// 500: it is not an unexpected error, so it is not logged as one.
    @Test func cancellationIsATimeoutNotAnInternalError() {
        let mapped = APIError.from(CancellationError())
        #expect(mapped.status == 503)
        #expect(mapped.code == .timeout)
        #expect(mapped.headers["Retry-After"] == "1")
    }

    @Test func theDatabaseBeingAwayIsStillItsOwn503() {
        let mapped = APIError.from(ServiceError.databaseUnavailable)
        #expect(mapped.status == 503)
        #expect(mapped.code == .databaseUnavailable)
    }
}
