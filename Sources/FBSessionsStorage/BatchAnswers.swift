import Postgres

/// The answers of a batched statement with one row per item (``ReadBatcher``): the row named by `batch_index`
/// (1-based) is read by `answer`. An error is that item's answer only; an item no row names gets
/// ``PostgresBatchMismatch``.
enum BatchAnswers {
    static func byIndex<Answer>(
        _ rows: PostgresRows, count: Int, _ answer: (Int, PostgresRow) throws -> Answer
    ) -> [Result<Answer, any Error>] {
        var answers = [Result<Answer, any Error>](repeating: .failure(PostgresBatchMismatch()), count: count)
        for row in rows {
            guard let index = try? row.decode("batch_index", as: Int.self) - 1, answers.indices.contains(index) else {
                continue
            }
            answers[index] = Result { try answer(index, row) }
        }
        return answers
    }
}
