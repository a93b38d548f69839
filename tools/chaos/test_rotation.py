"""5. Key rotation under load: rolling restart onto "new,old", `fbsessiond reencrypt`, rolling restart onto "new"."""

import random
import re
import threading
import time

from checks import Ledger, consistency, join_all, run_threads, verdict
from stack import new_key


class Router:
    """What a load balancer does: sends each request to an instance that is in rotation."""

    def __init__(self, services):
        self.lock = threading.Lock()
        self.live = list(services)

    def pick(self):
        with self.lock:
            return random.choice(self.live)

    def drain(self, service):
        with self.lock:
            self.live.remove(service)

    def add(self, service):
        with self.lock:
            self.live.append(service)


def rolling_restart(router, services, keys):
    for service in services:
        router.drain(service)
        time.sleep(0.5)  # requests already routed to it get there before it stops listening
        service.stop()   # SIGTERM: in-flight requests finish within FBS_SHUTDOWN_GRACE
        service.env["FBS_ENCRYPTION_KEYS"] = keys
        service.start()
        router.add(service)


def run(stack, quick):
    pg, emulator, key, app = stack.pg, stack.emulator, stack.api_key, stack.app_id
    phase = 3.0 if quick else 10.0
    clients, persistent = 16, (20 if quick else 60)
    services = [stack.service("r1"), stack.service("r2")]
    router = Router(services)
    ledger = Ledger()
    ids = []
    for index in range(persistent):
        _, token = emulator.user_and_token(f"p{index}")
        answer = ledger.call(router.pick().url, "POST", "/v1/sessions", key,
                             {"owner": f"chaos-keep-{index}", "access_token": token}, 30, "login")
        ids.append(answer.json()["id"])
    people = [emulator.user_and_token(f"t{i}") for i in range(clients)]
    stop = threading.Event()

    def client(index):
        owner = f"chaos-rot-{index}"
        _, token = people[index]
        while not stop.is_set():
            answer = ledger.call(router.pick().url, "POST", "/v1/sessions", key,
                                 {"owner": owner, "access_token": token}, 30, "login")
            if answer is None or answer.status not in (200, 201):
                time.sleep(0.2)
                continue
            sid = answer.json()["id"]
            ledger.call(router.pick().url, "GET", f"/v1/sessions/{sid}?validate=always", key, None, 30, "status")
            ledger.call(router.pick().url, "GET", f"/v1/sessions/{sid}/token", key, None, 30, "token")
            ledger.call(router.pick().url, "GET", f"/v1/sessions/{random.choice(ids)}/token", key, None, 30, "token")
            ledger.call(router.pick().url, "DELETE", f"/v1/sessions/{sid}", key, None, 30, "logout")

    old = stack.keys
    new = new_key("k2")
    started = time.monotonic()
    threads = run_threads(clients, client)
    time.sleep(phase)
    rolling_restart(router, services, f"{new},{old}")
    time.sleep(phase / 2)
    output = stack.admin(["reencrypt", "--batch", "50"], {"FBS_ENCRYPTION_KEYS": f"{new},{old}"})
    left = sum(int(n) for n in re.findall(r": (\d+) left", output))
    moved = re.findall(r"(\d+) sealed value", output)
    time.sleep(phase / 2)
    rolling_restart(router, services, new)
    time.sleep(phase)
    stop.set()
    join_all(threads, 60)
    elapsed = time.monotonic() - started
    failed = [e for e in ledger.entries if not (isinstance(e["outcome"], int) and 200 <= e["outcome"] < 300)]
    verdict("rotation/no-request-fails", not failed,
            f"{len(ledger.entries)} requests from {clients} clients in {elapsed:.0f}s across 2 rolling restarts "
            f"and a reencrypt ({moved[0] if moved else '?'} values to move, {left} left after it); "
            f"outcomes {ledger.summary()}")
    old_rows = {}
    for table, column in (("sessions", "token_key_id"), ("pending_revocations", "token_key_id"),
                          ("apps", "secret_key_id"), ("webhooks", "secret_key_id")):
        old_rows[table] = int(pg.scalar(f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL "
                                        f"AND {column} <> 'k2'"))
    live = [r[0] for r in pg.psql(f"SELECT id FROM sessions WHERE app_id = '{app}' AND state <> 'closed'")]
    readable = valid = 0
    for sid in live:
        answer = ledger.call(services[0].url, "GET", f"/v1/sessions/{sid}/token", key, None, 30, "token")
        if answer is not None and answer.status == 200 and answer.json().get("access_token"):
            readable += 1
            state = emulator.token_state(answer.json()["access_token"])
            valid += not state.get("invalidation")
    verdict("rotation/every-token-decrypts-without-old-key",
            left == 0 and not any(old_rows.values()) and readable == len(live) == valid and len(live) >= persistent,
            f"old key removed: {readable}/{len(live)} live sessions' tokens read through GET /token "
            f"({valid} valid at the emulator); rows still under the old key: {old_rows}")
    consistency(pg, app, "rotation/invariants")
    for service in services:
        service.stop()
