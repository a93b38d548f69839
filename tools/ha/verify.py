"""What must hold after every scenario, checked against the database (the current primary, through HAProxy), the
clients' book, the long poll's feed and the webhook deliveries; and the figures of the scenario's table row.

Verdicts go through tools/chaos's `checks.verdict` (one PASS/FAIL line each, collected in `checks.RESULTS`).
"""

import collections

import checks  # tools/chaos/checks.py


def answered_ok(entry):
    """2xx; or, for a token read, 410: the token reader picks sessions with no logout sent, but an owner client may
    log one out while the read is on its way, and `session_closed` is then the right answer."""
    outcome = entry["outcome"]
    return isinstance(outcome, int) and (200 <= outcome < 300 or (entry["route"] == "token" and outcome == 410))


def acceptable(entry):
    """2xx, or 503 with Retry-After: what a client may be told while the database fails over."""
    return answered_ok(entry) or (entry["outcome"] == 503 and bool(entry["retry_after"]))


def failures_by_status(entries):
    counts = collections.Counter(str(entry["outcome"]) for entry in entries if not answered_ok(entry))
    return ", ".join(f"{status}: {count}" for status, count in sorted(counts.items())) or "none"


def outage(entries, fault_at):
    """(outage, back_after). The outage is how long requests were failing: the total length of the time covered
    by failed requests (each from its start to its answer; overlapping and touching ones merged). back_after is
    from the fault to the end of the last failed request (0, 0 when nothing failed): after it, everything worked."""
    spans = sorted((entry["at"], entry["at"] + entry["elapsed"]) for entry in entries if not answered_ok(entry))
    if not spans:
        return 0.0, 0.0
    total, (start, end) = 0.0, spans[0]
    for begin, finish in spans[1:]:
        if begin > end:
            total += end - start
            start, end = begin, finish
        else:
            end = max(end, finish)
    total += end - start
    return total, max(0.0, max(finish for _, finish in spans) - fault_at)


def over_bound(entries, bounds):
    """Entries slower than their route's bound plus one second; the longest request that is not a long poll;
    and the longest long poll."""
    slow = [entry for entry in entries if entry["elapsed"] > bounds.get(entry["route"], bounds["*"]) + 1.0]
    polls = [entry for entry in entries if entry["route"] in bounds and entry["route"] != "*"]
    others = [entry for entry in entries if entry not in polls]
    longest = max(others, key=lambda entry: entry["elapsed"], default={"elapsed": 0.0, "route": "-"})
    longest_poll = max(polls, key=lambda entry: entry["elapsed"], default={"elapsed": 0.0, "route": "-"})
    return slow, longest, longest_poll


def sessions_match_book(database, app_id, book):
    """Every acknowledged login is stored for its owner and user; those never logged out are not closed; every
    acknowledged logout is closed as `logged_out`; no status read saw a logout undone or a login closed.

    Returns (lost, problems): the number of acknowledged writes the database or an answer contradicts, and the
    first few of them described."""
    rows = database.psql(f"SELECT id, owner, facebook_user_id, state, coalesce(closed_reason, '') FROM sessions "
                         f"WHERE app_id = '{app_id}'")
    stored = {row[0]: row[1:] for row in rows}
    problems = []
    with book.lock:
        logins = dict(book.logins)
        logout_sent = dict(book.logout_sent)
        logouts = dict(book.logouts)
        sightings = list(book.sightings)
        problems.extend(f"{what} ({session_id})" for what, session_id, _ in book.unexpected)
    for session_id, (owner, user, _) in logins.items():
        row = stored.get(session_id)
        if row is None:
            problems.append(f"acknowledged login {session_id} is not in the database")
        elif (row[0], row[1]) != (owner, user):
            problems.append(f"acknowledged login {session_id} is stored for another owner or user")
        elif session_id in logouts and (row[2], row[3]) != ("closed", "logged_out"):
            problems.append(f"acknowledged logout {session_id} is {row[2]} ({row[3] or 'no reason'})")
        elif session_id not in logout_sent and row[2] == "closed":
            problems.append(f"acknowledged login {session_id} is closed ({row[3]}) without a logout")
    for session_id, state, sent, answered in sightings:
        if state == "open" and session_id in logouts and logouts[session_id] < sent:
            problems.append(f"{session_id} read as open after its logout was acknowledged")
        if state == "closed" and (session_id not in logout_sent or logout_sent[session_id] > answered):
            problems.append(f"{session_id} read as closed although nobody logged it out")
    return len(problems), problems


