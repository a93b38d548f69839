import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Testing
import TestSupport

/// Every ``Profile/Field`` is stored in `sessions.profile` under its JSON name and read back out of a session row
/// (the select list and the decoding come from the same table); a field the profile lacks is left out of the
/// column and reads back as nil.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct ProfileStorageTests {
    @Test func everyFieldIsStoredUnderItsNameAndReadBack() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        var full = Profile(id: "10000000000000042")
        for field in Profile.Field.allCases where field != .id { full[field] = "\(field.rawValue) é \"'\\ /" }
        for (owner, profile) in [("o1", full), ("o2", Profile(id: "10000000000000043"))] {
            let stored = try await harness.store.storeLogin(
                LoginRecord(
                    appID: harness.app.id, owner: owner, requestedSlot: nil, activate: true, maxSlots: 8,
                    facebookUserID: profile.id, token: SecretsTranscript.noted("token", "EAAB" + owner + "-profile-test"),
                    tokenExpiresAt: nil, dataAccessExpiresAt: nil,
                    permissions: GraphPermissions(granted: ["public_profile"], declined: [], expired: []),
                    profile: profile, action: nil))
            #expect(stored.session.profile == profile)
            #expect(try await harness.store.session(id: stored.session.id, appID: harness.app.id)?.profile == profile)
            let row = try #require(
                try await harness.rows("SELECT profile::text AS profile FROM sessions WHERE id = \(stored.session.id)").first)
            let column = try JSONSerialization.jsonObject(with: Data(try row.decode("profile", as: String.self).utf8))
            let expected = Dictionary(
                uniqueKeysWithValues: Profile.Field.allCases.compactMap { field in profile[field].map { (field.rawValue, $0) } })
            #expect(column as? [String: String] == expected)
        }
    }
}
