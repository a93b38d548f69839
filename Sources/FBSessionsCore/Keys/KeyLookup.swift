/// The result of looking up a presented API key.
public struct KeyLookup: Sendable {
    /// The key and its app.
    public let principal: Principal
    /// True when the lookup itself read the key from the database as live; false when its app and scopes came
    /// from a cache and the request must still confirm the key's liveness (``KeyStore/isLive(keyID:)``) before it
    /// is served.
    public let isConfirmed: Bool

    /// Creates a result.
    public init(principal: Principal, isConfirmed: Bool) {
        self.principal = principal
        self.isConfirmed = isConfirmed
    }
}
