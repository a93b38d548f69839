@testable import FBSessionsCore
@testable import FBSessionsStorage
import Foundation
import Postgres
import Support
import Testing

/// The state machines of the exact cache (docs/caching.md, "Exact caches across instances"), without a database: the fence
/// queue, the invalidation log's fill rule, the CLOCK eviction, and the cache's handling of listener signals.
struct FenceQueueTests {
    @Test func aLoneRequestSendsAFenceAndPassesWhenItComesBack() {
        var queue = FenceQueue()
        #expect(queue.join(1) == .init(send: 1))
        #expect(queue.returned(1).expected == false, "not sent yet: a fence cannot come back before it is sent")
        #expect(queue.sending(1) == true)
        #expect(queue.returned(1) == (true, .init(passed: [1])))
        #expect(queue.inFlight == nil && queue.waiting == 0)
    }

    @Test func aRequestJoiningWhileAFenceIsScheduledRidesOnIt() {
        var queue = FenceQueue()
        #expect(queue.join(1) == .init(send: 1))
        #expect(queue.join(2) == .init(), "fence 1 is not sent yet: it will be sent after 2 arrived")
        #expect(queue.sending(1) == true)
        #expect(queue.returned(1) == (true, .init(passed: [1, 2])))
    }

    @Test func aRequestJoiningWhileAFenceIsInFlightWaitsForTheNextOne() {
        var queue = FenceQueue()
        _ = queue.join(1)
        _ = queue.sending(1)
        #expect(queue.join(2) == .init(), "no second fence while one is in flight")
        #expect(queue.join(3) == .init())
        // Fence 1 may have been sent before 2 and 3 arrived: it answers 1 only, and fence 2 is scheduled for them.
        #expect(queue.returned(1) == (true, .init(send: 2, passed: [1])))
        #expect(queue.join(4) == .init(), "4 rides on fence 2, scheduled and not yet sent")
        #expect(queue.sending(2) == true)
        #expect(queue.join(5) == .init())
        #expect(queue.returned(2) == (true, .init(send: 3, passed: [2, 3, 4])))
        _ = queue.sending(3)
        #expect(queue.returned(3) == (true, .init(passed: [5])))
        #expect(queue.waiting == 0)
    }

    @Test func staleOrUnknownFencesAnswerNobody() {
        var queue = FenceQueue()
        _ = queue.join(1)
        _ = queue.sending(1)
        #expect(queue.returned(7).expected == false)
        #expect(queue.returned(0).expected == false)
        #expect(queue.sending(1) == false, "a fence is sent once")
        #expect(queue.waiting == 1)
    }

    @Test func aLostFenceFailsEveryWaiterAndALateReturnIsIgnored() {
        var queue = FenceQueue()
        _ = queue.join(1)
        _ = queue.sending(1)
        _ = queue.join(2)
        #expect(queue.lost(99) == .init(), "losing another token changes nothing")
        #expect(queue.lost(1) == .init(failed: [1, 2]))
        #expect(queue.returned(1).expected == false)
        #expect(queue.join(3) == .init(send: 2), "the next request sends a new fence")
    }

    @Test func aScheduledFenceLostBeforeItIsSentIsNeverSent() {
        var queue = FenceQueue()
        _ = queue.join(1)
        #expect(queue.lost() == .init(failed: [1]))
        #expect(queue.sending(1) == false)
    }

    @Test func aProbeSendsOnlyWhenNoFenceIsInFlight() {
        var queue = FenceQueue()
        #expect(queue.probe() == .init(send: 1))
        #expect(queue.probe() == .init())
        _ = queue.sending(1)
        #expect(queue.join(5) == .init())
        #expect(queue.returned(1) == (true, .init(send: 2)), "the waiter joined after fence 1 was sent")
    }
}

struct InvalidationLogTests {
    /// The event listener's number, and two event loops' connections.
    private let listener = 0, loopA = 1, loopB = 2

    private func currentLog() -> InvalidationLog {
        var log = InvalidationLog(retained: 4)
        _ = log.fenceReturned(on: listener)
        return log
    }

    @Test func nothingFillsBeforeAFenceCameBack() {
        let log = InvalidationLog()
        #expect(!log.mayFill("sA", since: log.mark()))
    }

