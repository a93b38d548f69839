"""3. Graph down (500s, dropped connections, HTML pages), slow (5 s) and rate-limiting (4, 17, 613, x-app-usage)."""

import random
import re
import threading
import time

from checks import Ledger, consistency, join_all, run_threads, verdict
from stack import wait_until

GRAPH_TIMEOUT = 2.0
STATUS_BOUND = 2 * GRAPH_TIMEOUT + 1.5  # me and permissions run concurrently, each bounded by the timeout
LOGIN_BOUND = 4 * GRAPH_TIMEOUT + 2.0   # debug_token, the exchange, then me + permissions
INTERVAL = 1.0
GRAPH_ENDPOINTS = ["me", "permissions", "debug_token", "oauth_access_token"]


def probe(ledger, service, key, session_ids, seconds, threads=4, logins=None):
    """Status with validate=always on random sessions from `threads` clients; a login a second when given users."""
    stop = threading.Event()
    seen = {"deferred": 0, "fresh": 0, "cached": 0, "closed": 0, "other": 0}
    lock = threading.Lock()

    def status(_):
        while not stop.is_set():
            sid = random.choice(session_ids)
            answer = ledger.call(service.url, "GET", f"/v1/sessions/{sid}?validate=always", key, None, 30, "status")
            if answer is not None and answer.status == 200:
                body = answer.json()
                with lock:
                    if body["state"] == "closed":
                        seen["closed"] += 1
                    seen[body.get("validation") if body.get("validation") in seen else "other"] += 1
            time.sleep(0.1)

    def login(_):
        while logins and not stop.is_set():
            _, token = logins.pop()
            ledger.call(service.url, "POST", "/v1/sessions", key, {"owner": f"late-{random.random()}",
                                                                   "access_token": token}, 30, "login")
            time.sleep(1.0)

    workers = run_threads(threads, status) + run_threads(1 if logins else 0, login)
    time.sleep(seconds)
    stop.set()
    join_all(workers, 40)
    return seen


def sweep_passes(log):
    return len(re.findall(r'"?sweep"?[^\n]*deferred', log))


