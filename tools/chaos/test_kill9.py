"""2. kill -9 of the service mid-login, mid-sweep and mid-revocation, then a restart."""

import random
import threading
import time

from checks import Ledger, consistency, join_all, run_threads, verdict
from stack import wait_until

GRAPH_TIMEOUT = 2.0
LEASE = GRAPH_TIMEOUT * 3 + 5  # SessionService / Sweeper: validation and revocation lease


def run(stack, quick):
    pg, emulator, key, app = stack.pg, stack.emulator, stack.api_key, stack.app_id
    env = {"FBS_GRAPH_TIMEOUT": GRAPH_TIMEOUT, "FBS_SWEEP_INTERVAL": 0}
    service = stack.service("svc", **env)

    # --- mid-login: 16 clients log in and out with Graph slowed to 300 ms per call; kill -9 at random moments.
    clients, rounds = 16, (2 if quick else 4)
    people = [emulator.user_and_token(f"k{i}") for i in range(clients)]
    emulator.latency(300)
    ledger = Ledger()
    stop = threading.Event()
    answered = {}  # session id -> (owner, status) of logins answered 200/201
    lock = threading.Lock()

    def client(index):
        owner = f"chaos-kill-{index}"
        _, token = people[index]
        while not stop.is_set():
            answer = ledger.call(service.url, "POST", "/v1/sessions", key, {"owner": owner, "access_token": token},
                                 15, "login")
            if answer is None or answer.status not in (200, 201):
                time.sleep(0.1)
                continue
            with lock:
                answered[answer.json()["id"]] = (owner, answer.status)
            if random.random() < 0.5:
                ledger.call(service.url, "DELETE", f"/v1/sessions/{answer.json()['id']}", key, None, 15, "logout")

    threads = run_threads(clients, client)
    in_flight = []
    for _ in range(rounds):
        time.sleep(random.uniform(1.5, 3.0))
        in_flight.append(clients - 0)  # every client has a request outstanding or about to be
        service.kill9()
        time.sleep(0.3)
        service.start()
    time.sleep(1.5)
    stop.set()
    join_all(threads, 30)
    emulator.latency(0)
    missing = [sid for sid, (owner, _) in answered.items()
               if pg.scalar(f"SELECT count(*) FROM sessions WHERE id = '{sid}' AND owner = '{owner}'") != "1"]
    verdict("kill9/mid-login-durable", not missing,
            f"{rounds} kill -9 among {clients} looping clients; {len(answered)} answered logins, "
            f"{len(missing)} of them missing after restart; outcomes {ledger.summary()}")
    consistency(pg, app, "kill9/mid-login-invariants")

    # --- mid-revocation: logouts with revoke=true while Graph refuses them, then kill -9 while the sweep retries.
    count = 6 if quick else 12
    emulator.clear_faults()
    sessions = []
    for index in range(count):
        _, token = emulator.user_and_token(f"r{index}")
        answer = ledger.call(service.url, "POST", "/v1/sessions", key,
                             {"owner": f"chaos-revoke-{index}", "access_token": token}, 15, "login")
        sessions.append((answer.json()["id"], token))
    emulator.fault("permissions", "http_500", count=1000)
    pending = 0
    for sid, _ in sessions:
        answer = ledger.call(service.url, "DELETE", f"/v1/sessions/{sid}?revoke=true", key, None, 15, "logout")
        pending += answer is not None and answer.status == 200 and answer.json().get("revocation") == "pending"
    emulator.clear_faults()
    emulator.latency(3000, "permissions")
    service.stop()
    service.env["FBS_SWEEP_INTERVAL"] = "1"
    service.start()
    claimed = lambda: int(pg.scalar("SELECT count(*) FROM pending_revocations WHERE next_attempt > now()")) > 0
    wait_until(claimed, 20, "the sweep never claimed a revocation")
    time.sleep(1.0)
    service.kill9()
    rows_after_kill = int(pg.scalar("SELECT count(*) FROM pending_revocations"))
    emulator.latency(0, "permissions")
    service.start()
    done = lambda: pg.scalar("SELECT count(*) FROM pending_revocations") == "0"
    t0 = time.monotonic()
    try:
        wait_until(done, LEASE + 30, "revocations still pending")
    except Exception:
        pass
    remaining = int(pg.scalar("SELECT count(*) FROM pending_revocations"))
    revoked = sum(1 for _, token in sessions if emulator.token_state(token).get("invalidation"))
    verdict("kill9/no-lost-revocation", pending == count and rows_after_kill == count and remaining == 0
            and revoked == count,
            f"{pending}/{count} logouts left revocation pending; {rows_after_kill} still owed right after kill -9 "
            f"mid-DELETE; {remaining} owed after restart (retried after the {LEASE:.0f}s lease, "
            f"took {time.monotonic() - t0:.0f}s); {revoked}/{count} tokens revoked at the emulator")

    # --- mid-sweep: every live session due (validated and extended two days ago), Graph slow; kill -9 mid-pass.
    due_count = 10 if quick else 30
    for index in range(due_count):
        _, token = emulator.user_and_token(f"s{index}")
        ledger.call(service.url, "POST", "/v1/sessions", key, {"owner": f"chaos-sweep-{index}", "access_token": token},
                    15, "login")
    service.stop()
    mark = int(pg.scalar("SELECT coalesce(max(id), 0) FROM events"))
    pg.psql(f"UPDATE sessions SET validated_at = now() - interval '2 days', "
            f"token_refreshed_at = now() - interval '2 days' WHERE app_id = '{app}' AND state <> 'closed'")
    live = int(pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed'"))
    emulator.latency(1500, "me")
    service.env.update(FBS_SWEEP_INTERVAL="1", FBS_SWEEP_RATE="100", FBS_SWEEP_MAX_AGE="60",
                       FBS_REFRESH_AFTER="86400")
    service.start()
    wait_until(lambda: int(pg.scalar("SELECT count(*) FROM sessions WHERE validating_until > now()")) > 0, 20,
               "the sweep never claimed a session")
    time.sleep(3.5)
    service.kill9()
    held = int(pg.scalar("SELECT count(*) FROM sessions WHERE validating_until > now()"))
    finished = int(pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed' "
                             f"AND validated_at > now() - interval '1 hour'"))
    consistency(pg, app, "kill9/mid-sweep-invariants-after-kill", since_event=mark)
    emulator.latency(0, "me")
    service.start()
    all_fresh = lambda: pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed' "
                                  f"AND validated_at < now() - interval '1 hour'") == "0"
    t0 = time.monotonic()
    try:
        wait_until(all_fresh, LEASE + 40, "sessions never re-validated")
    except Exception:
        pass
    stale = int(pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed' "
                          f"AND validated_at < now() - interval '1 hour'"))
    # Each live session extended exactly once: one token.changed since the mark, matching token_refreshed_at.
    odd = int(pg.scalar(f"""
        SELECT count(*) FROM sessions s WHERE s.app_id = '{app}' AND s.state <> 'closed' AND
          ((SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.type = 'token.changed' AND e.id > {mark}) <> 1
           OR s.token_refreshed_at < now() - interval '1 hour')"""))
    closed = int(pg.scalar(f"SELECT count(*) FROM events WHERE id > {mark} AND type = 'session.closed'"))
    verdict("kill9/mid-sweep-recovers", stale == 0 and odd == 0 and closed == 0 and held > 0,
            f"{live} due sessions; kill -9 with {finished} finished and {held} leases held; after restart all "
            f"re-validated in {time.monotonic() - t0:.0f}s ({stale} stale), {odd} not extended exactly once, "
            f"{closed} closed")
    consistency(pg, app, "kill9/final-invariants")
    service.stop()
