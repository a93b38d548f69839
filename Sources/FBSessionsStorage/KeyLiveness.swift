import FBSessionsCore
import Postgres

/// The SQL that confirms a cached API key in the same statement as a request's data (docs/caching.md):
///
///     SELECT k.live AS key_live, … FROM (SELECT EXISTS (SELECT 1 FROM api_keys
///         WHERE id = $1 AND revoked_at IS NULL) AS live) k LEFT JOIN (…the data…) ON …
///
/// The one-row `k` is left-joined to the data, so the statement always returns at least one row and says whether
/// the key is live even when the data is missing (a revoked key gets 401, not 404). Key and data are read in one
/// snapshot: a revocation committed before the statement started is always seen.
enum KeyLiveness {
    static let column: StaticString = "k.live AS key_live"
    /// Followed by the key id parameter, then ``close``.
    static let open: StaticString = "(SELECT EXISTS (SELECT 1 FROM api_keys WHERE id = "
    static let close: StaticString = " AND revoked_at IS NULL) AS live) k"

    /// The same for a batch (``ReadBatcher``): each request's key id is `r.key_id`, empty when it has none to
    /// confirm.
    static let batchColumn: StaticString = """
        CASE WHEN r.key_id = '' THEN true \
        ELSE EXISTS (SELECT 1 FROM api_keys WHERE id = r.key_id AND revoked_at IS NULL) END AS key_live
        """

    /// Confirms a batch item's check, if it has one; else as ``settle(_:_:)``.
    static func settle(_ check: KeyCheck?, _ row: PostgresRow) throws {
        guard let check else { return }
        try settle(check, row)
    }

    /// Confirms the check when the row says the key is live; else throws ``ServiceError/keyRevoked``.
    static func settle(_ check: KeyCheck, _ row: PostgresRow) throws {
        guard try row.decode("key_live", as: Bool.self) else { throw ServiceError.keyRevoked }
        check.confirm()
    }

    /// The answers of a batched statement with one row per item (``ReadBatcher``): the row named by
    /// `batch_index` (1-based) settles its item's key check, then `answer` reads it. An error is that item's
    /// answer only; an item no row names gets ``PostgresBatchMismatch``.
    static func answers<Read, Answer>(
        _ rows: PostgresRows, for reads: [Read], check: (Read) -> KeyCheck?,
        _ answer: (Read, PostgresRow) throws -> Answer
    ) -> [Result<Answer, any Error>] {
        var answers = [Result<Answer, any Error>](repeating: .failure(PostgresBatchMismatch()), count: reads.count)
        for row in rows {
            guard let index = try? row.decode("batch_index", as: Int.self) - 1, answers.indices.contains(index) else {
                continue
            }
            answers[index] = Result {
                try settle(check(reads[index]), row)
                return try answer(reads[index], row)
            }
        }
        return answers
    }
}
