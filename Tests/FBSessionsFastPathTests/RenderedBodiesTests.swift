@testable import FBSessionsFastPath
@testable import FBSessionsCore
import Foundation
import Support
import Testing

/// ``RenderedBodies``: a kept body is reused only for an equal value, and the memo stays within its limit.
@Suite struct RenderedBodiesTests {
    @Test func aBodyIsReusedOnlyForAnEqualValue() {
        let bodies = RenderedBodies<String, String>(limit: 8)
        let renderCount = Locked(0)
        let render = { (value: String) -> [UInt8] in
            renderCount.withLock { $0 += 1 }
            return Array(value.utf8)
        }
        #expect(bodies.body("a", for: "open", render: render) == Array("open".utf8))
        #expect(bodies.body("a", for: "open", render: render) == Array("open".utf8))
        #expect(renderCount.withLock { $0 } == 1, "the second call reused the body")
        #expect(bodies.body("a", for: "closed", render: render) == Array("closed".utf8), "a changed value is rendered")
        #expect(bodies.body("b", for: "open", render: render) == Array("open".utf8))
        #expect(renderCount.withLock { $0 } == 3, "another key is rendered on its own")
        #expect(bodies.body("a", for: "open", render: render) == Array("open".utf8), "never the body of another value")
        #expect(renderCount.withLock { $0 } == 4)
    }

    @Test func itKeepsAtMostItsLimit() {
        let bodies = RenderedBodies<Int, Int>(limit: 4)
        for key in 0..<10 {
            _ = bodies.body(key, for: key) { [UInt8(truncatingIfNeeded: $0)] }
            #expect(bodies.count <= 4)
        }
        #expect(bodies.body(9, for: 9) { _ in [] } == [9], "the newest key is kept")
    }
}

/// ``OwnerList``, the owner's list the route keeps bodies for: equal exactly when it would render the same.
@Suite struct OwnerListTests {
    private static func session(_ id: String, slot: Int, active: Bool = false) -> Session {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        return Session(
            id: id, appID: "app_1", owner: "o", slot: slot, facebookUserID: "100\(slot)", state: .open,
            validatedAt: now, createdAt: now, updatedAt: now, active: active)
    }

    @Test func itIsEqualForTheSameStoredSessionsAndStates() {
        let stored = [Self.session("ses_a", slot: 1, active: true), Self.session("ses_b", slot: 2)]
        let first = OwnerList(stored: stored, states: [.open, .tokenLoaded])
        let again = OwnerList(stored: stored, states: [.open, .tokenLoaded])
        #expect(first == again)
        #expect(first != OwnerList(stored: stored, states: [.open, .open]), "a state that changed with time")
        var changed = stored
        changed[1].profileRefreshedAt = Date(timeIntervalSince1970: 1)
        #expect(first != OwnerList(stored: changed, states: [.open, .tokenLoaded]), "a stored field that changed")
        #expect(first == OwnerList(stored: Array(stored), states: [.open, .tokenLoaded]), "equal values, any storage")
    }

    @Test func itShowsEachSessionWithItsStateNow() {
        let stored = [Self.session("ses_a", slot: 1), Self.session("ses_b", slot: 2, active: true)]
        let list = OwnerList(stored: stored, states: [.tokenLoaded, .open])
        #expect(list.sessions.map(\.state) == [.tokenLoaded, .open])
        #expect(list.sessions.map(\.id) == ["ses_a", "ses_b"])
        #expect(list.stored.map(\.state) == [.open, .open], "the stored sessions are not changed")
        #expect(list.activeID == "ses_b")
    }
}

extension RenderedBodiesTests {
    /// An equal value in other storage replaces the kept one, so that the next comparison is by identity: after
    /// the cache's entry is filled again with equal contents, lists compare in constant time again.
    @Test func anEqualValueReplacesTheKeptOne() {
        final class Box: Equatable, Sendable {
            let text: String
            init(_ text: String) { self.text = text }
            static func == (lhs: Box, rhs: Box) -> Bool { lhs.text == rhs.text }
        }
        struct Held: Equatable, Sendable { let box: Box }
        let bodies = RenderedBodies<String, Held>(limit: 8)
        let first = Held(box: Box("list"))
        let refilled = Held(box: Box("list"))
        _ = bodies.body("o", for: first) { _ in Array("rendered".utf8) }
        #expect(bodies.body("o", for: refilled) { _ in [] } == Array("rendered".utf8), "an equal value reuses the body")
        #expect(bodies.keptValue("o")?.box === refilled.box, "and is kept in place of the old one")
    }
}
