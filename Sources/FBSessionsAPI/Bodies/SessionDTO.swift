import FBSessionsCore
import Foundation

/// A session on the wire (docs/api-contract.md, "Session JSON"). Never carries the token itself.
///
/// The body is described once, by the writer in SessionDTO+JSON.swift (``jsonBytes``); the profile's part of it
/// comes from ``Profile/Field``.
struct SessionDTO {
    let session: Session
    let validation: SessionService.Validation
    var revocation: SessionService.Revocation?
}