    @Test func aFillIsRefusedWhenItsTokenWasAnnouncedSinceTheReadBegan() {
        var log = currentLog()
        let mark = log.mark()
        log.announce("sB")
        #expect(log.mayFill("sA", since: mark), "another entry's announcement does not matter")
        log.announce("sA")
        #expect(!log.mayFill("sA", since: mark))
        #expect(log.mayFill("sA", since: log.mark()), "a read that began after the announcement may fill")
    }

    @Test func aBrokenStreamRefusesEveryReadBegunBefore() {
        var log = currentLog()
        let mark = log.mark()
        log.breakStream()
        #expect(!log.mayFill("sA", since: mark))
        #expect(log.mayFill("sA", since: log.mark()), "drop-everything keeps the listener current")
        log.connectionLost(listener)
        #expect(!log.mayFill("sA", since: log.mark()), "a lost connection is not current until a fence returns")
        let again = log.fenceReturned(on: listener)
        #expect(again, "current again")
        #expect(log.mayFill("sA", since: log.mark()))
    }

    @Test func readsOlderThanTheRetainedAnnouncementsMayNotFill() {
        var log = currentLog()
        let old = log.mark()
        for index in 0..<5 { log.announce("s\(index)") }  // One more than the 4 retained.
        #expect(!log.mayFill("sUnrelated", since: old), "what was forgotten might have named it")
        let recent = log.mark()
        log.announce("s9")
        #expect(log.mayFill("sUnrelated", since: recent))
        #expect(!log.mayFill("s9", since: recent))
    }

    @Test func aTimedOutFenceStopsFillsUntilTheNextOne() {
        var log = currentLog()
        log.fenceTimedOut(on: listener)
        #expect(!log.mayFill("sA", since: log.mark()))
        _ = log.fenceReturned(on: listener)
        #expect(log.mayFill("sA", since: log.mark()))
    }

    /// A connection that becomes current began to listen lately: what other connections' reads began before may
    /// hold a change announced to nobody that connection's requests rely on, so the stream breaks. Later fences on a
    /// connection already current break nothing.
    @Test func aConnectionBecomingCurrentRefusesReadsBegunBefore() {
        var log = InvalidationLog(retained: 4)
        let first = log.fenceReturned(on: loopA)
        #expect(first)
        let before = log.mark()
        #expect(log.isCurrent(loopA) && !log.isCurrent(loopB))
        let second = log.fenceReturned(on: loopB)
        #expect(second, "loop B becomes current")
        #expect(!log.mayFill("sA", since: before), "read begun before loop B listened")
        let after = log.mark()
        let repeated = [log.fenceReturned(on: loopB), log.fenceReturned(on: loopA)]
        #expect(repeated == [false, false], "already current: no break")
        #expect(log.mayFill("sA", since: after))
    }

    /// Any connection lost breaks the stream, whichever others stay current; reads may fill again while one of them is.
    @Test func aLostConnectionBreaksTheStreamAndTheOthersStayCurrent() {
        var log = InvalidationLog(retained: 4)
        _ = log.fenceReturned(on: loopA)
        _ = log.fenceReturned(on: loopB)
        let mark = log.mark()
        log.connectionLost(loopB)
        #expect(!log.mayFill("sA", since: mark))
        #expect(log.isCurrent(loopA) && !log.isCurrent(loopB))
        #expect(log.mayFill("sA", since: log.mark()), "loop A is still current")
        log.fenceTimedOut(on: loopA)
        #expect(!log.mayFill("sA", since: log.mark()), "no connection current: nothing fills")
    }
}

struct ClockCacheTests {
    @Test func valuesStayWithinTheCapacity() {
        var cache = ClockCache<Int, String>(capacity: 100)
        for key in 0..<50 { cache.set("v\(key)", for: key, bytes: 10) }
        #expect(cache.bytes <= 100 && cache.count == 10)
        cache.set("huge", for: 999, bytes: 101)
        #expect(cache.value(for: 999) == nil, "a value larger than the capacity is not kept")
        cache.remove(9)
        #expect(cache.value(for: 9) == nil && cache.bytes == 90)
        cache.removeAll()
        #expect(cache.count == 0 && cache.bytes == 0)
    }

