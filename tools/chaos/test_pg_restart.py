"""1. PostgreSQL stopped for a while and started again under login / status / logout load."""

import collections
import threading
import time

from checks import Ledger, consistency, join_all, run_threads, verdict

TIMEOUT = 20.0  # per request: beyond every service timeout (DB acquire 5 s, Graph 10 s)


def run(stack, quick, clients=32, down=5.0, stop_mode="fast"):
    load_seconds, stop_at = (20.0, 5.0) if quick else (45.0, 15.0)
    emulator, pg = stack.emulator, stack.pg
    service = stack.service("svc")
    pid = service.pid
    key = stack.api_key
    people = [emulator.user_and_token(f"pg{i}") for i in range(clients)]
    ledger = Ledger()
    stop = threading.Event()
    told = collections.defaultdict(list)      # owner -> [(status, session id)] of answered logins
    logins_503 = collections.Counter()        # owner -> logins answered 503
    detected_after_commit = collections.Counter()  # owner -> re-logins that found a 503'd login committed
    logouts = {}                              # session id -> final logout status
    lock = threading.Lock()

    def client(index):
        owner = f"chaos-pg-{index}"
        _, token = people[index]
        previous_503 = False
        while not stop.is_set():
            answer = ledger.call(service.url, "POST", "/v1/sessions", key,
                                 {"owner": owner, "access_token": token}, TIMEOUT, "login")
            if answer is None or answer.status not in (200, 201):
                if answer is not None and answer.status == 503:
                    with lock:
                        logins_503[owner] += 1
                    previous_503 = True
                time.sleep(0.2)
                continue
            session_id = answer.json()["id"]
            with lock:
                told[owner].append((answer.status, session_id))
                if previous_503 and answer.status == 200:
                    detected_after_commit[owner] += 1
            previous_503 = False
            ledger.call(service.url, "GET", f"/v1/sessions/{session_id}", key, None, TIMEOUT, "status")
            # Logout is idempotent: a client that got no clean answer asks again until it has one.
            while True:
                answer = ledger.call(service.url, "DELETE", f"/v1/sessions/{session_id}", key, None, TIMEOUT,
                                     "logout")
                if answer is not None and answer.status == 200:
                    with lock:
                        logouts[session_id] = 200
                    break
                time.sleep(0.2)

    started = time.monotonic()
    threads = run_threads(clients, client)
    time.sleep(stop_at)
    stopped_at = time.monotonic()
    pg.stop(stop_mode)
    time.sleep(down)
    pg.start()
    restarted_at = time.monotonic()
    time.sleep(max(0.0, load_seconds - (time.monotonic() - started)))
    stop.set()
    hung = join_all(threads, TIMEOUT * 3)
    elapsed = time.monotonic() - started

    during = ledger.count(lambda e: stopped_at <= e["at"] <= restarted_at)
    total = ledger.count()
    bad = ledger.bad()
    verdict("pg-restart/answers", not bad and not hung,
            f"{total} requests from {clients} clients in {elapsed:.0f}s, PostgreSQL stopped ({stop_mode}) and down {restarted_at - stopped_at:.1f}s "
            f"({during} requests sent meanwhile); outcomes {ledger.summary()}; "
            f"{len(bad)} neither 2xx nor 503+Retry-After; {len(hung)} clients hung; "
            f"slowest answer {ledger.max_elapsed():.2f}s")
    verdict("pg-restart/same-process", service.alive() and service.pid == pid and service.starts == 1,
            f"pid {pid} alive={service.alive()}, started {service.starts} time(s)")
    ok_after = ledger.count(lambda e: e["at"] > restarted_at + 2 and isinstance(e["outcome"], int)
                            and e["outcome"] < 300)
    verdict("pg-restart/recovered", ok_after > 0, f"{ok_after} 2xx answers from 2 s after the restart on")

    # The database against what the clients were told.
    app = stack.app_id
    rows = pg.psql(f"SELECT id, owner, state, coalesce(closed_reason, '') FROM sessions WHERE app_id = '{app}'")
    db = {r[0]: (r[1], r[2], r[3]) for r in rows}
    opened = collections.Counter(r[0] for r in pg.psql(
        f"SELECT session_id FROM events WHERE app_id = '{app}' AND type = 'session.opened'"))
    changed = collections.Counter(r[0] for r in pg.psql(
        f"SELECT session_id FROM events WHERE app_id = '{app}' AND type = 'token.changed'"))
    closed_events = collections.Counter(r[0] for r in pg.psql(
        f"SELECT session_id FROM events WHERE app_id = '{app}' AND type = 'session.closed'"))
    problems = collections.Counter()
    told_ids = set()
    committed_503 = 0
    for owner, logins in told.items():
        per_session = collections.Counter(sid for _, sid in logins)
        for status, sid in logins:
            told_ids.add(sid)
            if sid not in db or db[sid][0] != owner:
                problems["told login missing"] += 1
        for sid, answered in per_session.items():
            if opened[sid] != 1:
                problems["opened event count != 1"] += 1
            extra = changed[sid] - answered
            if extra < 0:
                problems["answered login without token.changed"] += 1
            committed_503 += max(0, extra)
    for sid in logouts:
        if sid not in db or db[sid][1] != "closed" or db[sid][2] != "logged_out" or closed_events[sid] != 1:
            problems["answered logout not closed with one event"] += 1
    for sid, (owner, state, _) in db.items():
        if sid not in told_ids:
            problems["session nobody was told about"] += 1
        if state != "closed":
            problems["session left open"] += 1
    extra_ok = sum(detected_after_commit.values()) <= committed_503 <= sum(logins_503.values())
    if not extra_ok:
        problems["unexplained extra token.changed"] += 1
    verdict("pg-restart/database-agrees", not problems,
            f"{sum(len(v) for v in told.values())} logins answered 200/201 ({len(told_ids)} sessions), "
            f"{len(logouts)} logouts answered 200, {len(db)} session rows; "
            f"{sum(logins_503.values())} logins answered 503, of which {committed_503} had committed "
            f"(each seen by its client as 200 + the same session id on retry); "
            + (", ".join(f"{k}: {v}" for k, v in problems.items()) if problems else "no mismatch"))
    consistency(pg, app, "pg-restart/invariants")
    service.stop()
