import Testing

// `SigningKeyCacheTests.until` (FBSessionsCoreTests), which these tests waited with before the suites were split by
// module: test targets cannot share code, so this suite has its own.

extension LimitedLoginKeySetTests {
    /// Waits (up to 5 s) for a background fetch to be seen.
    static func until(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(condition())
    }
}