    @Test func hotEntriesSurviveAScanOfColdOnes() {
        var cache = ClockCache<Int, Int>(capacity: 10)
        for key in 0..<10 { cache.set(key, for: key, bytes: 1) }
        for cold in 100..<400 {
            for hot in 0..<3 { #expect(cache.value(for: hot) == hot, "hot entry \(hot) evicted at \(cold)") }
            cache.set(cold, for: cold, bytes: 1)
        }
        #expect(cache.count == 10)
    }

    /// Uses made outside the cache (`takeUse`) protect an entry as a hit does, and every value that leaves, however
    /// it leaves, is handed to `removed` once.
    @Test func valuesUsedOutsideTheCacheSurviveAndLeavingValuesAreReported() {
        final class Box { var used = false; var removed = 0 }
        var boxes: [Int: Box] = [:]
        for key in 0..<400 { boxes[key] = Box() }
        var cache = ClockCache<Int, Box>(
            capacity: 10, removed: { $0.removed += 1 },
            takeUse: { box in
                defer { box.used = false }
                return box.used
            })
        for key in 0..<10 { cache.set(boxes[key]!, for: key, bytes: 1) }
        for cold in 100..<400 {
            for hot in 0..<3 { boxes[hot]!.used = true }  // Read where the owner keeps it, not through the cache.
            for _ in 0..<2 { cache.set(boxes[cold]!, for: cold, bytes: 1) }
            #expect((0..<3).allSatisfy { cache.contains($0) }, "a used entry evicted at \(cold)")
        }
        cache.set(Box(), for: 0, bytes: 1)
        #expect(boxes[0]!.removed == 1, "replaced")
        cache.update(1, bytes: 1) { box in
            box = Box()
            return true
        }
        #expect(boxes[1]!.removed == 1, "changed in place")
        cache.remove(2)
        #expect(boxes[2]!.removed == 1, "removed")
        let held = (100..<400).filter { cache.contains($0) }
        cache.removeAll()
        #expect(held.allSatisfy { boxes[$0]!.removed == 1 }, "emptied out")
        #expect((100..<400).allSatisfy { boxes[$0]!.removed <= 1 }, "and each reported once")
        let evicted = (100..<400).filter { !held.contains($0) && boxes[$0]!.removed == 1 }
        #expect(evicted.count > 250, "evicted ones reported too: \(evicted.count)")
    }

    @Test func aFullCacheTakesANewKeyOnlyOnItsSecondTry() {
        var cache = ClockCache<Int, Int>(capacity: 4)
        for key in 0..<4 {
            let stored = cache.set(key, for: key, bytes: 1)
            #expect(stored, "room left: \(key) is stored at once")
        }
        let first = cache.set(10, for: 10, bytes: 1)
        #expect(!first && !cache.contains(10), "full: a new key is refused once")
        let kept = (0..<4).allSatisfy { cache.contains($0) }
        #expect(cache.count == 4 && kept, "and evicts nothing")
        let second = cache.set(10, for: 10, bytes: 1)
        #expect(second && cache.contains(10), "its second try gets in")
        #expect(cache.count == 4 && cache.bytes == 4)
        let replaced = cache.set(-1, for: 10, bytes: 1)
        let value = cache.value(for: 10)
        #expect(replaced && value == -1, "a held key is replaced at once")
        let others = [cache.set(11, for: 11, bytes: 1), cache.set(12, for: 12, bytes: 1)]
        #expect(others == [false, false])
        let again = cache.set(11, for: 11, bytes: 1)
        #expect(again, "a refusal is remembered past other refusals")
        cache.removeAll()
        for key in 0..<4 { cache.set(key, for: key, bytes: 1) }
        let afterEmptying = cache.set(12, for: 12, bytes: 1)
        #expect(!afterEmptying, "emptying the cache forgets the refusals")
    }

    @Test func anUpdateChangesAValueInPlaceAndEvictsOthersToFit() {
        var cache = ClockCache<Int, String>(capacity: 100)
        for key in 0..<4 { cache.set("v\(key)", for: key, bytes: 20) }
        let declined = cache.update(0, bytes: 90) { _ in false }
        #expect(!declined && cache.value(for: 0) == "v0" && cache.bytes == 80, "a declined change changes nothing")
        let missing = cache.update(7, bytes: 10) { $0 = "x"; return true }
        #expect(!missing && !cache.contains(7), "a key not held is not added")
        let tooLarge = cache.update(0, bytes: 101) { $0 = "x"; return true }
        #expect(!tooLarge && cache.value(for: 0) == "v0", "nor is a value larger than the capacity kept")
        let grown = cache.update(0, bytes: 70) { $0 += "+"; return true }
        #expect(grown && cache.value(for: 0) == "v0+", "the value changed in place")
        #expect(cache.bytes <= 100 && cache.contains(0), "others were evicted to fit, never the updated key")
        #expect(cache.count == 2 && cache.bytes == 90)
        let shrunk = cache.update(0, bytes: 30) { _ in true }
        #expect(shrunk && cache.bytes == 50, "a smaller value frees its bytes")
    }

    @Test func aReadNearAPlaceTakesOnlyTheKeyHeldThereNow() throws {
        var cache = ClockCache<Int, String>(capacity: 100)
        for key in 0..<4 { cache.set("v\(key)", for: key, bytes: 10) }
        let place = try #require(cache.position(of: 2))
        #expect(cache.value(for: 2, near: place) == "v2")
        #expect(cache.value(for: 3, near: place) == "v3", "another key's place: searched, found where it is")
        cache.remove(2)
        #expect(cache.position(of: 2) == nil)
        cache.set("v5", for: 5, bytes: 10)
        #expect(cache.position(of: 5) == place, "the freed slot is reused")
        #expect(cache.value(for: 2, near: place) == nil, "its old place holds another key now")
        #expect(cache.value(for: 5, near: place) == "v5")
        cache.set("v2 again", for: 2, bytes: 10)
        #expect(cache.position(of: 2) != place)
        #expect(cache.value(for: 2, near: place) == "v2 again", "held elsewhere now: found by the search")
        #expect(cache.value(for: 2, near: 1_000) == "v2 again" && cache.value(for: 2, near: -1) == "v2 again")
        cache.removeAll()
        #expect(cache.value(for: 5, near: place) == nil, "emptied")
        cache.set("v9", for: 9, bytes: 10)
        #expect(cache.value(for: 5, near: cache.position(of: 9)) == nil, "a place refilled from empty holds its own key")
    }

    @Test func aScanOfKeysReadOnceEvictsAlmostNothing() {
        var cache = ClockCache<Int, Int>(capacity: 1000)
        for key in 0..<1000 { cache.set(key, for: key, bytes: 1) }
        var stored = 0
        for key in 1000..<101_000 where cache.set(key, for: key, bytes: 1) { stored += 1 }
        let survivors = (0..<1000).filter { cache.contains($0) }.count
        #expect(stored < 100, "\(stored) of 100,000 keys read once were stored")
        #expect(survivors > 900, "\(survivors) of the first 1,000 entries are left")
    }
}

struct ExactCacheSignalTests {
    private func session(_ id: String, app: String = "app_1") -> Session {
        Self.session(id, app: app)
    }

