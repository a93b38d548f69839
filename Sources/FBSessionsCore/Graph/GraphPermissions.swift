/// The permissions a user gave the app, from `GET /me/permissions` (docs/facebook-graph.md §6.1), each list in Graph's
/// order.
public struct GraphPermissions: Sendable, Hashable {
    /// Status `granted`.
    public var granted: [String]
    /// Status `declined`.
    public var declined: [String]
    /// Status `expired` (data access expired for them).
    public var expired: [String]

    /// Creates a value.
    /// - Parameters:
    ///   - granted: granted permissions.
    ///   - declined: declined permissions.
    ///   - expired: expired permissions.
    public init(granted: [String] = [], declined: [String] = [], expired: [String] = []) {
        self.granted = granted
        self.declined = declined
        self.expired = expired
    }

    /// Whether `permission` is granted.
    /// - Parameter permission: for example `email`.
    public func isGranted(_ permission: String) -> Bool {
        granted.contains(permission)
    }
}
