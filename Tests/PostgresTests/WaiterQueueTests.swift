import Postgres
import Testing

/// The waiter queue of the pool and of batched reads, as a state machine, without a database: FIFO, the limit,
/// cancellation before, while and after queueing, deadlines and their timers, batches, and draining.
@Suite("Waiter queue")
struct WaiterQueueTests {
    typealias Queue = WaiterQueue<String>

    let start = ContinuousClock.now

    func at(_ seconds: Int) -> ContinuousClock.Instant {
        start + .seconds(seconds)
    }

    /// Registers and queues `payload`, expecting it to be queued.
    @discardableResult
    func add(_ payload: String, to queue: inout Queue, deadline: ContinuousClock.Instant? = nil) -> Queue.ID {
        let id = queue.register()
        guard case .queued = queue.enqueue(id, payload, deadline: deadline) else {
            Issue.record("\(payload) was not queued")
            return id
        }
        return id
    }

    @Test func servesInTheOrderWaitersWereQueuedNotRegistered() {
        var queue = Queue(limit: 10)
        let first = queue.register()
        let second = queue.register()
        let third = queue.register()
        #expect(first != second && second != third && first != third)
        for (id, payload) in [(second, "b"), (first, "a"), (third, "c")] {
            guard case .queued = queue.enqueue(id, payload, deadline: nil) else {
                Issue.record("\(payload) was not queued")
                return
            }
        }
        #expect(queue.count == 3)
        #expect(queue.takeFirst() == "b")
        #expect(queue.takeFirst() == "a")
        #expect(queue.takeFirst() == "c")
        #expect(queue.takeFirst() == nil)
        #expect(queue.isEmpty)
    }

    @Test func refusesBeyondItsLimitUntilOneLeaves() {
        var queue = Queue(limit: 2)
        add("a", to: &queue)
        add("b", to: &queue)
        let refused = queue.register()
        guard case .full = queue.enqueue(refused, "c", deadline: nil) else {
            Issue.record("a third waiter was not refused")
            return
        }
        #expect(queue.count == 2)
        #expect(queue.takeFirst() == "a")
        add("d", to: &queue)
        #expect(queue.takeFirst() == "b")
        #expect(queue.takeFirst() == "d")

        var none = Queue(limit: 0)
        let id = none.register()
        guard case .full = none.enqueue(id, "x", deadline: nil) else {
            Issue.record("a queue of limit 0 took a waiter")
            return
        }
    }

    @Test func aCancelBeforeTheWaiterArrivesRefusesIt() {
        var queue = Queue(limit: 10)
        let cancelled = queue.register()
        let other = queue.register()
        #expect(queue.cancel(cancelled) == nil)
        guard case .cancelled = queue.enqueue(cancelled, "a", deadline: at(1)) else {
            Issue.record("a cancelled registration was queued")
            return
        }
        #expect(queue.isEmpty)
        #expect(queue.nextDeadline == nil)
        // The refusal ended the registration: a second cancel finds nothing.
        #expect(queue.cancel(cancelled) == nil)

        // The same for an owner that serves at once: `admit` says no once, for the cancelled id only.
        let served = queue.register()
        #expect(queue.cancel(served) == nil)
        let servedAdmitted = queue.admit(served)
        let otherAdmitted = queue.admit(other)
        #expect(!servedAdmitted)
        #expect(otherAdmitted)
        #expect(queue.isEmpty)
    }

    @Test func aCancelWhileQueuedRemovesJustThatWaiter() {
        var queue = Queue(limit: 10)
        add("a", to: &queue)
        let b = add("b", to: &queue, deadline: at(1))
        add("c", to: &queue)
        #expect(queue.cancel(b) == "b")
        #expect(queue.cancel(b) == nil)
        #expect(queue.count == 2)
        #expect(queue.nextDeadline == nil)
        #expect(queue.takeFirst() == "a")
        #expect(queue.takeFirst() == "c")
    }

    @Test func aCancelAfterTheWaiterWasTakenDoesNothing() {
        var queue = Queue(limit: 10)
        let served = add("a", to: &queue)
        let batched = add("b", to: &queue, deadline: at(1))
        add("c", to: &queue)
        #expect(queue.takeFirst() == "a")
        #expect(queue.cancel(served) == nil)
        let batch = queue.takeBatch(upTo: 1)
        #expect(batch.map(\.payload) == ["b"])
        #expect(queue.cancel(batched) == nil)
        #expect(queue.count == 1)
        // The batch still answers it.
        #expect(queue.claim(batch) == [true])
    }