def feed_matches_database(database, app_id, feed_ids, delivered):
    """Every committed event (the database's, in (transaction, id) order, the feed's order) is in the feed exactly
    once and in that order, and was delivered to the webhook at least once.

    Returns a dict: committed, missing (not in the feed), duplicated (in the feed more than once), phantom (in the
    feed but not in the database), out_of_order, undelivered (never reached the webhook), phantom_delivered (sent
    to the webhook but not in the database)."""
    committed = [row[0] for row in database.psql(f"SELECT id FROM events WHERE app_id = '{app_id}' "
                                                 f"ORDER BY tx, id")]
    known = set(committed)
    seen = collections.Counter(feed_ids)
    in_feed_order = [event for event in dict.fromkeys(feed_ids) if event in known]
    order = [event for event in committed if event in seen]
    out_of_order = sum(1 for a, b in zip(in_feed_order, order) if a != b)
    return {
        "committed": len(committed),
        "missing": len(known - set(seen)),
        "duplicated": sum(count - 1 for count in seen.values() if count > 1),
        "phantom": len(set(seen) - known),
        "out_of_order": out_of_order,
        "undelivered": len(known - set(delivered)),
        "phantom_delivered": len(set(delivered) - known),
    }


def audit_matches_database(database, app_id, shown, token_reads):
    """Every acknowledged token read has exactly one `token.read` entry (by its request id), and what
    `GET /v1/audit` showed is the database's log: each entry once, in (transaction, id) order, none that the
    database lacks.

    Returns a dict: entries (the app's, in the database), unrecorded (acknowledged token reads without an entry),
    doubled (request ids with more than one entry), missing (entries never shown), duplicated (shown more than
    once), phantom (shown but not in the database), out_of_order."""
    rows = database.psql(f"SELECT id, action, coalesce(request_id, '') FROM audit_log "
                         f"WHERE app_id = '{app_id}' OR app_id IS NULL ORDER BY tx, id")
    committed = [row[0] for row in rows]
    known = set(committed)
    per_request = collections.Counter(row[2] for row in rows if row[1] == "token.read")
    seen = collections.Counter(shown)
    in_shown_order = [entry for entry in dict.fromkeys(shown) if entry in known]
    order = [entry for entry in committed if entry in seen]
    return {
        "entries": len(committed),
        "unrecorded": sum(1 for request in set(token_reads) if per_request[request] == 0),
        "doubled": sum(1 for count in per_request.values() if count > 1),
        "missing": len(known - set(seen)),
        "duplicated": sum(count - 1 for count in seen.values() if count > 1),
        "phantom": len(set(seen) - known),
        "out_of_order": sum(1 for a, b in zip(in_shown_order, order) if a != b),
    }


def report(name, row, ok, detail):
    """One verdict line for a scenario's check, and the flag folded into its row."""
    row["ok"] = row.get("ok", True) and ok
    return checks.verdict(f"{name}/{detail[0]}", ok, detail[1])


def table(rows, bounds_text):
    """The HA table: one line per scenario."""
    header = ("scenario", "outage", "back after", "requests", "failed, by status", "longest request", "lost",
              "duplicated", "result")
    lines = [header]
    for row in rows:
        lines.append((row["name"], f"{row['outage']:.1f} s", f"{row['back_after']:.1f} s", str(row["requests"]),
                      row["failed"], f"{row['longest']:.2f} s ({row['longest_route']})", str(row["lost"]),
                      str(row["duplicated"]), "PASS" if row.get("ok") else "FAIL"))
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(text) + (f"\n(outage: the time covered by failed requests; back after: from the fault to the "
                               f"end of the last failed request; {bounds_text})")
