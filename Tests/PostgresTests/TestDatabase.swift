import Foundation
import Testing

/// The integration-test gate: `TEST_DATABASE_URL` names the database. Without it the integration tests are
/// skipped, except when `CI=true`, where they run and fail, so CI can never pass by skipping them.
enum TestDatabase {
    /// The database URL, if configured.
    static var url: String? {
        guard let value = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"], !value.isEmpty else {
            return nil
        }
        return value
    }

    /// Whether integration tests should run (and, in CI without a database, fail).
    static var isEnabled: Bool {
        url != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// The database URL, or a thrown failure.
    ///
    /// - Returns: `TEST_DATABASE_URL`.
    /// - Throws: `Missing` when it is not set (only reachable with `CI=true`).
    static func requireURL() throws -> String {
        guard let url else { throw Missing() }
        return url
    }

    /// Waits until `condition` holds, polling every 10 ms, for at most `timeout`.
    ///
    /// - Parameters:
    ///   - timeout: The longest wait.
    ///   - condition: The condition.
    /// - Returns: Whether it held in time.
    @discardableResult
    static func eventually(
        timeout: Duration = .seconds(5),
        _ condition: () async throws -> Bool
    ) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() {
                return true
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return try await condition()
    }

    /// The failure when CI runs the integration tests without a database.
    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "CI=true but TEST_DATABASE_URL is not set: integration tests must not be skipped in CI"
        }
    }
}
