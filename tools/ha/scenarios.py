"""The five faults, and one scenario's course: load, fault, recovery, steady load, checks, repair.

Each fault function gets the harness (`ha.Harness`), does its damage (returning when the fault itself is over:
a freeze returns after SIGCONT) and returns (fault time, old primary, a note for the report). The old primary
comes back by itself (Patroni rejoins it as the standby) except after the loss of a node, where `repair`
starts its Patroni again.

Two faults stall the synchronous standby first, so that the primary holds commits that wait for it when the
primary dies: the moment when a dying primary can show what its standby never got (docs/high-availability.md,
"Events a failover cannot take back"). `kill9` kills the primary while those commits wait (well within the
service's deadline); `standby-stall` waits past the deadline first, so that the service has given up on writes
(and answered 503) before the primary is lost.
"""

import time

import verify
from processes import HAError, wait_until

WARM = 5.0       # seconds of load before the fault
AFTER = 8.0      # seconds of load after the service is back
FREEZE = 25.0    # seconds the primary stays frozen (beyond the 20 s TTL: the standby takes over meanwhile)
WAITING = 1.0    # seconds the standby stays frozen before the primary dies (kill9): commits wait meanwhile


def switchover(harness):
    at = time.monotonic()
    old, new = harness.database.switchover()
    return at, old, f"switchover {old.name} -> {new.name} (Patroni REST POST /switchover)"


def waiting_commits(harness, primary, when):
    """Counts the primary's backends whose commit waits for the standby, and makes that a check of the scenario:
    the fault must meet commits that wait, or it proves nothing."""
    waiting = int(harness.database.scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
                                          url=harness.database.node_url(primary)) or 0)
    harness.fault_check = ("waiting-commits", waiting > 0, f"{waiting} commits waited for the standby {when}")
    return waiting


def kill9(harness):
    old = harness.database.leader()
    standby = harness.database.standby()
    stopped = standby.freeze()
    try:
        time.sleep(WAITING)
        waiting_commits(harness, old, "when the primary was killed")
        at = time.monotonic()
        pid = old.kill_postmaster()
    finally:
        standby.thaw()
    return at, old, (f"SIGSTOP of the standby {standby.name}'s {stopped} PostgreSQL processes; {WAITING:g} s later, "
                     f"with commits waiting for it, kill -9 of {old.name}'s postmaster (pid {pid}); SIGCONT")


def standby_stall(harness):
    old = harness.database.leader()
    standby = harness.database.standby()
    stall = harness.bounds["*"] + 2.0
    stopped = standby.freeze()
    try:
        time.sleep(stall)
        waiting_commits(harness, old, "when the primary was lost (the service had given up on them: not cancelled)")
        at = time.monotonic()  # the bound on coming back counts from the loss; the stall's 503s come before it
        old.lose()
    finally:
        standby.thaw()
    return at, old, (f"SIGSTOP of the standby {standby.name}'s {stopped} PostgreSQL processes for {stall:g} s (past "
                     f"the service's deadline: writes answer 503), then {old.name} lost; SIGCONT")


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


SCENARIOS = [("switchover", switchover), ("kill9", kill9), ("standby-stall", standby_stall), ("node-loss", node_loss),
             ("freeze", freeze)]
NAMES = [name for name, _ in SCENARIOS]


def run(harness, name, fault, since):
    """One scenario; returns its table row. `since` is where its slice of the ledger starts (the end of the
    previous scenario, so that nothing in between goes unchecked)."""
    database, load, fleet = harness.database, harness.load, harness.fleet
    row = {"name": name}
    began = time.monotonic()
    load.run()
    time.sleep(WARM)
    harness.fault_mark = time.monotonic()
    harness.fault_check = None
    fault_at, old, note = fault(harness)
    print(f"   {note}", flush=True)
    if harness.fault_check:
        check, ok, detail = harness.fault_check
        verify.report(name, row, ok, (check, detail))
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
    harness.scenario_alerts(name, row, began)

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
    feed_ok = not any(feed[key] for key in ("missing", "duplicated", "phantom", "out_of_order", "undelivered",
                                            "phantom_delivered"))
    verify.report(name, row, feed_ok and fleet.hooks.bad_signatures == 0,
                  ("events", f"{feed['committed']} committed events; the feed misses {feed['missing']}, repeats "
                             f"{feed['duplicated']}, has {feed['phantom']} unknown and {feed['out_of_order']} "
                             f"out of order; {feed['undelivered']} never reached the webhook, "
                             f"{feed['phantom_delivered']} unknown reached it ({len(fleet.hooks.received())} "
                             f"deliveries, {fleet.hooks.bad_signatures} badly signed)"))
    audit = verify.audit_matches_database(database, fleet.app_id, load.audit_ids(), load.acknowledged_token_reads())
    verify.report(name, row, not any(audit[key] for key in ("unrecorded", "doubled", "missing", "duplicated",
                                                            "phantom", "out_of_order")),
                  ("audit", f"{audit['entries']} entries, {len(load.acknowledged_token_reads())} acknowledged token "
                            f"reads so far: {audit['unrecorded']} without their entry, {audit['doubled']} with two; "
                            f"GET /v1/audit misses {audit['missing']}, repeats {audit['duplicated']}, has "
                            f"{audit['phantom']} unknown and {audit['out_of_order']} out of order"))
    row["ok"] = checks_consistency(harness, name) and row.get("ok", True)
    restarted = [s.name for s in fleet.services if not s.alive() or s.starts != 1]
    verify.report(name, row, not restarted, ("no-restart", f"{len(fleet.services)} instances, same pids"
                                             + (f"; restarted or dead: {restarted}" if restarted else "")))
    row.update(requests=len(entries), failed=verify.failures_by_status(entries), longest=longest["elapsed"],
               longest_route=longest["route"], lost=lost + feed["missing"] + feed["undelivered"],
               duplicated=feed["duplicated"] + feed["phantom"] + feed["out_of_order"] + feed["phantom_delivered"]
               + audit["doubled"] + audit["duplicated"] + audit["phantom"] + audit["out_of_order"])
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
