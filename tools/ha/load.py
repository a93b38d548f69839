"""Steady load through nginx, and the book of what every client was told.

- owner clients: each owner has three Facebook users (emulator tokens) and loops over login (then status of the
  new session), slot switch (`PUT /v1/owners/{owner}/active`) and logout. Each operation is repeated until it is
  acknowledged (2xx): logins are idempotent per owner and user, logouts and switches idempotent, so the client
  always knows what it was told, and a 503 that committed anyway is found by the retry (200 and the same id).
- status readers: `GET /v1/sessions/{id}` of random acknowledged sessions; every answer's state is a sighting.
- one long poll: `GET /v1/events?after=...&wait=5` from the start of the feed, for the whole run.
- one token reader: `GET /v1/sessions/{id}/token` of random acknowledged sessions; the request id of every 200 is
  noted (its `token.read` audit entry must exist afterwards). The token itself is never kept.
- one audit reader: `GET /v1/audit?after=...` from the start of the log, for the whole run.
- webhook deliveries arrive at fleet.WebhookReceiver.

Every request goes through tools/chaos's `checks.Ledger` (outcome, Retry-After, start, duration), one ledger
for the whole run; the scenarios slice it by time.
"""

import random
import threading
import time

import checks  # tools/chaos/checks.py (fleet.py put tools/chaos on sys.path)

OWNERS = 8
USERS_PER_OWNER = 3
READERS = 2
AUDIT_PAUSE = 0.5      # seconds between the audit reader's pages when it is caught up
POLL_WAIT = 5          # seconds a long poll waits
RETRY_PAUSE = 0.25     # seconds between attempts of an unacknowledged operation
GIVE_UP = 120.0        # seconds after which a client stops repeating one operation (a verdict, not a hang)
CLIENT_TIMEOUT = 60.0  # the client's own socket timeout: far beyond any bound, so that slowness is measured


