/// Why a session closed: the contract's `closed_reason` (docs/api-contract.md, "States" and "Reasons").
///
/// The raw values are the wire names. A closed session keeps its reason as a tombstone so the backend learns why.
public enum ClosedReason: String, Sendable, Hashable, CaseIterable, Codable {
    /// The backend logged the session out.
    case loggedOut = "logged_out"
    /// Graph said the token expired (190/463).
    case tokenExpired = "token_expired"
    /// Graph said the token is invalid (190/467, 190 without a subcode, 102) or it cannot be parsed.
    case tokenInvalid = "token_invalid"
    /// The user changed their password or Facebook reset the session (190/460).
    case passwordChanged = "password_changed"
    /// The user removed the app (190/458, or the deauthorize callback).
    case appRemoved = "app_removed"
    /// The account is checkpointed; the user must fix it on facebook.com (190/459).
    case checkpoint
    /// The user must confirm their account on facebook.com (190/464).
    case userUnconfirmed = "user_unconfirmed"
    /// The session was invalidated explicitly through an API call (190/466).
    case revoked
    /// Another Facebook user took the slot.
    case replaced
    /// A data-deletion request from Facebook erased the session.
    case dataDeletion = "data_deletion"

    /// The reason a Graph authentication error closes a session with, or `nil` when it does not close one.
    ///
    /// Codes 190 and 102 are the authentication family (docs/facebook-graph.md §7.2). Their subcodes map as
    /// docs/api-contract.md says ("Reasons"): 458 `app_removed`, 459 `checkpoint`, 460 `password_changed`, 463
    /// `token_expired`, 464 `user_unconfirmed`, 466 `revoked`; 467, no subcode and any other subcode `token_invalid`.
    /// Subcode 493 (data-access expiry) keeps the session, so it gives `nil`, as does every other code.
    /// - Parameters:
    ///   - code: Graph's `code`.
    ///   - subcode: Graph's `error_subcode` (`subcode` inside `debug_token`), if any.
    public init?(graphCode code: Int, subcode: Int?) {
        guard code == 190 || code == 102, subcode != GraphError.dataAccessExpiredSubcode else {
            return nil
        }
        switch subcode {
        case 458: self = .appRemoved
        case 459: self = .checkpoint
        case 460: self = .passwordChanged
        case 463: self = .tokenExpired
        case 464: self = .userUnconfirmed
        case 466: self = .revoked
        default: self = .tokenInvalid
        }
    }
}