    private static func session(_ id: String, app: String = "app_1") -> Session {
        Session(
            id: id, appID: app, owner: "alice", slot: 0, facebookUserID: "10", state: .open, createdAt: Date(),
            updatedAt: Date(), active: true)
    }

    /// A cache whose fences come back through `handle` when the test says so.
    private final class Fences: Sendable {
        private let sent = Locked<[String]>([])
        func send(_ token: String) { sent.withLock { $0.append(token) } }
        var last: String? { sent.withLock { $0.last } }
        var count: Int { sent.withLock { $0.count } }
    }

    @Test func servesOnlyAfterAFenceAndForgetsWhatIsAnnouncedOrLost() async {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .seconds(30))
        let fences = Fences()
        #expect(await cache.fence() == false, "not attached to a listener")
        cache.attach(sendFence: fences.send)
        guard let probe = fences.last else {
            Issue.record("attaching sends a probe fence")
            return
        }
        #expect(await cache.fence() == false, "not current before a fence came back")
        cache.handle(.fence(token: probe))

        let mark = cache.mark()
        cache.fill(session("ses_a"), since: mark)
        cache.fillLiveKey("k1", since: mark)
        async let passed = cache.fence()
        while fences.count < 2 { await Task.yield() }
        cache.handle(.fence(token: fences.last!))
        #expect(await passed)
        #expect(cache.session(id: "ses_a", appID: "app_1")?.id == "ses_a")
        #expect(cache.session(id: "ses_a", appID: "app_2") == nil, "another app's request never gets it")
        #expect(cache.isLiveKey("k1"))

        cache.handle(.notification(channel: ExactCache.changeChannel, payload: "sses_a,kk1"))  // Tokens are "s" + session id, "k" + key id.
        #expect(cache.session(id: "ses_a", appID: "app_1") == nil && !cache.isLiveKey("k1"))

