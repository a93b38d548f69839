"""Verdicts, request bookkeeping and the database invariants every fault test ends with."""

import collections
import threading
import time

from stack import request

RESULTS = []


def verdict(name, ok, figures):
    line = f"{'PASS' if ok else 'FAIL'} {name}: {figures}"
    print(line, flush=True)
    RESULTS.append((name, ok, line))
    return ok


class Ledger:
    """Every request a test client made, with its outcome. Thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries = []

    def call(self, base, method, path, key, body=None, timeout=30.0, tag=None):
        """Returns the Response, or None when the request got no HTTP answer (recorded as reset/timeout)."""
        started = time.monotonic()
        try:
            answer = request(base, method, path, body=body, key=key, timeout=timeout)
            outcome = answer.status
        except TimeoutError:
            answer, outcome = None, "timeout"
        except OSError as error:
            answer, outcome = None, f"reset:{type(error).__name__}"
        except Exception as error:  # http.client.RemoteDisconnected, BadStatusLine, ...
            answer, outcome = None, f"reset:{type(error).__name__}"
        entry = {"method": method, "route": tag or path.split("?")[0], "outcome": outcome,
                 "retry_after": answer.header("retry-after") if answer else None,
                 "elapsed": time.monotonic() - started, "at": started}
        with self.lock:
            self.entries.append(entry)
        return answer

    def summary(self):
        with self.lock:
            counts = collections.Counter(str(e["outcome"]) for e in self.entries)
        return ", ".join(f"{k}:{v}" for k, v in sorted(counts.items()))

    def bad(self, allow=lambda entry: False):
        """Entries that are neither 2xx nor a 503 with Retry-After (nor allowed by the test)."""
        with self.lock:
            return [e for e in self.entries
                    if not (isinstance(e["outcome"], int) and 200 <= e["outcome"] < 300)
                    and not (e["outcome"] == 503 and e["retry_after"])
                    and not allow(e)]

    def count(self, predicate=lambda entry: True):
        with self.lock:
            return sum(1 for e in self.entries if predicate(e))

    def max_elapsed(self):
        with self.lock:
            return max((e["elapsed"] for e in self.entries), default=0.0)


def consistency(pg, app_id, name, since_event=0):
    """The invariants that hold after any fault: no event without its change, no change without its event,
    no slot or user held twice, the active pointer on a live session, no half-closed row."""
    problems = {}
    sql = {
        "sessions without exactly one session.opened": f"""
            SELECT count(*) FROM sessions s WHERE s.app_id = '{app_id}' AND
              (SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.type = 'session.opened') <> 1""",
        "sessions without a token.changed": f"""
            SELECT count(*) FROM sessions s WHERE s.app_id = '{app_id}' AND NOT EXISTS
              (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.type = 'token.changed')""",
        "closed sessions without exactly one session.closed": f"""
            SELECT count(*) FROM sessions s WHERE s.app_id = '{app_id}' AND s.state = 'closed' AND
              (SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.type = 'session.closed') <> 1""",
        "live sessions with a session.closed": f"""
            SELECT count(*) FROM sessions s WHERE s.app_id = '{app_id}' AND s.state <> 'closed' AND EXISTS
              (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.type = 'session.closed')""",
        "events for unknown sessions": f"""
            SELECT count(*) FROM events e WHERE e.app_id = '{app_id}' AND e.session_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = e.session_id)""",
        "slots held twice": f"""
            SELECT count(*) FROM (SELECT 1 FROM sessions WHERE app_id = '{app_id}' AND state <> 'closed'
              GROUP BY owner, slot HAVING count(*) > 1) x""",
        "users held twice": f"""
            SELECT count(*) FROM (SELECT 1 FROM sessions WHERE app_id = '{app_id}' AND state <> 'closed'
              GROUP BY owner, facebook_user_id HAVING count(*) > 1) x""",
        "active pointers to closed sessions": f"""
            SELECT count(*) FROM owners o JOIN sessions s ON s.id = o.active_session_id
            WHERE o.app_id = '{app_id}' AND s.state = 'closed'""",
        "half-closed or tokenless rows": f"""
            SELECT count(*) FROM sessions WHERE app_id = '{app_id}' AND
              ((state = 'closed') <> (token_box IS NULL) OR (state = 'closed') <> (closed_reason IS NOT NULL)
               OR (state <> 'closed' AND profile IS NULL))""",
        "duplicate events (same session, type, tx)": f"""
            SELECT count(*) FROM (SELECT 1 FROM events WHERE app_id = '{app_id}' AND id > {since_event}
              AND type IN ('session.opened', 'session.closed')
              GROUP BY session_id, type HAVING count(*) > 1) x""",
        "pending revocations of live sessions": f"""
            SELECT count(*) FROM pending_revocations p JOIN sessions s ON s.id = p.session_id
            WHERE s.state <> 'closed'""",
    }
    for label, query in sql.items():
        value = int(pg.scalar(query))
        if value:
            problems[label] = value
    totals = pg.psql(f"SELECT count(*), count(*) FILTER (WHERE state <> 'closed') FROM sessions "
                     f"WHERE app_id = '{app_id}'")[0]
    events = pg.scalar(f"SELECT count(*) FROM events WHERE app_id = '{app_id}'")
    figures = f"{totals[0]} sessions ({totals[1]} live), {events} events"
    if problems:
        figures += "; " + ", ".join(f"{k}: {v}" for k, v in problems.items())
    else:
        figures += "; every change has its event and every event its change, no slot or user held twice"
    return verdict(name, not problems, figures)


def run_threads(count, target):
    threads = [threading.Thread(target=target, args=(index,), daemon=True) for index in range(count)]
    for thread in threads:
        thread.start()
    return threads


def join_all(threads, timeout):
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]