def run(stack, quick, outage=None):
    outage = outage or (12.0 if quick else 60.0)
    slow_seconds = 6.0 if quick else 20.0
    pg, emulator, key, app = stack.pg, stack.emulator, stack.api_key, stack.app_id
    service = stack.service("svc", FBS_GRAPH_TIMEOUT=GRAPH_TIMEOUT, FBS_SWEEP_INTERVAL=INTERVAL,
                            FBS_SWEEP_RATE=50, FBS_SWEEP_MAX_AGE=60)
    pid = service.pid
    count = 10 if quick else 20
    ledger = Ledger()
    ids = []
    for index in range(count):
        _, token = emulator.user_and_token(f"g{index}")
        answer = ledger.call(service.url, "POST", "/v1/sessions", key, {"owner": f"chaos-graph-{index}",
                                                                         "access_token": token}, 30, "login")
        ids.append(answer.json()["id"])
    spare = [emulator.user_and_token(f"late{i}") for i in range(int(outage) + 30)]
    setup_requests = ledger.count()

    # --- outage: every Graph endpoint fails, a third each with 500s, dropped connections and HTML error pages.
    emulator.reset_counters()
    pg.psql(f"UPDATE sessions SET validated_at = now() - interval '2 days' WHERE app_id = '{app}'")
    log_before = service.log_text()
    started = time.monotonic()
    quiet = outage * 2 / 3
    for kind in ("http_500", "drop", "html"):
        emulator.clear_faults()
        for endpoint in GRAPH_ENDPOINTS:
            emulator.fault(endpoint, kind)
        phase_end = started + outage * {"http_500": 1, "drop": 2, "html": 3}[kind] / 3
        if kind == "html":
            # The quiet part (no client traffic: only the sweep calls Graph) ends here; counted separately.
            quiet_calls = emulator.graph_calls()
            quiet_passes = sweep_passes(service.log_text()[len(log_before):])
            seen = probe(ledger, service, key, ids, max(1.0, phase_end - time.monotonic()), logins=spare)
        else:
            time.sleep(max(0.0, phase_end - time.monotonic()))
    outage_calls = emulator.graph_calls()
    emulator.clear_faults()
    outage_end = time.monotonic()
    # Without a pause between failing passes the loop would start one every interval, each as costly as ours.
    per_pass = quiet_calls / max(1, quiet_passes)
    without = int(quiet / INTERVAL) * per_pass
    naive = int(quiet / INTERVAL) * count * 2
    verdict("graph-outage/sweep-backs-off", quiet_calls < without and quiet_passes < quiet / INTERVAL / 2,
            f"{outage:.0f}s outage; in its first {quiet:.0f}s (sweep only, {count} sessions due) {quiet_passes} "
            f"failing passes made {quiet_calls} Graph calls; one pass per {INTERVAL:.0f}s interval without back-off "
            f"would make ~{without:.0f} ({naive} if passes did not stop early either)")
    bad_status = ledger.bad(lambda e: e["route"] == "login" and e["outcome"] in (502, 503))
    late_logins = ledger.count(lambda e: e["route"] == "login" and e["at"] > started)
    slow = ledger.count(lambda e: e["at"] > started and e["route"] == "status" and e["elapsed"] > STATUS_BOUND)
    slow_login = ledger.count(lambda e: e["at"] > started and e["route"] == "login" and e["elapsed"] > LOGIN_BOUND)
    verdict("graph-outage/answers", not bad_status and slow == 0 and slow_login == 0 and seen["closed"] == 0
            and seen["fresh"] == 0 and seen["deferred"] > 0,
            f"status during outage: {seen['deferred']} deferred, {seen['fresh']} fresh, {seen['closed']} closed; "
            f"{late_logins} logins answered {sorted({e['outcome'] for e in ledger.entries if e['route'] == 'login' and e['at'] > started}, key=str)}; "
            f"{len(bad_status)} bad answers; {slow} status over {STATUS_BOUND:.1f}s, {slow_login} logins over "
            f"{LOGIN_BOUND:.0f}s; {outage_calls} Graph calls in all during the outage")

    # --- slow Graph: 5 s per call, beyond FBS_GRAPH_TIMEOUT=2.
    emulator.latency(5000)
    mark = len(ledger.entries)
    seen = probe(ledger, service, key, ids, slow_seconds)
    emulator.latency(0)
    entries = ledger.entries[mark:]
    worst = max((e["elapsed"] for e in entries), default=0)
    verdict("graph-slow/answers", seen["closed"] == 0 and seen["fresh"] == 0 and seen["deferred"] > 0
            and worst <= STATUS_BOUND and not [e for e in entries if e["outcome"] != 200],
            f"Graph 5s per call, timeout {GRAPH_TIMEOUT:.0f}s: {len(entries)} status, {seen['deferred']} deferred, "
            f"{seen['closed']} closed, slowest {worst:.2f}s (bound {STATUS_BOUND:.1f}s)")

    # --- rate limits: codes 4, 17, 613 (with x-app-usage at 100), then x-app-usage at 100 on successful answers.
    figures = []
    ok = True
    for code in (4, 17, 613):
        for endpoint in GRAPH_ENDPOINTS:
            emulator.fault(endpoint, "graph_error", code=code)
        mark = len(ledger.entries)
        seen = probe(ledger, service, key, ids, 2.0, threads=2)
        emulator.clear_faults()
        entries = ledger.entries[mark:]
        worst = max((e["elapsed"] for e in entries), default=0)
        ok &= seen["closed"] == 0 and seen["fresh"] == 0 and seen["deferred"] > 0 and worst <= STATUS_BOUND
        figures.append(f"code {code}: {seen['deferred']} deferred/{len(entries)}, slowest {worst:.2f}s")
    emulator.control("PUT", "app-usage", {"call_count": 100, "total_cputime": 100, "total_time": 100})
    mark = len(ledger.entries)
    seen = probe(ledger, service, key, ids, 2.0, threads=2)
    emulator.control("PUT", "app-usage", {"call_count": 0, "total_cputime": 0, "total_time": 0})
    ok &= seen["closed"] == 0 and all(e["outcome"] == 200 for e in ledger.entries[mark:])
    figures.append(f"x-app-usage 100% on 200s: {seen['fresh']} fresh, {seen['deferred']} deferred, "
                   f"{seen['closed']} closed")
    verdict("graph-rate-limits/answers", ok, "; ".join(figures))

    # --- recovery: no intervention; the sweep comes back by itself and status is fresh again.
    recovered_at = time.monotonic()
    pg.psql(f"UPDATE sessions SET validated_at = now() - interval '2 days' WHERE app_id = '{app}'")
    due = lambda: pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed' "
                            f"AND validated_at < now() - interval '1 hour'") == "0"
    try:
        wait_until(due, 8 * INTERVAL + 30, "sweep never recovered")
    except Exception:
        pass
    sweep_recovery = time.monotonic() - recovered_at
    stale = int(pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed' "
                          f"AND validated_at < now() - interval '1 hour'"))
    fresh = 0
    for sid in ids:
        answer = ledger.call(service.url, "GET", f"/v1/sessions/{sid}?validate=always", key, None, 30, "status")
        fresh += answer is not None and answer.status == 200 and answer.json()["validation"] == "fresh" \
            and answer.json()["state"] == "open"
    _, token = emulator.user_and_token("after")
    login = ledger.call(service.url, "POST", "/v1/sessions", key, {"owner": "after", "access_token": token}, 30,
                        "login")
    closed = int(pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state = 'closed'"))
    verdict("graph-faults/recovers", stale == 0 and fresh == count and login is not None and login.status == 201
            and closed == 0 and service.pid == pid and service.alive(),
            f"sweep re-validated all {count} sessions {sweep_recovery:.0f}s after Graph came back ({stale} left); "
            f"{fresh}/{count} status fresh+open; login {login.status if login else None}; {closed} sessions "
            f"closed in the whole test (nobody logged out); same pid {pid}; "
            f"{ledger.count() - setup_requests} requests during faults: {ledger.summary()}")
    consistency(pg, app, "graph-faults/invariants")
    service.stop()
