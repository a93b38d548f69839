import FBSessionsCore
import Testing

/// `FBS_DIRECT_DATABASE_URL` and `FBS_DB_PREPARED_STATEMENTS`: read, defaulted, and reported with every other
/// problem at once.
@Suite struct DatabaseSettingsTests {
    @Test func bothSettingsAreReadAndDefaultToUnset() throws {
        let unset = try Settings.parse(["DATABASE_URL": "postgresql://pooler:6432/db"]).get()
        #expect(unset.directDatabaseURL == nil && unset.databasePreparedStatements == nil)
        let set = try Settings.parse([
            "DATABASE_URL": "postgresql://pooler:6432/db", "FBS_DIRECT_DATABASE_URL": "postgresql://primary:5432/db",
            "FBS_DB_PREPARED_STATEMENTS": "false",
        ]).get()
        #expect(set.directDatabaseURL == "postgresql://primary:5432/db" && set.databasePreparedStatements == false)
        #expect(try Settings.parse(["FBS_DB_PREPARED_STATEMENTS": "true"]).get().databasePreparedStatements == true)
    }

    @Test func invalidValuesAreReportedTogether() {
        guard case .failure(let error) = Settings.parse([
            "FBS_DB_PREPARED_STATEMENTS": "sometimes", "FBS_DIRECT_DATABASE_URL": "postgresql://primary/db",
            "FBS_MAX_SLOTS": "0",
        ]) else {
            Issue.record("accepted")
            return
        }
        #expect(error.problems.count == 3, "\(error.problems)")
        #expect(error.problems.contains { $0.hasPrefix("FBS_DB_PREPARED_STATEMENTS: expected true or false") })
        #expect(error.problems.contains { $0.hasPrefix("FBS_DIRECT_DATABASE_URL: set DATABASE_URL too") })
        #expect(error.problems.contains { $0.hasPrefix("FBS_MAX_SLOTS") })
    }
}
