import TestSupport
import Testing

/// The suites of this target that need PostgreSQL, run one test at a time: an open transaction holds back
/// every feed on the server (by design), so the late-commit test must not overlap the others.
@Suite(.serialized, .enabled(if: TestDatabase.isEnabled)) enum DatabaseTests {}
