"""4. Two and three instances on one database: sweep and status after the TTL, one Graph validation per session."""

import random
import threading
import time

from checks import Ledger, consistency, join_all, run_threads, verdict
from stack import wait_until

TTL = 8


def hammer(ledger, services, key, ids, seconds, per_instance=2):
    """Every thread walks all sessions (shuffled) with validate=auto against its instance, for `seconds`."""
    stop = threading.Event()

    def walk(index):
        service = services[index % len(services)]
        while not stop.is_set():
            order = list(ids)
            random.shuffle(order)
            for sid in order:
                ledger.call(service.url, "GET", f"/v1/sessions/{sid}", key, None, 30, "status")
                if stop.is_set():
                    break

    threads = run_threads(per_instance * len(services), walk)
    time.sleep(seconds)
    stop.set()
    join_all(threads, 40)


def run(stack, quick):
    pg, emulator, key, app = stack.pg, stack.emulator, stack.api_key, stack.app_id
    count = 20 if quick else 60
    env = dict(FBS_VALIDATE_TTL=TTL, FBS_SWEEP_INTERVAL=1, FBS_SWEEP_RATE=200, FBS_SWEEP_MAX_AGE=60,
               FBS_GRAPH_TIMEOUT=5)
    first = stack.service("i1", **env)
    ledger = Ledger()
    ids = []
    for index in range(count):
        _, token = emulator.user_and_token(f"m{index}")
        answer = ledger.call(first.url, "POST", "/v1/sessions", key, {"owner": f"chaos-multi-{index}",
                                                                       "access_token": token}, 30, "login")
        ids.append(answer.json()["id"])
    services = [first]
    for instances in (2, 3):
        while len(services) < instances:
            services.append(stack.service(f"i{len(services) + 1}", **env))
        mark = int(pg.scalar("SELECT coalesce(max(id), 0) FROM events"))
        emulator.reset_counters()
        entries_before = len(ledger.entries)
        # Due for everyone: validated and extended two days ago; the sweeps of all instances and status requests
        # on all instances race for each session.
        pg.psql(f"UPDATE sessions SET validated_at = now() - interval '2 days', "
                f"token_refreshed_at = now() - interval '2 days' WHERE app_id = '{app}' AND state <> 'closed'")
        hammer(ledger, services, key, ids, 4.0)
        done = lambda: pg.scalar(f"SELECT count(*) FROM sessions WHERE app_id = '{app}' AND state <> 'closed' "
                                 f"AND validated_at < now() - interval '1 hour'") == "0"
        wait_until(done, 30, "sessions left unvalidated")
        counters = emulator.counters()
        events = pg.psql(f"SELECT type, count(*), count(DISTINCT session_id) FROM events WHERE id > {mark} "
                         f"GROUP BY type")
        by_type = {t: (int(n), int(d)) for t, n, d in events}
        extended = by_type.get("token.changed", (0, 0))
        others = {t: v for t, v in by_type.items() if t != "token.changed"}
        answers = ledger.entries[entries_before:]
        failed = [e for e in answers if e["outcome"] != 200]
        verdict(f"instances-{instances}/sweep-and-status-after-due",
                counters.get("me", 0) == count and counters.get("oauth_access_token", 0) == count
                and extended == (count, count) and not others and not failed,
                f"{instances} instances, {count} due sessions, {len(answers)} status requests + {instances} sweeps: "
                f"me {counters.get('me', 0)}, permissions {counters.get('permissions', 0)}, "
                f"exchanges {counters.get('oauth_access_token', 0)} (want {count} each); token.changed "
                f"{extended[0]} for {extended[1]} sessions; other events {others or 'none'}; "
                f"{len(failed)} non-200")
        # A TTL later, status from every instance at once: one more validation per session, no extension.
        time.sleep(TTL + 1)
        mark = int(pg.scalar("SELECT coalesce(max(id), 0) FROM events"))
        emulator.reset_counters()
        entries_before = len(ledger.entries)
        hammer(ledger, services, key, ids, 3.0)
        counters = emulator.counters()
        new_events = int(pg.scalar(f"SELECT count(*) FROM events WHERE id > {mark}"))
        answers = ledger.entries[entries_before:]
        failed = [e for e in answers if e["outcome"] != 200]
        verdict(f"instances-{instances}/status-after-ttl",
                counters.get("me", 0) == count and counters.get("oauth_access_token", 0) == 0 and new_events == 0
                and not failed,
                f"{len(answers)} status requests on {instances} instances after the {TTL}s TTL: me "
                f"{counters.get('me', 0)} (want {count}), exchanges {counters.get('oauth_access_token', 0)}, "
                f"{new_events} events, {len(failed)} non-200")
    consistency(pg, app, "instances/invariants")
    for service in services:
        service.stop()
