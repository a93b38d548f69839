import FBSessionsCore
import Foundation
import Testing

/// `FBS_EXPIRY_WARNING` and the `data` of `session.action_required` and `session.expiring` (issue 39).
@Suite struct EventsBeforeUsersNoticeUnitTests {
    @Test func expiryWarningDefaultsToAWeekAndTakesWholeSecondsUpToNinetyDays() throws {
        #expect(try Settings.parse([:]).get().expiryWarning == 604_800)
        #expect(try Settings.parse(["FBS_EXPIRY_WARNING": "0"]).get().expiryWarning == 0)
        #expect(try Settings.parse(["FBS_EXPIRY_WARNING": "86400"]).get().expiryWarning == 86_400)
        #expect(try Settings.parse(["FBS_EXPIRY_WARNING": "7776000"]).get().expiryWarning == 7_776_000)
        #expect(Settings.documented.contains { $0.name == "FBS_EXPIRY_WARNING" && $0.defaultValue == "604800" })
    }

    @Test func aBadExpiryWarningIsRefusedWithAClearMessage() {
        for bad in ["-1", "abc", "7776001", "1.5", "1e9", " 60", "604800s", "99999999999999999999999"] {
            guard case .failure(let error) = Settings.parse(["FBS_EXPIRY_WARNING": bad]) else {
                Issue.record("FBS_EXPIRY_WARNING=\(bad) was accepted")
                continue
            }
            #expect(error.problems == ["FBS_EXPIRY_WARNING: expected a whole number in 0...7776000"], "\(bad)")
        }
        // Reported with the others, not instead of them.
        guard case .failure(let error) = Settings.parse(["FBS_EXPIRY_WARNING": "soon", "FBS_MAX_SLOTS": "0"]) else {
            Issue.record("accepted invalid settings")
            return
        }
        #expect(Set(error.problems.map { String($0.prefix { $0 != ":" }) }) == ["FBS_EXPIRY_WARNING", "FBS_MAX_SLOTS"])
    }

    @Test func theEventsCarryTheirDataAsTheContractNamesIt() {
        let deadline = Date(timeIntervalSince1970: 1_796_000_000.125)
        let expiring = SessionEvent.expiring(.dataAccessExpiresAt, at: deadline, sessionID: "ses_x", owner: "o")
        #expect(expiring.kind.rawValue == "session.expiring")
        #expect(expiring.dataJSON == #"{"at":"2026-11-30T00:53:20.125Z","field":"data_access_expires_at"}"#)
        let token = SessionEvent.expiring(.expiresAt, at: deadline, sessionID: "ses_x", owner: "o")
        #expect(token.dataJSON == #"{"at":"2026-11-30T00:53:20.125Z","field":"expires_at"}"#)
        let action = SessionEvent.actionRequired(.reauthorize, reason: .dataAccessExpired, sessionID: "ses_x", owner: "o")
        #expect(action.kind.rawValue == "session.action_required")
        #expect(action.dataJSON == #"{"action_required":"reauthorize","reason":"data_access_expired"}"#)
        #expect(ActionReason.allCases.map(\.rawValue) == [
            "data_access_expired", "permission_declined", "permission_expired", "permission_missing",
        ])
        #expect(ActionReason.usual(for: .reauthorize) == .dataAccessExpired)
        #expect(ActionReason.usual(for: .rerequest) == .permissionDeclined)
    }
}
