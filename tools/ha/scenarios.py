"""The four faults, and one scenario's course: load, fault, recovery, steady load, checks, repair.

Each fault function gets the harness (`ha.Harness`), does its damage (returning when the fault itself is over:
a freeze returns after SIGCONT) and returns (fault time, old primary, a note for the report). The old primary
comes back by itself (Patroni rejoins it as the standby) except after the loss of a node, where `repair`
starts its Patroni again.
"""

import time

import verify
from processes import HAError, wait_until

WARM = 5.0       # seconds of load before the fault
AFTER = 8.0      # seconds of load after the service is back
FREEZE = 25.0    # seconds the primary stays frozen (beyond the 20 s TTL: the standby takes over meanwhile)


def switchover(harness):
    at = time.monotonic()
    old, new = harness.database.switchover()
    return at, old, f"switchover {old.name} -> {new.name} (Patroni REST POST /switchover)"


def kill9(harness):
    old = harness.database.leader()
    at = time.monotonic()
    pid = old.kill_postmaster()
    return at, old, f"kill -9 of {old.name}'s postmaster (pid {pid})"


def node_loss(harness):
    old = harness.database.leader()
    at = time.monotonic()
    old.lose()
    return at, old, f"{old.name} lost: kill -9 of its Patroni and every PostgreSQL process"


def freeze(harness):
    old = harness.database.leader()
    at = time.monotonic()
    stopped = old.freeze()
    time.sleep(FREEZE)
    old.thaw()
    return at, old, f"SIGSTOP of {old.name}'s {stopped} PostgreSQL processes for {FREEZE:.0f} s, then SIGCONT"


SCENARIOS = [("switchover", switchover), ("kill9", kill9), ("node-loss", node_loss), ("freeze", freeze)]
NAMES = [name for name, _ in SCENARIOS]


def run(harness, name, fault, since):
    """One scenario; returns its table row. `since` is where its slice of the ledger starts (the end of the
    previous scenario, so that nothing in between goes unchecked)."""
    database, load, fleet = harness.database, harness.load, harness.fleet
    row = {"name": name}
    load.run()
    time.sleep(WARM)
    harness.fault_mark = time.monotonic()
    fault_at, old, note = fault(harness)
    print(f"   {note}", flush=True)
    ttl = harness.ttl
    try:
        wait_until(lambda: database.leader() is not None, ttl + 30, "no leader after the fault", interval=0.2)
        wait_until(lambda: harness.login_works(), ttl + 30, "logins do not work after the fault", interval=0.2)
    except HAError as error:
        print(f"   {error}", flush=True)
    time.sleep(AFTER)
    load.pause()
    wait_until(load.idle, 150, "a client is still inside an operation")
    end = time.monotonic()
    entries = [entry for entry in load.ledger.entries if since <= entry["at"] < end]
    harness.settle()

    bad = [entry for entry in entries if not verify.acceptable(entry)]
    verify.report(name, row, not bad, ("answers", f"{len(entries)} requests; outcomes "
                                                  f"{summary(entries)}; {len(bad)} neither 2xx nor 503 with "
                                                  f"Retry-After"))
    slow, longest, poll = verify.over_bound(entries, harness.bounds)
    verify.report(name, row, not slow,
                  ("durations", f"longest request {longest['elapsed']:.2f} s ({longest['route']}), longest long "
                                f"poll {poll['elapsed']:.2f} s; {len(slow)} over their timeout + 1 s "
                                f"({harness.bounds_text})"))
    row["outage"], row["back_after"] = verify.outage(entries, fault_at)
    verify.report(name, row, row["back_after"] <= ttl + 5,
                  ("back-in-time", f"requests failed during {row['outage']:.1f} s in all; the last failure ended "
                                   f"{row['back_after']:.1f} s after the fault (bound: Patroni's TTL {ttl} s + "
                                   f"5 s)"))
    lost, problems = verify.sessions_match_book(database, fleet.app_id, load.book)
    with load.book.lock:
        counts = (len(load.book.logins), len(load.book.logouts), load.book.switches, len(load.book.sightings),
                  list(load.book.gave_up))
    verify.report(name, row, lost == 0 and not counts[4],
                  ("writes", f"{counts[0]} acknowledged logins, {counts[1]} logouts, {counts[2]} switches, "
                             f"{counts[3]} status reads so far: {lost} contradicted"
                             + (f" ({'; '.join(problems[:3])})" if problems else "")
                             + (f"; gave up on {counts[4][:3]}" if counts[4] else "")))
    feed = verify.feed_matches_database(database, fleet.app_id, load.feed_ids(), fleet.hooks.received())
    feed_ok = not any(feed[key] for key in ("missing", "duplicated", "phantom", "out_of_order", "undelivered"))
    verify.report(name, row, feed_ok and fleet.hooks.bad_signatures == 0,
                  ("events", f"{feed['committed']} committed events; the feed misses {feed['missing']}, repeats "
                             f"{feed['duplicated']}, has {feed['phantom']} unknown and {feed['out_of_order']} "
                             f"out of order; {feed['undelivered']} never reached the webhook "
                             f"({len(fleet.hooks.received())} deliveries, {fleet.hooks.bad_signatures} badly "
                             f"signed)"))
    row["ok"] = checks_consistency(harness, name) and row.get("ok", True)
    restarted = [s.name for s in fleet.services if not s.alive() or s.starts != 1]
    verify.report(name, row, not restarted, ("no-restart", f"{len(fleet.services)} instances, same pids"
                                             + (f"; restarted or dead: {restarted}" if restarted else "")))
    row.update(requests=len(entries), failed=verify.failures_by_status(entries), longest=longest["elapsed"],
               longest_route=longest["route"], lost=lost + feed["missing"] + feed["undelivered"],
               duplicated=feed["duplicated"] + feed["phantom"] + feed["out_of_order"])
    repair(harness, old)
    return row, end


def checks_consistency(harness, name):
    import checks
    return checks.consistency(harness.database, harness.fleet.app_id, f"{name}/invariants")


def summary(entries):
    import collections
    counts = collections.Counter(str(entry["outcome"]) for entry in entries)
    return ", ".join(f"{status}: {count}" for status, count in sorted(counts.items()))


def repair(harness, old):
    """Brings the cluster back to a leader and a synchronous standby (restarting a lost node's Patroni)."""
    if old.process is None or old.process.poll() is not None:
        old.start()
    harness.database.wait_healthy(180)
