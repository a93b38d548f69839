/// Why a login URL or a code login was refused. Nothing was stored, and no session changed.
public enum LoginFlowError: Error, Sendable, Equatable {
    /// The state is malformed, was never issued, or belongs to another app.
    case invalidState
    /// The state was issued for another owner of this app (it stays usable by its own owner).
    case stateOwnerMismatch
    /// The state was used already.
    case stateUsed
    /// The state expired (10 minutes) before it was used.
    case stateExpired
    /// The redirect URI is not exactly one of the app's registered URIs.
    case redirectURINotAllowed
    /// The login asked for a slot other than the one its login URL was made for.
    case slotMismatch(bound: Int)
    /// Facebook refused the code (used, expired, malformed or from another dialog).
    case codeRejected(GraphErrorDetail)
    /// A `reauthenticate` login came back with another `auth_nonce` than the one its URL carried.
    case reauthenticationUnconfirmed
    /// A `reauthenticate` login (adding an account) returned a Facebook user who already has a live session
    /// for this owner; nothing was changed.
    case alreadyLinked(sessionID: String, slot: Int)
}
