import FBSessionsCore
import Foundation
import Testing

/// The audit log's pieces that need no database: its settings, its cursor, the JSON of its entries.
@Suite struct AuditUnitTests {
    @Test func retentionDefaultsToAYearAndBadValuesAreRefusedAtStart() throws {
        let defaults = try Settings.parse([:]).get()
        #expect(defaults.auditRetentionDays == 365 && defaults.auditTokenReads)
        #expect(try Settings.parse(["FBS_AUDIT_RETENTION": "30"]).get().auditRetentionDays == 30)
        #expect(try Settings.parse(["FBS_AUDIT_RETENTION": "1"]).get().auditRetentionDays == 1)
        for bad in ["0", "-1", "abc", "36501", "1.5", "7d", " 30", "99999999999999999999"] {
            guard case .failure(let error) = Settings.parse(["FBS_AUDIT_RETENTION": bad]) else {
                Issue.record("FBS_AUDIT_RETENTION=\(bad) was accepted")
                continue
            }
            #expect(error.problems == ["FBS_AUDIT_RETENTION: expected a whole number in 1...36500"], "\(bad)")
        }
    }

    @Test func tokenReadsAreAuditedUnlessTheBenchTurnsThemOffLoudly() throws {
        let off = try Settings.parse(["FBS_AUDIT_TOKEN_READS": "off"]).get()
        #expect(!off.auditTokenReads && off.warnings.contains { $0.hasPrefix("FBS_AUDIT_TOKEN_READS=off") })
        #expect(try Settings.parse(["FBS_AUDIT_TOKEN_READS": "on"]).get().auditTokenReads)
        for bad in ["false", "no", "0", "OFF"] {
            guard case .failure(let error) = Settings.parse(["FBS_AUDIT_TOKEN_READS": bad]) else {
                Issue.record("FBS_AUDIT_TOKEN_READS=\(bad) was accepted")
                continue
            }
            #expect(error.problems.first?.hasPrefix("FBS_AUDIT_TOKEN_READS") == true)
        }
        #expect(!Settings.documented.contains { $0.name == "FBS_AUDIT_TOKEN_READS" }, "the bench's baseline only")
    }

    @Test func cursorsRoundTripAndRefuseWhatTheyDidNotIssue() throws {
        for cursor in [
            AuditCursor.start, AuditCursor(transactionID: 760, entryID: 312),
            AuditCursor(transactionID: .max, entryID: .max),
        ] {
            #expect(try AuditCursor(parsing: cursor.text) == cursor)
            #expect(cursor.text.utf8.count == 23)
            #expect(cursor.text.wholeMatch(of: #/A[g-v][A-Za-z0-9_-]{10}[A-Za-f][A-Za-z0-9_-]{9}[AEIMQUYcgkosw048]/#) != nil)
        }
        #expect(AuditCursor(transactionID: 760, entryID: 312).text == "AgAAAAAAAAL4AAAAAAAAATg", "openapi.yaml's example")
        let eventCursor = EventCursor(transactionID: 760, eventID: 312).text
        for bad in ["", "x", "garbage!", eventCursor, String(repeating: "A", count: 65), "AgAAAAAAAAL4AAAAAAAAAT",
                    "AgAAAAAAAAL4gAAAAAAAATg"] {
            #expect(throws: AuditCursorError.self, "\(bad)") { try AuditCursor(parsing: bad) }
        }
        #expect(AuditCursorError().description == "after is not a cursor from this service's next_cursor.")
    }

    @Test func entriesAndTargetsAreJSONWithSortedKeys() throws {
        let draft = AuditDraft(
            appID: "app_1", action: .keyAdded, actor: .cli(user: "ops \"root\""),
            target: ["kind": .string("key"), "id": .string("k1"), "scopes": .strings(["sessions", "audit"]),
                     "moved": .int(3), "host": .null])
        #expect(draft.targetJSON == #"{"host":null,"id":"k1","kind":"key","moved":3,"scopes":["sessions","audit"]}"#)
        #expect(draft.actor.json == #"{"kind":"cli","user":"ops \"root\""}"#)
        #expect(AuditActor.key(id: "k9").json == #"{"id":"k9","kind":"key"}"#)
        let entry = AuditEntry(
            id: 7, at: Date(timeIntervalSince1970: 0), action: "token.read", actor: AuditActor.key(id: "k9").json,
            target: #"{"id":"ses_1","kind":"session"}"#, requestID: nil, cursor: .start)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(entry.json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["id", "at", "action", "actor", "target", "request_id"])
        #expect(object["id"] as? String == "7" && object["request_id"] is NSNull)
        #expect(Set(AuditAction.allCases.map(\.rawValue)) == [
            "token.read", "session.revoked", "app.added", "app.updated", "key.added", "key.updated", "key.revoked",
            "webhook.added", "webhook.removed", "keys.reencrypted",
        ])
        #expect(!Scope.defaults.contains(.audit) && Scope(rawValue: "audit") == .audit)
    }
}