        let before = cache.mark()
        cache.handle(.notification(channel: ExactCache.changeChannel, payload: "sses_b"))
        cache.fill(session("ses_b"), since: before)
        #expect(cache.session(id: "ses_b", appID: "app_1") == nil, "announced while it was being read")
        cache.fill(session("ses_c"), since: cache.mark())
        #expect(cache.session(id: "ses_c", appID: "app_1") != nil)

        async let lost = cache.fence()
        while fences.count < 3 { await Task.yield() }
        cache.handle(.disconnected)
        #expect(await lost == false, "a lost connection fails the waiting requests")
        #expect(cache.session(id: "ses_c", appID: "app_1") == nil, "and empties the cache")
        #expect(cache.currentStatistics.refusedFills == 1)
    }

    /// A body rendered from a cached session is kept beside it only while the cache holds that very session, and
    /// goes with it.
    @Test func aRenderedBodyStaysOnlyWithTheSessionItWasRenderedFrom() async throws {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .seconds(30))
        let fences = Fences()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        let stored = session("ses_a")
        cache.fill(stored, since: cache.mark())
        let bytesBefore = cache.guarded.withLock { $0.entries.bytes }
        let read = try #require(cache.session(id: "ses_a", appID: "app_1", hint: .unknown))
        #expect(read.rendered == nil && read.session == stored)

