import FBSessionsCore
import FBSessionsStorage
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The audit log's entries of admin commands (`app.added`, `key.revoked`, `keys.reencrypted`, ...), each with the
/// OS user who ran the command (docs/api-contract.md, "Audit log").
///
/// An entry is appended once the command's change is made (the stores change and the log records in two
/// statements): a command whose entry cannot be written fails with exit status 1 and says so, so that the operator
/// knows the change was made without its entry.
enum AuditTrail {
    /// The real OS user running the command: the name of the effective uid in the password database
    /// (`getpwuid(geteuid())`), not `$USER`, which the caller sets at will; `uid N` when the uid has no name.
    static var osUser: String {
        let uid = geteuid()
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name {
            return String(cString: name)
        }
        return "uid \(uid)"
    }

    /// The actor of every admin command: `{"kind": "cli", "user": <OS user>}`.
    static var actor: AuditActor { .cli(user: osUser) }

    /// Appends an admin command's entry.
    ///
    /// - Parameters:
    ///   - log: The audit log.
    ///   - action: What the command did.
    ///   - appID: The app it concerns; nil for the whole service.
    ///   - target: On what: ids and names, never a secret.
    /// - Throws: ``CommandFailure`` when the entry cannot be written (the change itself was made).
    static func record(
        _ log: any AuditLog, _ action: AuditAction, appID: String?, target: [String: AuditValue]
    ) async throws {
        do {
            try await log.append(AuditDraft(appID: appID, action: action, actor: actor, target: target))
        } catch {
            throw CommandFailure("done, but the audit log could not record it (\(action.rawValue)); check the database")
        }
    }
}
