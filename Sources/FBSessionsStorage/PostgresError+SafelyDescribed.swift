import FBSessionsCore
import Postgres

/// `description` is the code and the SQLSTATE only; the violated constraint's name is schema, not data.
extension PostgresError: SafelyDescribedError {
    public var safeDescription: String {
        guard let constraintName else { return description }
        return "\(description), constraint \(constraintName)"
    }
}