        cache.keepRendered(RenderedBody(shownState: .open, body: Array("copy".utf8)), from: HeldSession(stored))
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: .unknown)?.rendered == nil, "not from the entry held, though equal")
        #expect(cache.guarded.withLock { $0.entries.bytes } == bytesBefore)

        let body = Array(#"{"id":"ses_a"}"#.utf8)
        cache.keepRendered(RenderedBody(shownState: .tokenLoaded, body: body), from: read)
        let held = cache.session(id: "ses_a", appID: "app_1", hint: .unknown)
        #expect(held?.rendered?.body == body && held?.rendered?.shownState == .tokenLoaded)
        #expect(held !== read && read.isWithdrawn, "a new entry replaced the one rendered from")
        #expect(held?.session == stored && held?.isWithdrawn == false)
        #expect(cache.guarded.withLock { $0.entries.bytes } == bytesBefore + ExactCache.renderedOverhead + body.count, "counted in the bytes")
        #expect(cache.session(id: "ses_a", appID: "app_2", hint: .unknown) == nil, "never for another app")

        cache.fill(stored, since: cache.mark())
        cache.keepRendered(RenderedBody(shownState: .open, body: Array("late".utf8)), from: held!)
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: .unknown)?.rendered == nil, "not to an entry filled since")

        cache.handle(.notification(channel: ExactCache.changeChannel, payload: "sses_a"))
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: .unknown) == nil, "announced: gone with its session")
        cache.fill(stored, since: cache.mark())
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: .unknown).map { $0.rendered == nil } == true, "filled again bare")
    }

    /// A hint taken before the fence says where to look, never what to answer: a session dropped, replaced or moved
    /// between the hint and the read is read as the cache holds it at the read.
    @Test func aHintNeverAnswersForWhatChangedAfterIt() throws {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .seconds(30))
        let fences = Fences()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        cache.fill(session("ses_a"), since: cache.mark())
        cache.fill(session("ses_x"), since: cache.mark())
        let hint = try #require(cache.sessionHint("ses_a"))
        #expect(cache.sessionHint("ses_unknown") == nil, "not held: no hint")
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint)?.session.id == "ses_a")
        #expect(cache.session(id: "ses_a", appID: "app_2", hint: hint) == nil, "never for another app")

        cache.handle(.notification(channel: ExactCache.changeChannel, payload: "sses_a"))
        cache.fill(session("ses_b"), since: cache.mark())
        #expect(cache.sessionHint("ses_b")?.position == hint.position, "another session took the dropped one's place")
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint) == nil, "announced after the hint: not answered")
        #expect(cache.session(id: "ses_b", appID: "app_1", hint: hint)?.session.id == "ses_b")

        var changed = session("ses_a")
        changed.owner = "bob"
        cache.fill(changed, since: cache.mark())
        #expect(cache.sessionHint("ses_a")?.position != hint.position)
        #expect(
            cache.session(id: "ses_a", appID: "app_1", hint: hint)?.session.owner == "bob",
            "filled again elsewhere: the entry held now")
        #expect(cache.session(id: "ses_x", appID: "app_1", hint: CacheHint(position: 1 << 40))?.session.id == "ses_x")
    }

    /// A session's hint carries its entry, which the read after the fence takes with no lock only while the cache
    /// has not withdrawn it: every way an entry leaves (announced, replaced, given a rendered body, evicted,
    /// emptied with a lost connection) withdraws it, so a stale entry is never answered from a hint.
    @Test func aHintsEntryIsAnsweredOnlyWhileTheCacheStillHoldsIt() throws {
        let cache = ExactCache(capacity: 64 * 1024, fenceTimeout: .seconds(30))
        let fences = Fences()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        func hinted(_ id: String) throws -> CacheHint {
            for _ in 0..<2 where cache.sessionHint(id) == nil {
                cache.fill(session(id), since: cache.mark())  // A full cache admits a new key on its second try.
            }
            let hint = try #require(cache.sessionHint(id))
            #expect(hint.held?.isWithdrawn == false)
            return hint
        }
        func unlockedHits() -> Int { cache.unlockedHits.load(ordering: .relaxed) }

        var hint = try hinted("ses_a")
        var before = unlockedHits()
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint) === hint.held)
        #expect(unlockedHits() == before + 1, "an entry still held is answered without the lock")
        #expect(cache.session(id: "ses_a", appID: "app_2", hint: hint) == nil, "never for another app")
        #expect(cache.session(id: "ses_b", appID: "app_1", hint: hint) == nil, "never for another id")

        // Announced: withdrawn, and the read finds nothing.
        cache.handle(.notification(channel: ExactCache.changeChannel, payload: "sses_a"))
        #expect(hint.held?.isWithdrawn == true)
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint) == nil)

        // Replaced by a new fill: the read answers the new entry, not the hint's.
        hint = try hinted("ses_a")
        var changed = session("ses_a")
        changed.owner = "bob"
        cache.fill(changed, since: cache.mark())
        #expect(hint.held?.isWithdrawn == true)
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint)?.session.owner == "bob")

        // Given a body: the new entry carries it; the hint's is withdrawn.
        hint = try hinted("ses_a")
        cache.keepRendered(RenderedBody(shownState: .open, body: Array("{}".utf8)), from: hint.held!)
        #expect(hint.held?.isWithdrawn == true)
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint)?.rendered?.body == Array("{}".utf8))

        // Evicted to make room: withdrawn, so an announcement that can no longer find it still keeps it unanswered.
        hint = try hinted("ses_a")
        var filler = 0
        while hint.held?.isWithdrawn == false, filler < 1000 {
            filler += 1
            for _ in 0..<2 { cache.fill(session("ses_filler\(filler)"), since: cache.mark()) }  // Admitted on the second try.
        }
        #expect(hint.held?.isWithdrawn == true, "evicted after \(filler) fillers")
        before = unlockedHits()
        cache.handle(.notification(channel: ExactCache.changeChannel, payload: "sses_a"))
        #expect(cache.session(id: "ses_a", appID: "app_1", hint: hint) == nil)
        #expect(unlockedHits() == before)

        // Emptied with a lost connection.
        hint = try hinted("ses_c")
        cache.handle(.disconnected)
        #expect(hint.held?.isWithdrawn == true)
        cache.handle(.reconnected)
        cache.handle(.fence(token: fences.last!))
        #expect(cache.session(id: "ses_c", appID: "app_1", hint: hint) == nil)
    }

    /// An event loop remembers the last key it found live, and answers it again with no lock only while no live key
    /// has been dropped since: a revocation, or the cache emptied, ends the memo at once.
    @Test func aLoopsLastLiveKeyHoldsOnlyWhileNoLiveKeyWasDropped() throws {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .seconds(30))
        let fences = Fences()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        cache.fillLiveKey("k1", since: cache.mark())
        cache.fillLiveKey("k2", since: cache.mark())
        // Answers read on a thread of its own with a loop fence registered, as an event loop's thread has.
        let answers = onLoopThread(of: cache) { () -> [Answer] in
            var answers: [Answer] = []
            let read = { (keyID: String) in answers.append(Self.answer(cache) { cache.isLiveKey(keyID) }) }
            read("k1")  // Searched, remembered.
            read("k1")  // From the memo.
            read("k2")  // Another key: searched.
            read("k2")
            cache.handle(.notification(channel: ExactCache.changeChannel, payload: "kk1"))
            read("k2")  // Another key was dropped: searched again, still live.
            read("k1")  // Revoked.
            read("k1")
            cache.fillLiveKey("k1", since: cache.mark())
            read("k1")
            read("k1")
            cache.handle(.disconnected)
            read("k1")  // Emptied.
            return answers
        }
        let expected: [Answer] = [
            .init(true, false), .init(true, true), .init(true, false), .init(true, true), .init(true, false),
            .init(false, false), .init(false, false), .init(true, false), .init(true, true), .init(false, false),
        ]
        #expect(answers == expected)
        #expect(cache.isLiveKey("k2") == false, "and off a loop, the search says the same")
    }

    /// An event loop keeps the picture entries it read lately, and takes one again with no lock only while the cache
    /// has not withdrawn it: announced, replaced, evicted or emptied, the next read searches.
    @Test func aLoopsRecentPicturesHoldOnlyWhileTheCacheHoldsThem() {
        let cache = ExactCache(capacity: 64 * 1024, fenceTimeout: .seconds(30))
        let fences = Fences()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        let key = PictureKey(appID: "app_1", facebookUserID: "10", sizeKey: "normal")
        let other = PictureKey(appID: "app_1", facebookUserID: "11", sizeKey: "normal")
        let token = cache.pictureKey(key)
        @Sendable func picture(_ etag: String) -> CachedPicture {
            CachedPicture(
                type: .jpeg, etag: etag, body: [1, 2, 3], url: "https://cdn.example/p.jpg", width: 100, height: 100,
                isSilhouette: false, urlExpiresAt: nil, fetchedAt: Date(), freshUntil: Date() + 3600)
        }
        cache.fill(picture("\"a\""), for: key, since: cache.mark())
        cache.fill(picture("\"b\""), for: other, since: cache.mark())
        let answers = onLoopThread(of: cache) { () -> [PictureAnswer] in
            var answers: [PictureAnswer] = []
            let read = { (key: PictureKey) in
                var etag: String?
                let answer = Self.answer(cache) {
                    etag = cache.picture(key)?.picture.etag
                    return etag != nil
                }
                answers.append(PictureAnswer(etag: etag, unlocked: answer.unlocked))
            }
            read(key)  // Searched, kept.
            read(key)  // From the loop's table.
            read(other)
            read(other)
            cache.handle(.notification(channel: ExactCache.changeChannel, payload: token))
            read(key)  // Announced.
            cache.fill(picture("\"c\""), for: key, since: cache.mark())
            read(key)
            read(key)
            cache.fill(picture("\"d\""), for: key, since: cache.mark())
            read(key)  // Replaced: the new entry, searched.
            var filler = 0
            while cache.guarded.withLock({ $0.entries.contains(token) }), filler < 1000 {
                filler += 1
                for _ in 0..<2 { cache.fill(Self.session("ses_filler\(filler)"), since: cache.mark()) }
            }
            read(key)  // Evicted by the fillers.
            for _ in 0..<2 { cache.fill(picture("\"e\""), for: key, since: cache.mark()) }  // Full: the second try.
            read(key)
            cache.handle(.disconnected)
            read(key)  // Emptied.
            return answers
        }
        let expected: [PictureAnswer] = [
            .init(etag: "\"a\"", unlocked: false), .init(etag: "\"a\"", unlocked: true),
            .init(etag: "\"b\"", unlocked: false), .init(etag: "\"b\"", unlocked: true),
            .init(etag: nil, unlocked: false), .init(etag: "\"c\"", unlocked: false), .init(etag: "\"c\"", unlocked: true),
            .init(etag: "\"d\"", unlocked: false), .init(etag: nil, unlocked: false),
            .init(etag: "\"e\"", unlocked: false), .init(etag: nil, unlocked: false),
        ]
        #expect(answers == expected)
    }

    private struct Answer: Equatable {
        var live: Bool
        var unlocked: Bool
        init(_ live: Bool, _ unlocked: Bool) {
            self.live = live
            self.unlocked = unlocked
        }
    }

    private struct PictureAnswer: Equatable {
        var etag: String?
        var unlocked: Bool
    }

    /// What `read` answered, and whether the cache answered it without its lock.
    private static func answer(_ cache: ExactCache, _ read: () -> Bool) -> Answer {
        let before = cache.unlockedHits.load(ordering: .relaxed)
        let live = read()
        return Answer(live, cache.unlockedHits.load(ordering: .relaxed) > before)
    }

    private struct NeverConnects: Error {}

    /// Runs `body` on a new thread on which `cache` made a loop fence (never connected), as on an event loop's thread.
    private func onLoopThread<T: Sendable>(of cache: ExactCache, _ body: @escaping @Sendable () -> T) -> T {
        let outcome = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let loop = cache.makeLoopFence { throw NeverConnects() }
            let value = body()
            outcome.withLock { $0 = value }
            loop.stop()
            done.signal()
        }
        thread.start()
        done.wait()
        return outcome.withLock { $0 }!
    }

    @Test func aFenceThatNeverComesBackLetsRequestsGoToTheDatabase() async {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .milliseconds(50))
        let fences = Fences()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        let started = ContinuousClock.now
        #expect(await cache.fence() == false)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await cache.fence() == false, "not current after a timeout")
    }

    /// The watchdog reaches its cache unretained (no weak reference, which would slow every retain of the cache): a
    /// cache freed while its watchdog ticks, with a fence out and late, must be neither reached nor kept alive.
    @Test func cachesFreedWhileTheirWatchdogsTickAreNeverReached() async throws {
        weak var freed: ExactCache?
        for round in 0..<200 {
            // A 4 ms timeout ticks every millisecond; the fence sent by `attach` never comes back.
            let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .milliseconds(4))
            cache.attach(sendFence: { _ in })
            if round % 2 == 0 { try await Task.sleep(for: .microseconds(round * 20)) }
            freed = cache
        }
        #expect(freed == nil, "the last cache was freed: its watchdog does not hold it")
        let kept = ExactCache(capacity: 1 << 20, fenceTimeout: .milliseconds(20))
        let fences = Fences()
        kept.attach(sendFence: fences.send)
        kept.handle(.fence(token: fences.last!))
        #expect(await kept.fence() == false, "a late fence still fails through the watchdog")
    }

    /// What a parked request was told (``ExactCache/wait(_:)``): whether its fence passed.
    private final class Passes: Sendable {
        private let received = Locked<[Bool]>([])
        func add(_ passed: Bool) { received.withLock { $0.append(passed) } }
        var all: [Bool] { received.withLock { $0 } }
    }

    @Test func aParkedWaitPassesOnlyWhenAFenceSentAfterItCameBack() {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .seconds(30), fenceSpacing: .zero)
        let fences = Fences()
        let passes = Passes()
        cache.wait(passes.add)
        #expect(passes.all == [false], "not attached: nil at once, on the calling thread")
        cache.attach(sendFence: fences.send)
        cache.wait(passes.add)
        #expect(passes.all == [false, false], "not current yet")
        cache.handle(.fence(token: fences.last!))

        cache.wait(passes.add)  // Sends a fence.
        cache.wait(passes.add)  // Arrived after it was sent: needs the next one,
        cache.wait(passes.add)  // and shares it with this one.
        #expect(passes.all.count == 2, "parked until a fence sent after the wait comes back")
        cache.handle(.fence(token: fences.last!))
        #expect(passes.all.count == 3, "the first fence answers the first wait only")
        #expect(fences.count == 3, "and the next is sent at once for the other two")
        cache.handle(.fence(token: fences.last!))
        let answered = passes.all.suffix(from: 2)
        #expect(answered.count == 3)
        #expect(answered.allSatisfy { $0 }, "each passed")

        cache.wait(passes.add)
        cache.handle(.disconnected)
        #expect(passes.all.count == 6 && passes.all[5] == false, "a lost connection fails a parked wait")
    }

    @Test func aFenceDueSoonAfterTheLastIsHeldBackAndRiddenOn() async {
        let cache = ExactCache(capacity: 1 << 20, fenceTimeout: .seconds(30), fenceSpacing: .milliseconds(300))
        let fences = Fences()
        let passes = Passes()
        cache.attach(sendFence: fences.send)
        cache.handle(.fence(token: fences.last!))
        let started = ContinuousClock.now
        cache.wait(passes.add)
        cache.wait(passes.add)
        #expect(fences.count == 1, "held back: the last fence went out less than the spacing ago")
        while fences.count < 2, ContinuousClock.now - started < .seconds(5) { await Task.yield() }
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        cache.handle(.fence(token: fences.last!))
        #expect(passes.all.count == 2 && passes.all.allSatisfy { $0 }, "both rode on it")
        #expect(fences.count == 2)
    }
}
