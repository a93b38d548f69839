import Crypto
import FBSessionsCore
import Foundation
import Testing

/// Cursors, the event JSON, signatures and the waiter registry, without a database.
@Suite struct EventUnitTests {
    @Test func cursorsRoundTripAndRejectGarbage() throws {
        for cursor in [
            EventCursor.start, EventCursor(transactionID: 751, eventID: 42),
            EventCursor(transactionID: UInt64.max, eventID: Int64.max),
        ] {
            #expect(try EventCursor(parsing: cursor.text) == cursor)
            #expect(
                cursor.text.count == 23 && cursor.text.allSatisfy { $0.isLetter || $0.isNumber || "-_".contains($0) })
        }
        let valid = EventCursor(transactionID: 9, eventID: 3).text
        var wrongVersion = Base64URL.decode(valid) ?? []
        wrongVersion[0] = 2
        var negative = Base64URL.decode(valid) ?? []
        negative[9] = 0x80
        for garbage in [
            "", "x", "AAAA", valid + "A", String(valid.dropLast()), valid.replacingOccurrences(of: "A", with: "+"),
            Base64URL.encode(wrongVersion), Base64URL.encode(negative), String(repeating: "A", count: 1000),
            "AQAAAAAAAAAJAAAAAAAAAA M", "AQAAAAAAAAAJAAAAAAAAAAM==",
        ] where garbage != valid {
            #expect(throws: EventCursorError.self, "\(garbage)") { try EventCursor(parsing: garbage) }
        }
        #expect(!EventCursorError().description.contains(valid))
    }

    @Test func feedEventsRenderTheContractShape() throws {
        let event = FeedEvent(
            id: 12, type: "session.closed", sessionID: "ses_1", owner: "quote\"and\\slash\n",
            at: Date(timeIntervalSince1970: 1_764_491_550.123), data: Array(#"{"reason": "logged_out"}"#.utf8),
            cursor: EventCursor(transactionID: 5, eventID: 12))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json.utf8)) as? [String: Any])
        #expect(object["id"] as? String == "12" && object["owner"] as? String == "quote\"and\\slash\n")
        #expect(object["at"] as? String == "2025-11-30T08:32:30.123Z")
        #expect((object["data"] as? [String: Any])?["reason"] as? String == "logged_out")
        let bare = FeedEvent(id: 1, type: "t", sessionID: nil, owner: nil, at: Date(), data: [], cursor: .start)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bare.json.utf8)) as? [String: Any])
        #expect(parsed["owner"] is NSNull && parsed["session_id"] is NSNull && parsed["data"] is [String: Any])
    }

    @Test func signaturesVerifyAndExpire() {
        let body = Array(#"{"id":"1"}"#.utf8)
        let now = Date()
        let header = WebhookSignature.header(secret: "whsec_k", timestamp: Int(now.timeIntervalSince1970), body: body)
        #expect(WebhookSignature.isValid(header, secret: "whsec_k", body: body, now: now))
        #expect(!WebhookSignature.isValid(header, secret: "whsec_k", body: body, now: now.addingTimeInterval(301)))
        #expect(!WebhookSignature.isValid(header, secret: "whsec_j", body: body, now: now))
        #expect(!WebhookSignature.isValid("t=1,v1=zz", secret: "whsec_k", body: body, now: now))
        // HMAC-SHA256("key", "1." + body) computed independently.
        let expected = Hex.encode(HMACSHA256.authenticationCode(for: Array("100.".utf8) + body, key: Array("key".utf8)))
        #expect(WebhookSignature.header(secret: "key", timestamp: 100, body: body) == "t=100,v1=\(expected)")
    }

    @Test func waitersWakeOnNotifyTimeOutAndCountGenerations() async throws {
        let waiters = EventWaiters(maxWaiters: 2)
        let before = waiters.generation(appID: "a")
        waiters.notify(appID: "a")
        #expect(
            try await waiters.wait(appID: "a", after: before, timeout: .seconds(10)), "a missed notify returns at once")
        let now = waiters.generation(appID: "a")
        let timedOut = try await waiters.wait(appID: "a", after: now, timeout: .milliseconds(50))
        #expect(!timedOut && waiters.count == 0)
        let woken = Task { try await waiters.wait(appID: "a", after: now, timeout: .seconds(10)) }
        let other = Task {
            try await waiters.wait(appID: "b", after: waiters.generation(appID: "b"), timeout: .seconds(10))
        }
        while waiters.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        await #expect(throws: EventWaitersError.self) {
            try await waiters.wait(appID: "c", after: waiters.generation(appID: "c"), timeout: .seconds(1))
        }
        waiters.notify(appID: "a")
        #expect(try await woken.value)
        #expect(waiters.count == 1, "b's reader still waits")
        waiters.notifyAll()
        #expect(try await other.value)
        #expect(waiters.count == 0)
    }

    @Test func shutdownAnswersEveryReaderAndLaterWaitsAtOnce() async throws {
        let waiters = EventWaiters()
        let generation = waiters.generation(appID: "a")
        let reader = Task { try await waiters.wait(appID: "a", after: generation, timeout: .seconds(30)) }
        while waiters.count < 1 { try await Task.sleep(for: .milliseconds(5)) }
        let began = ContinuousClock.now
        waiters.shutdown()
        #expect(try await reader.value == false)
        let later = try await waiters.wait(appID: "a", after: waiters.generation(appID: "a"), timeout: .seconds(30))
        #expect(!later && waiters.isShutDown && ContinuousClock.now - began < .seconds(3))
    }
}