    @Test func deadlinesExpireInTheirOrderAndEachTimerAsksForTheNext() {
        var queue = Queue(limit: 10)
        let a = queue.register()
        guard case .queued(let first?) = queue.enqueue(a, "a", deadline: at(2)) else {
            Issue.record("the first deadline asked for no timer")
            return
        }
        #expect(first.deadline == at(2))
        // An earlier deadline queued later gets its own timer; a later one needs none.
        let b = queue.register()
        guard case .queued(let earlier?) = queue.enqueue(b, "b", deadline: at(1)) else {
            Issue.record("an earlier deadline asked for no timer")
            return
        }
        #expect(earlier.deadline == at(1))
        let c = queue.register()
        guard case .queued(nil) = queue.enqueue(c, "c", deadline: at(3)) else {
            Issue.record("a later deadline asked for a timer")
            return
        }
        add("d", to: &queue)
        add("e", to: &queue, deadline: at(5))
        #expect(queue.nextDeadline == at(1))

        // Going off early expires nothing and asks again for the same deadline.
        let (none, again) = queue.expire(now: at(0), timer: earlier)
        #expect(none.isEmpty)
        #expect(again?.deadline == at(1))
        guard let again else { return }

        let (due, next) = queue.expire(now: at(2), timer: again)
        #expect(due == ["b", "a"])
        #expect(next?.deadline == at(3))
        // The superseded timer expires what is due, but asks for no timer: `next` is set.
        let (stale, fromStale) = queue.expire(now: at(3), timer: first)
        #expect(stale == ["c"])
        #expect(fromStale == nil)
        #expect(queue.takeFirst() == "d")

        guard let next else { return }
        let (late, last) = queue.expire(now: at(4), timer: next)
        #expect(late.isEmpty)
        #expect(last?.deadline == at(5))
        guard let last else { return }
        let (lastDue, noTimer) = queue.expire(now: at(6), timer: last)
        #expect(lastDue == ["e"])
        #expect(noTimer == nil)
        #expect(queue.isEmpty)
    }

    @Test func batchesTakeUpToTheirSizeAndTheirWaitersStillExpire() {
        var queue = Queue(limit: 10)
        var timer: Queue.Timer?
        for (index, payload) in ["a", "b", "c", "d", "e"].enumerated() {
            let id = queue.register()
            guard case .queued(let asked) = queue.enqueue(id, payload, deadline: at(index + 1)) else {
                Issue.record("\(payload) was not queued")
                return
            }
            timer = timer ?? asked
        }
        let first = queue.takeBatch(upTo: 2)
        #expect(first.map(\.payload) == ["a", "b"])
        #expect(queue.count == 3)
        let second = queue.takeBatch(upTo: 10)
        #expect(second.map(\.payload) == ["c", "d", "e"])
        #expect(queue.takeBatch(upTo: 10).isEmpty)
        #expect(queue.isEmpty)
        // Owed waiters keep their deadlines.
        #expect(queue.nextDeadline == at(1))

        guard let timer else {
            Issue.record("no timer was asked for")
            return
        }
        let (expired, next) = queue.expire(now: at(3), timer: timer)
        #expect(expired == ["a", "b", "c"])
        #expect(next?.deadline == at(4))
        // The batches' answers skip what the timer answered, and each waiter is claimed once.
        #expect(queue.claim(first) == [false, false])
        #expect(queue.claim(second) == [false, true, true])
        #expect(queue.claim(second) == [false, false, false])
        #expect(queue.nextDeadline == nil)
    }

    @Test func drainEmptiesTheQueueAndLeavesBatchesAndRegistrations() {
        var queue = Queue(limit: 10)
        add("a", to: &queue)
        let drainedID = add("b", to: &queue)
        add("c", to: &queue)
        let batch = queue.takeBatch(upTo: 1)
        let registered = queue.register()
        #expect(queue.cancel(registered) == nil)

        #expect(queue.drain() == ["b", "c"])
        #expect(queue.isEmpty)
        #expect(queue.takeFirst() == nil)
        #expect(queue.cancel(drainedID) == nil)
        #expect(queue.claim(batch) == [true])
        guard case .cancelled = queue.enqueue(registered, "d", deadline: nil) else {
            Issue.record("a registration cancelled before the drain was queued")
            return
        }
        #expect(queue.drain().isEmpty)
    }
}