class Book:
    """What the clients were told, and when (monotonic seconds)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.logins = {}          # session id -> (owner, facebook user id, acknowledged at)
        self.logout_sent = {}     # session id -> when its first DELETE was sent
        self.logouts = {}         # session id -> when the logout was acknowledged
        self.sightings = []       # (session id, state, sent at, answered at)
        self.switches = 0
        self.gave_up = []         # (operation, path) a client stopped repeating
        self.unexpected = []      # (what, session id, detail)

    def login(self, session_id, owner, user):
        with self.lock:
            known = self.logins.get(session_id)
            if known and (known[0], known[1]) != (owner, user):
                self.unexpected.append(("login answered another owner's or user's session", session_id, ""))
            self.logins.setdefault(session_id, (owner, user, time.monotonic()))

    def random_session(self):
        with self.lock:
            return random.choice(list(self.logins)) if self.logins else None

    def random_open_session(self):
        """A session logged in and with no logout sent yet, or None."""
        with self.lock:
            open_ones = [session for session in self.logins if session not in self.logout_sent]
            return random.choice(open_ones) if open_ones else None


class Load:
    """The clients. `start()` once; `run()`/`pause()` around each scenario; `close()` at the end."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.base = fleet.url
        self.key = fleet.api_key
        self.ledger = checks.Ledger()
        self.book = Book()
        self.feed = []            # events in the order the long poll returned them
        self.feed_lock = threading.Lock()
        self.token_reads = []     # request ids of the token reads answered 200
        self.audit = []           # audit entries' ids in the order GET /v1/audit returned them
        self.running = threading.Event()   # set: owner clients and readers work
        self.closing = threading.Event()   # set: every thread ends
        self.threads = []
        self.busy = 0             # owner clients inside an operation
        self.busy_lock = threading.Lock()
        self.people = [[fleet.emulator.user_and_token(f"o{o}u{u}") for u in range(USERS_PER_OWNER)]
                       for o in range(OWNERS)]

    # --- lifecycle -----------------------------------------------------------------------------------------------

    def start(self):
        targets = ([(self._owner, index) for index in range(OWNERS)] + [(self._reader, index) for index in
                                                                        range(READERS)] + [(self._poll, 0)] +
                   [(self._token_reader, 0), (self._audit_reader, 0)])
        for target, index in targets:
            thread = threading.Thread(target=target, args=(index,), name=f"{target.__name__}-{index}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def run(self):
        self.running.set()

    def pause(self):
        """Stops starting operations; each client finishes (acknowledges) the one it is in."""
        self.running.clear()

    def idle(self):
        """True when no owner client is inside an operation."""
        with self.busy_lock:
            return self.busy == 0

    def close(self, timeout=GIVE_UP + 10):
        self.running.clear()
        self.closing.set()
        return checks.join_all(self.threads, timeout)

    def _enter(self, delta):
        with self.busy_lock:
            self.busy += delta

    # --- requests ------------------------------------------------------------------------------------------------

    def call(self, method, path, body=None, tag=None):
        return self.ledger.call(self.base, method, path, self.key, body, CLIENT_TIMEOUT, tag)

    def until_acknowledged(self, method, path, body, tag):
        """Repeats one operation until it is answered 2xx; returns that answer, or None after GIVE_UP seconds."""
        deadline = time.monotonic() + GIVE_UP
        while True:
            answer = self.call(method, path, body, tag)
            if answer is not None and 200 <= answer.status < 300:
                return answer
            if time.monotonic() > deadline:
                with self.book.lock:
                    self.book.gave_up.append((tag, path))
                return None
            time.sleep(RETRY_PAUSE)

    # --- clients -------------------------------------------------------------------------------------------------

    def _owner(self, index):
        owner = f"ha-owner-{index}"
        people = self.people[index]
        live = {}  # facebook user id -> session id (acknowledged, not logged out)
        while not self.closing.is_set():
            if not self.running.wait(0.2):
                continue
            self._enter(1)
            try:
                self._owner_step(owner, people, live)
            finally:
                self._enter(-1)
            time.sleep(0.02)

    def _owner_step(self, owner, people, live):
        book = self.book
        free = [person for person in people if person[0] not in live]
        roll = random.random()
        if free and (len(live) < 2 or roll < 0.4):
            user, token = random.choice(free)
            answer = self.until_acknowledged("POST", "/v1/sessions", {"owner": owner, "access_token": token},
                                             "login")
            if answer is None:
                return
            session_id = (answer.json() or {}).get("id")
            book.login(session_id, owner, user)
            live[user] = session_id
            status = self.until_acknowledged("GET", f"/v1/sessions/{session_id}", None, "status")
            if status is not None and (status.json() or {}).get("state") == "closed":
                with book.lock:
                    book.unexpected.append(("a login just acknowledged reads as closed", session_id, ""))
        elif live and roll < 0.7:
            user = random.choice(list(live))
            session_id = live.pop(user)
            with book.lock:
                book.logout_sent.setdefault(session_id, time.monotonic())
            if self.until_acknowledged("DELETE", f"/v1/sessions/{session_id}", None, "logout") is not None:
                with book.lock:
                    book.logouts[session_id] = time.monotonic()
        elif live:
            session_id = random.choice(list(live.values()))
            if self.until_acknowledged("PUT", f"/v1/owners/{owner}/active", {"session_id": session_id},
                                       "switch") is not None:
                with book.lock:
                    book.switches += 1

    def _reader(self, index):
        while not self.closing.is_set():
            if not self.running.wait(0.2):
                continue
            session_id = self.book.random_session()
            if session_id is None:
                time.sleep(0.1)
                continue
            sent = time.monotonic()
            answer = self.call("GET", f"/v1/sessions/{session_id}", None, "status")
            if answer is not None and answer.status == 200:
                with self.book.lock:
                    self.book.sightings.append((session_id, (answer.json() or {}).get("state"), sent,
                                                time.monotonic()))
            elif answer is None or answer.status >= 500:
                time.sleep(RETRY_PAUSE)

    def _poll(self, _):
        cursor = None
        while not self.closing.is_set():
            path = f"/v1/events?wait={POLL_WAIT}&limit=200" + (f"&after={cursor}" if cursor else "")
            answer = self.call("GET", path, None, "events")
            if answer is None or answer.status != 200:
                time.sleep(RETRY_PAUSE)
                continue
            page = answer.json() or {}
            with self.feed_lock:
                self.feed.extend(page.get("events", []))
            cursor = page.get("next_cursor") or cursor

    def feed_ids(self):
        with self.feed_lock:
            return [str(event.get("id")) for event in self.feed]

    def _token_reader(self, _):
        while not self.closing.is_set():
            if not self.running.wait(0.2):
                continue
            session_id = self.book.random_open_session()
            if session_id is None:
                time.sleep(0.1)
                continue
            answer = self.call("GET", f"/v1/sessions/{session_id}/token", None, "token")
            if answer is not None and answer.status == 200 and answer.header("x-request-id"):
                with self.feed_lock:
                    self.token_reads.append(answer.header("x-request-id"))
            time.sleep(0.05 if answer is not None and answer.status < 500 else RETRY_PAUSE)

    def _audit_reader(self, _):
        cursor = None
        while not self.closing.is_set():
            path = "/v1/audit?limit=500" + (f"&after={cursor}" if cursor else "")
            answer = self.call("GET", path, None, "audit")
            if answer is None or answer.status != 200:
                time.sleep(RETRY_PAUSE)
                continue
            page = answer.json() or {}
            entries = page.get("entries", [])
            with self.feed_lock:
                self.audit.extend(str(entry.get("id")) for entry in entries)
            cursor = page.get("next_cursor") or cursor
            if not entries:
                time.sleep(AUDIT_PAUSE)

    def acknowledged_token_reads(self):
        with self.feed_lock:
            return list(self.token_reads)

    def audit_ids(self):
        with self.feed_lock:
            return list(self.audit)
