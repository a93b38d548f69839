import Foundation

/// A data-deletion request from Facebook, as its public status page shows it: nothing about the user.
public struct DataDeletion: Sendable, Equatable {
    /// Where the deletion stands. Deletion happens in the same transaction as the request is recorded, so a
    /// recorded request is always `completed`; the type leaves room for deferred work.
    public enum Status: String, Sendable {
        /// The user's data is erased.
        case completed
    }

    /// The alphanumeric confirmation code given to Facebook (and shown to the person).
    public var confirmationCode: String
    /// Where it stands.
    public var status: Status
    /// When Facebook's request arrived.
    public var requestedAt: Date
    /// When the deletion finished.
    public var completedAt: Date?

    /// Creates a value.
    public init(confirmationCode: String, status: Status, requestedAt: Date, completedAt: Date?) {
        self.confirmationCode = confirmationCode
        self.status = status
        self.requestedAt = requestedAt
        self.completedAt = completedAt
    }

    /// Whether `text` is shaped like a confirmation code (1–64 ASCII letters and digits), before any lookup.
    public static func isWellFormedCode(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }
}

/// What Facebook's callbacks change: every session of one Facebook user in one app (the port; implemented by
/// `FBSessionsStorage.PostgresSessionStore`). Each call is one transaction with its events.
public protocol FacebookUserStore: Sendable {
    /// Closes every live session of the Facebook user in the app (all owners) with `reason`, erasing tokens and
    /// profiles, writing `session.closed` events, and dropping pending revocations of the user's sessions (the
    /// user already removed the app).
    /// - Returns: the sessions closed now.
    func closeSessions(ofFacebookUser userID: String, appID: String, reason: ClosedReason) async throws -> [Session]

    /// Erases what the service holds about the Facebook user in the app: closes the live sessions with
    /// `data_deletion` (token and profile erased, events written), drops pending revocations (they hold tokens),
    /// erases the user's cached pictures, and records a completed deletion under `confirmationCode`.
    /// - Returns: the recorded deletion.
    func eraseFacebookUser(_ userID: String, appID: String, confirmationCode: String) async throws -> DataDeletion

    /// The deletion recorded under `confirmationCode` (of any app), or nil.
    func dataDeletion(confirmationCode: String) async throws -> DataDeletion?
}
