/// Errors of the domain. They know nothing of HTTP; the API maps each to a status and code in one place.
public enum ServiceError: Error, Equatable, Sendable {
    /// The database cannot be reached or is overloaded right now; retrying later may work.
    case databaseUnavailable
    /// An app with this name exists.
    case appExists(String)
    /// No app has this name.
    case unknownApp(String)
    /// A stored secret could not be decrypted (a key missing from the ring, or tampering).
    case undecryptable
    /// The request's API key was revoked (or deleted) after it was cached; the answer is 401.
    case keyRevoked
}
