"""The `traces` system check (scripts/test-system traces): the spans fbsessiond exports, as a collector sees them.

The built service runs on its own PostgreSQL with the Graph emulator as Facebook (tools/lib/livestack.py), with
OTLP/HTTP export to tools/otel/receiver.py, which decodes every request with opentelemetry-proto's classes. Then:

1. A token login (`POST /v1/sessions`) with an incoming W3C `traceparent`: its server span continues the incoming
   trace (same trace id, the incoming span as parent) and carries the route, method, status, path, request id and
   key id; its four Graph calls (`graph debug_token`, `graph oauth/access_token`, `graph me`,
   `graph me/permissions`, the calls SessionService.login makes at once) and its `postgresql transaction` are
   CLIENT children of it, all in the one trace, every child's times inside its parent's. The service's log lines
   of that request carry the trace id and the server span's id.
2. A status call with `traceparent` flags 00 under `parentbased_always_on` makes no span at all (a sampled call
   after it does, so the export ran). Status calls with a `traceparent` that W3C Trace Context says to ignore (an
   all-zero trace or parent id, version ff, upper-case hex, a short field) each start a new root trace.
3. Every webhook delivery of the login's events carries a `traceparent` naming an exported, sampled
   `webhook delivery` CLIENT span of that trace id.
4. No exported span, no byte of any request the receiver got and no line of the service's logs holds a token,
   the API key or its secret part, the app secret, the webhook secret, an appsecret_proof or the collector
   credential; the receiver refused nothing (every body decoded, every request carried the credential that
   OTEL_EXPORTER_OTLP_HEADERS names, as a collector behind an authenticating proxy wants).
5. Faults: a service exporting to a receiver that hangs, one that answers 503 and a port where nothing listens
   answers 200 status calls in a row, each under a bound that a blocking export would break, with a median close
   to the healthy service's, and its `fbs_otel_dropped_spans_total` rises; it stops on SIGTERM.
6. Off without an endpoint: a service with the other OTEL_ variables but no endpoint sends nothing to
   OpenTelemetry's default one (a receiver on 127.0.0.1:4318, when that port is free) and counts no export.
7. On a fresh instance (its caches empty), exporting like the first: concurrent traced status calls make a
   `postgresql batch` span (CLIENT, `db.operation.batch.size` ≥ 1) under one of their server spans, its links
   only to the others; a picture's first fetch makes a `picture fetch` CLIENT child with status 200; a Limited
   Login, the first, fetches the key set: a `jwks fetch` CLIENT child of its server span.

The decoded login trace (tree, names, kinds, durations, attributes) is printed and written to --out (default
.build/traces/login-trace.txt) for docs/operations.md. With the secrets transcript on (FBS_SECRETS_TRANSCRIPT_DIR),
the receivers' decoded spans and raw bodies, the webhook deliveries and the service logs go to the run directory's
`traces` folder, for tools/secrets/scan-run.

Usage: traces_test.py [--binary PATH] [--out FILE]     (binary default: $FBSESSIOND, else .build/debug/fbsessiond)
Prints PASS/FAIL per assertion; exits 1 on any failure. Prints no secret.
"""

import argparse
import base64
import glob
import http.server
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tools", "otel"))
import livestack  # noqa: E402
import otlp  # noqa: E402
import transcript  # noqa: E402  (tools/secrets, put on the path by livestack)

SERVICE_NAME = "fbsessiond-traces-check"
# The four Graph calls of a token login (Sources/FBSessionsCore/Sessions/SessionService+Login.swift), as spans.
LOGIN_GRAPH_SPANS = ("graph debug_token", "graph oauth/access_token", "graph me", "graph me/permissions")
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
# The export settings of every service here: a short schedule delay so that spans arrive within a second.
EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_SERVICE_NAME": SERVICE_NAME}
# The fault services: a small queue and batch, so that 200 requests overflow the queue, and a long export timeout
# (5 s), so that an export which held up requests would make them far slower than REQUEST_BOUND.
FAULT_EXPORT = dict(EXPORT, OTEL_TRACES_SAMPLER="always_on", OTEL_BSP_SCHEDULE_DELAY="100",
                    OTEL_BSP_MAX_QUEUE_SIZE="64", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="16",
                    OTEL_EXPORTER_OTLP_TIMEOUT="5000", OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="5000",
                    OTEL_BSP_EXPORT_TIMEOUT="5000")
FAULT_REQUESTS = 200
REQUEST_BOUND = 1.0  # seconds: any one status call of a fault service; a blocked export would take 5 s
DEFAULT_OTLP_PORT = 4318  # OTLP/HTTP's default port (the SDKs' default endpoint is http://localhost:4318)


class Checks:
    """PASS/FAIL lines, counted."""

    def __init__(self):
        self.failed = []

    def check(self, name, ok, detail=""):
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, ": " + detail if detail else ""), flush=True)
        if not ok:
            self.failed.append(name)
        return ok


def call(url, method, path, key=None, body=None, headers=None, timeout=30):
    """(status, headers, parsed JSON or raw bytes, seconds)."""
    all_headers = dict(headers or {})
    if key:
        all_headers["Authorization"] = "Bearer " + key
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url + path, data=data, method=method, headers=all_headers)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, head, raw = answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        status, head, raw = error.code, error.headers, error.read()
    elapsed = time.monotonic() - started
    try:
        parsed = json.loads(raw or b"null")
    except ValueError:
        parsed = raw
    return status, head, parsed, elapsed


def metric(url, name):
    """The sum of every sample of metric `name` on url/metrics (all its labels), or None when it has none."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "{")]
    return sum(values) if values else None


def wait_for(predicate, seconds, interval=0.1):
    """Polls `predicate` until it returns something true or `seconds` pass; returns its last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def new_traceparent(flags):
    trace_id, parent_id = os.urandom(16).hex(), os.urandom(8).hex()
    return trace_id, parent_id, "00-%s-%s-%s" % (trace_id, parent_id, flags)


class Hooks(http.server.BaseHTTPRequestHandler):
    """The webhook receiver: keeps each delivery's headers and body."""

    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Hooks.received.append((dict(self.headers.items()), body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def forms(secret):
    """The forms a secret could leak in: as is, percent-encoded, base64 and base64url (unpadded), hex."""
    raw = secret.encode()
    found = {secret, urllib.parse.quote(secret, safe=""), base64.b64encode(raw).decode().rstrip("="),
             base64.urlsafe_b64encode(raw).decode().rstrip("="), raw.hex()}
    return {form for form in found if len(form) >= 8}


def render_tree(spans, root, incoming_parent):
    """The trace under `root` as indented text: name, kind, start offset and duration, attributes."""
    children = {}
    for span in spans:
        children.setdefault(span["parent_span_id"], []).append(span)
    origin = root["start_ns"]
    scope = " ".join(part for part in (root["scope"].get("name"), root["scope"].get("version")) if part)
    lines = ["trace %s, scope %s; the root's parent %s is the incoming traceparent's span" % (
        root["trace_id"], scope or "-", incoming_parent), "resource:"]
    lines += ["    %s = %s" % (key, json.dumps(value)) for key, value in sorted(root["resource"].items())]

    def add(span, depth):
        lines.append("%s%s  [%s]  +%.1f ms, %.1f ms  span %s  status %s" % (
            "  " * depth + ("- " if depth else ""), span["name"], span["kind"], (span["start_ns"] - origin) / 1e6,
            (span["end_ns"] - span["start_ns"]) / 1e6, span["span_id"], span["status"]["code"]))
        for key, value in sorted(span["attributes"].items()):
            lines.append("%s    %s = %s" % ("  " * depth, key, json.dumps(value)))
        for child in sorted(children.get(span["span_id"], []), key=lambda s: (s["start_ns"], s["name"])):
            add(child, depth + 1)

    add(root, 0)
    return "\n".join(lines) + "\n"


def login_tree(checks, receiver, stack, key_id):
    """Part 1: the login with an incoming traceparent. Returns (session id, the rendered tree, the user token,
    the trace id)."""
    user, token = stack.user_token("Traced Login")
    trace_id, incoming_parent, traceparent = new_traceparent("01")
    status, head, session, _ = call(stack.url, "POST", "/v1/sessions", stack.key,
                                    {"owner": "traces/owner", "access_token": token},
                                    headers={"traceparent": traceparent})
    checks.check("token login answered 201", status == 201, "status %d" % status)
    request_id = head.get("X-Request-Id")

    def server_span():
        return next((span for span in receiver.spans() if span["trace_id"] == trace_id
                     and span["name"] == "POST /v1/sessions"), None)

    root = wait_for(server_span, 15)
    if not checks.check("the login's server span was exported", root is not None,
                        "POST /v1/sessions in trace %s" % trace_id):
        names = sorted({span["name"] for span in receiver.spans()})
        print("  span names received: %s" % names)
        return (session.get("id") if isinstance(session, dict) else None), None, token, trace_id
    # The children end before their parent: they are in its batch or an earlier one. Allow one more batch.
    time.sleep(0.5)
    spans = [span for span in receiver.spans() if span["trace_id"] == trace_id]
    attributes = root["attributes"]
    checks.check("server span continues the incoming traceparent",
                 root["parent_span_id"] == incoming_parent and root["kind"] == "SERVER",
                 "kind %s, parent %s (incoming %s)" % (root["kind"], root["parent_span_id"], incoming_parent))
    expected = {"http.request.method": "POST", "http.route": "/v1/sessions", "http.response.status_code": 201,
                "url.path": "/v1/sessions", "fbs.request_id": request_id, "fbs.key_id": key_id}
    wrong = {name: attributes.get(name) for name, value in expected.items() if attributes.get(name) != value}
    checks.check("server span attributes", not wrong,
                 "all of %s" % sorted(expected) if not wrong else "differ: %s" % json.dumps(wrong))
    checks.check("resource names the service", root["resource"].get("service.name") == SERVICE_NAME,
                 "service.name=%s" % root["resource"].get("service.name"))
    children = [span for span in spans if span["parent_span_id"] == root["span_id"]]
    graph = {span["name"]: span for span in children if span["name"] in LOGIN_GRAPH_SPANS}
    checks.check("four Graph CLIENT children of the server span",
                 sorted(graph) == sorted(LOGIN_GRAPH_SPANS)
                 and all(span["kind"] == "CLIENT" for span in graph.values()),
                 "children: %s" % sorted("%s [%s]" % (span["name"], span["kind"]) for span in children))
    bad_graph = [name for name, span in graph.items()
                 if span["attributes"].get("fbs.graph.endpoint") != name[len("graph "):]
                 or span["attributes"].get("http.response.status_code") != 200]
    checks.check("Graph spans carry fbs.graph.endpoint and status 200", graph and not bad_graph,
                 "wrong: %s" % bad_graph if bad_graph else "%d spans" % len(graph))
    database = [span for span in children if span["name"] == "postgresql transaction"]
    checks.check("a postgresql transaction child of the server span",
                 bool(database) and all(span["kind"] == "CLIENT"
                                        and span["attributes"].get("db.system.name") == "postgresql"
                                        for span in database),
                 "%d such spans" % len(database))
    by_id = {span["span_id"]: span for span in spans}
    loose = [span["name"] for span in spans
             if span["span_id"] != root["span_id"] and span["parent_span_id"] not in by_id]
    checks.check("every span of the trace hangs from the server span", not loose, "orphans: %s" % loose)
    outside = [span["name"] for span in spans if span["end_ns"] < span["start_ns"] or (
        span["parent_span_id"] in by_id and not (by_id[span["parent_span_id"]]["start_ns"] <= span["start_ns"]
                                                 and span["end_ns"] <= by_id[span["parent_span_id"]]["end_ns"]))]
    checks.check("times nest (each child within its parent)", not outside, "outside: %s" % outside)
    # Log lines of the sampled request carry the trace and the server span.
    with open(stack.service_log, encoding="utf-8", errors="replace") as log:
        lines = [json.loads(line) for line in log if request_id and request_id in line and line.startswith("{")]
    traced = [line for line in lines if line.get("trace_id") == trace_id and line.get("span_id") == root["span_id"]]
    checks.check("log lines of the login carry trace_id and span_id", lines and len(traced) == len(lines),
                 "%d of %d lines with request_id %s" % (len(traced), len(lines), request_id))
    return session.get("id"), render_tree(spans, root, incoming_parent), token, trace_id


def unsampled(checks, receiver, stack, session_id):
    """Part 2: flags 00 under parentbased_always_on: no span; a sampled call after it shows the export ran."""
    quiet_trace, _, quiet = new_traceparent("00")
    marker_trace, _, marker = new_traceparent("01")
    status = call(stack.url, "GET", "/v1/sessions/" + session_id, stack.key, headers={"traceparent": quiet})[0]
    status_marker = call(stack.url, "GET", "/v1/sessions/" + session_id, stack.key,
                         headers={"traceparent": marker})[0]
    arrived = wait_for(lambda: any(span["trace_id"] == marker_trace for span in receiver.spans()), 15)
    time.sleep(0.5)
    quiet_spans = [span["name"] for span in receiver.spans() if span["trace_id"] == quiet_trace]
    checks.check("traceparent flags 00 (parentbased_always_on): no span", status == 200 and status_marker == 200
                 and arrived and not quiet_spans,
                 "statuses %d, %d; the sampled call after it exported: %s; spans of the unsampled trace: %s" % (
                     status, status_marker, bool(arrived), quiet_spans))


# traceparent values a receiver must ignore (W3C Trace Context, "traceparent Header"): each request starts a trace.
INVALID_TRACEPARENTS = (
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero parent id
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  # upper-case hex
    "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",  # a trace id two digits short
)


def invalid_parents(checks, receiver, stack, session_id):
    """Part 2, second half: an invalid traceparent is ignored: a new root trace, not the given ids."""
    request_ids = {}
    for value in INVALID_TRACEPARENTS:
        status, head, _, _ = call(stack.url, "GET", "/v1/sessions/" + session_id, stack.key,
                                  headers={"traceparent": value})
        request_ids[head.get("X-Request-Id")] = (value, status)

    def roots():
        found = {span["attributes"].get("fbs.request_id"): span for span in receiver.spans()
                 if span["kind"] == "SERVER" and span["attributes"].get("fbs.request_id") in request_ids}
        return found if len(found) == len(request_ids) else None

    found = wait_for(roots, 15) or {}
    wrong = []
    for request_id, (value, status) in request_ids.items():
        span = found.get(request_id)
        if status != 200 or span is None or span["parent_span_id"] or span["trace_id"] in value.lower() \
                or span["trace_id"] == "0" * 32:
            wrong.append("%s: status %d, %s" % (value[:8] + "...", status, "no span" if span is None else
                                                  "trace %s parent %r" % (span["trace_id"], span["parent_span_id"])))
    checks.check("an invalid traceparent is ignored: a new root trace each", not wrong,
                 "%d values" % len(request_ids) if not wrong else "; ".join(wrong))


def webhook(checks, receiver, login_trace):
    """Part 3: every delivery's traceparent names an exported `webhook delivery` span."""
    delivered = wait_for(lambda: list(Hooks.received), 20, 0.2)
    if not checks.check("the login's events were delivered to the webhook", bool(delivered),
                        "%d deliveries" % len(Hooks.received)):
        return
    time.sleep(1.0)  # the other events of the login, delivered one by one
    parents, problems = [], []
    for headers, _ in list(Hooks.received):
        value = next((v for k, v in headers.items() if k.lower() == "traceparent"), None)
        match = TRACEPARENT.match(value or "")
        if match is None:
            problems.append("traceparent %s" % ("absent" if value is None else "malformed: %r" % value))
        else:
            parents.append(match.groups())
    checks.check("every delivery carries a W3C traceparent", not problems,
                 "%d deliveries" % len(parents) if not problems else "; ".join(problems))
    if not parents:
        return
    wanted = {span_id for _, span_id, _ in parents}
    wait_for(lambda: wanted <= {s["span_id"] for s in receiver.spans()}, 15)
    by_id = {span["span_id"]: span for span in receiver.spans() if span["span_id"] in wanted}
    wrong = []
    for trace_id, span_id, flags in parents:
        span = by_id.get(span_id)
        if span is None or span["name"] != "webhook delivery" or span["kind"] != "CLIENT" \
                or span["trace_id"] != trace_id or flags != "01":
            wrong.append("flags %s, span %s" % (flags, "not exported" if span is None else "%s [%s]" % (
                span["name"], span["kind"])))
    in_login = sum(1 for trace_id, _, _ in parents if trace_id == login_trace)
    checks.check("each delivery's traceparent is an exported webhook delivery span (CLIENT, sampled)", not wrong,
                 "%d spans, %d of them in the login's trace" % (len(by_id), in_login) if not wrong
                 else "; ".join(wrong))


def no_secrets(checks, receivers, secrets, extra_texts):
    """Part 4: no secret in any form in what the receivers got, nor in `extra_texts`; nothing refused."""
    texts = [(receiver.mode, receiver.raw_text()) for receiver in receivers] + extra_texts
    findings = sorted({"%s in %s" % (kind, where) for kind, value in secrets.items() if value
                       for where, text in texts for form in forms(value) if form in text})
    size = sum(len(text) for _, text in texts)
    spans = sum(len(receiver.spans()) for receiver in receivers)
    checks.check("no secret in the exported spans, request bodies or service logs", spans > 0 and not findings,
                 "%d secrets searched in %d spans, %d KiB" % (len(secrets), spans, size // 1024) if not findings
                 else "found: %s" % ", ".join(findings))
    refused = [entry for receiver in receivers for entry in receiver.failures()]
    checks.check("the receiver decoded every export request", not refused,
                 "%d requests, all application/x-protobuf" % sum(len(r.requests()) for r in receivers)
                 if not refused else "refused: %s" % json.dumps(refused[:3]))


def timed_status(url, key, session_id, count):
    """`count` status calls in a row: (statuses that were not 200, durations)."""
    wrong, durations = [], []
    for _ in range(count):
        status, _, _, elapsed = call(url, "GET", "/v1/sessions/" + session_id, key, timeout=30)
        durations.append(elapsed)
        if status != 200:
            wrong.append(status)
    return wrong, durations


def summary(durations):
    ordered = sorted(durations)
    return "p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
        statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.99) - 1] * 1e3, ordered[-1] * 1e3)


def without_tracing(stack):
    """Settings that remove every OTEL_ variable of the stack's (its endpoint, its collector credential)."""
    return {name: None for name in stack.env if name.startswith("OTEL_")}


def faults(checks, stack, session_id, work, receivers):
    """Part 5: hang, 503 and a closed port cost a counter, never a slower answer."""
    _, baseline = timed_status(stack.url, stack.key, session_id, FAULT_REQUESTS)
    baseline_p50 = statistics.median(baseline)
    print("  the healthy exporting service: %d status calls, %s" % (FAULT_REQUESTS, summary(baseline)))
    for case in ("hang", "fail503", "gone"):
        receiver = None
        if case == "gone":
            endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % livestack.free_port()}
        else:
            receiver = otlp.Receiver(os.path.join(work, "receiver-" + case), mode=case)
            receivers.append(receiver)
            # The 503 case names its endpoint with the traces-only variable, which is used as is (any path).
            endpoint = ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url + "/collector/traces"}
                        if case == "fail503" else {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        try:
            settings = dict(without_tracing(stack), **FAULT_EXPORT)
            settings.update(endpoint)
            process, url = stack.start_service(settings, "service-otel-%s.log" % case)
            wrong, durations = timed_status(url, stack.key, session_id, FAULT_REQUESTS)
            p50 = statistics.median(durations)
            checks.check("collector %s: %d status calls answered 200, each under %.1f s" % (
                case, FAULT_REQUESTS, REQUEST_BOUND), not wrong and max(durations) < REQUEST_BOUND,
                "%s; not 200: %s" % (summary(durations), wrong[:5] or "none"))
            checks.check("collector %s: median near the healthy service's" % case,
                         p50 <= 3 * baseline_p50 + 0.025,
                         "%.1f ms against %.1f ms" % (p50 * 1e3, baseline_p50 * 1e3))
            dropped = wait_for(lambda: metric(url, "fbs_otel_dropped_spans_total") or 0, 20, 0.25)
            exported = metric(url, "fbs_otel_exported_spans_total")
            checks.check("collector %s: fbs_otel_dropped_spans_total rises" % case, dropped > 0,
                         "dropped %s, exported %s" % (dropped, exported))
            if receiver is not None:
                paths = sorted({entry["path"] for entry in receiver.requests()})
                want = ["/collector/traces"] if case == "fail503" else ["/v1/traces"]
                checks.check("collector %s: the exporter reached it at %s" % (case, want[0]), paths == want,
                             "%d requests, paths %s" % (len(receiver.requests()), paths))
            started = time.monotonic()
            clean = stack.stop_process(process)
            checks.check("collector %s: the service stops on SIGTERM" % case, clean,
                         "in %.1f s" % (time.monotonic() - started))
        finally:
            if receiver is not None:
                receiver.stop()


def fresh_instance(checks, receiver, stack, session_id, secrets):
    """Part 7: the read batch, the picture fetch and the key set fetch, on a fresh instance exporting like the
    first one. The Limited Login's nonce and token go into `secrets`."""
    process, url = stack.start_service({}, "service-otel-fresh.log")
    parents = {}

    def status_call(index):
        trace_id, parent, traceparent = new_traceparent("01")
        parents[trace_id] = parent
        return call(url, "GET", "/v1/sessions/" + session_id, stack.key, headers={"traceparent": traceparent})[0]

    callers = [threading.Thread(target=status_call, args=(index,)) for index in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    picture_trace, _, traceparent = new_traceparent("01")
    picture_status = call(url, "GET", "/v1/sessions/%s/picture?type=small" % session_id, stack.key,
                          headers={"traceparent": traceparent})[0]
    # A Limited Login as the iOS SDK brings it: a nonce from the service, the token the emulator signs with it.
    status, _, nonce, _ = call(url, "POST", "/v1/login-nonces", stack.key, {"owner": "traces/limited"})
    nonce = nonce.get("nonce") if status == 201 and isinstance(nonce, dict) else None
    limited_trace, limited_status = None, status
    if nonce:
        minted = stack.emulator("POST", "limited/demo-token?user=bob&nonce=" + urllib.parse.quote(nonce, safe=""))
        secrets.update({"limited login nonce": nonce, "authentication token": minted["authentication_token"]})
        limited_trace, _, traceparent = new_traceparent("01")
        limited_status = call(url, "POST", "/v1/sessions", stack.key,
                              {"owner": "traces/limited", "authentication_token": minted["authentication_token"]},
                              headers={"traceparent": traceparent})[0]

    def arrived():
        spans = receiver.spans()
        servers = {span["span_id"]: span for span in spans
                   if span["trace_id"] in parents and span["kind"] == "SERVER"}
        picture_root = next((span for span in spans if span["trace_id"] == picture_trace
                             and span["kind"] == "SERVER"), None)
        limited_root = next((span for span in spans if span["trace_id"] == limited_trace
                             and span["kind"] == "SERVER"), None)
        done = len(servers) == len(parents) and picture_root and (limited_root or not limited_trace)
        return (servers, picture_root, limited_root, spans) if done else None

    found = wait_for(arrived, 15)
    stack.stop_process(process)
    if not checks.check("fresh instance: the status, picture and Limited Login calls' server spans were exported",
                        found is not None and limited_trace is not None, "%d status calls, picture %d, limited %s"
                        % (len(parents), picture_status, limited_status)):
        return
    servers, picture_root, limited_root, spans = found
    batches = [span for span in spans if span["name"] == "postgresql batch" and span["parent_span_id"] in servers]
    wrong = [span["span_id"] for span in batches
             if span["kind"] != "CLIENT" or span["attributes"].get("db.system.name") != "postgresql"
             or not isinstance(span["attributes"].get("db.operation.batch.size"), int)
             or span["attributes"]["db.operation.batch.size"] < 1
             or any(link["span_id"] not in servers for link in span["links"])]
    checks.check("fresh instance: a postgresql batch span under a traced status call", batches and not wrong,
                 "%d batch spans, sizes %s, links %s" % (
                     len(batches), [span["attributes"].get("db.operation.batch.size") for span in batches],
                     [len(span["links"]) for span in batches]) if not wrong else "wrong: %s" % wrong)
    fetches = [span for span in spans if span["parent_span_id"] == picture_root["span_id"]]
    fetch = next((span for span in fetches if span["name"] == "picture fetch"), None)
    checks.check("fresh instance: the picture's first fetch is a picture fetch CLIENT span",
                 picture_status == 200 and fetch is not None and fetch["kind"] == "CLIENT"
                 and fetch["attributes"].get("http.response.status_code") == 200,
                 "picture %d; children of %s: %s" % (picture_status, picture_root["name"],
                                                     sorted(span["name"] for span in fetches)))
    children = [span for span in spans if span["parent_span_id"] == limited_root["span_id"]]
    jwks = next((span for span in children if span["name"] == "jwks fetch"), None)
    checks.check("fresh instance: its first Limited Login's key set fetch is a jwks fetch CLIENT span",
                 limited_status == 201 and jwks is not None and jwks["kind"] == "CLIENT",
                 "login %d; children of %s: %s" % (limited_status, limited_root["name"],
                                                    sorted(span["name"] for span in children)))


def off_without_endpoint(checks, stack, session_id, work, receivers):
    """Part 6: no endpoint, no export, not even to the default http://localhost:4318."""
    try:
        receiver = otlp.Receiver(os.path.join(work, "receiver-default"), port=DEFAULT_OTLP_PORT)
    except RuntimeError:
        print("  (port %d is taken here: the default endpoint is not watched)" % DEFAULT_OTLP_PORT)
        receiver = None
    else:
        receivers.append(receiver)
    try:
        settings = dict(without_tracing(stack), **EXPORT)
        settings["OTEL_TRACES_SAMPLER"] = "always_on"
        process, url = stack.start_service(settings, "service-otel-off.log")
        wrong, _ = timed_status(url, stack.key, session_id, 20)
        time.sleep(1.0)  # five schedule delays: any export would have happened
        exported = metric(url, "fbs_otel_exported_spans_total")
        got = len(receiver.requests()) if receiver is not None else 0
        checks.check("no endpoint: tracing off", not wrong and not exported and got == 0,
                     "20 status calls; exported %s; requests at 127.0.0.1:%d: %s" % (
                         exported, DEFAULT_OTLP_PORT, got if receiver is not None else "not watched"))
        stack.stop_process(process)
    finally:
        if receiver is not None:
            receiver.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.environ.get("FBSESSIOND") or None)
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "traces", "login-trace.txt"))
    options = parser.parse_args()
    started = time.monotonic()
    checks = Checks()
    work = tempfile.mkdtemp(prefix="fbs-traces.")
    # The collector's credential, sent by the exporter as OTEL_EXPORTER_OTLP_HEADERS says: a secret like any other.
    credential = base64.urlsafe_b64encode(os.urandom(24)).decode().rstrip("=")
    transcript.note("otlp exporter header", credential)
    receiver = otlp.Receiver(os.path.join(work, "receiver-ok"), header=("x-collector-key", credential))
    receivers = [receiver]
    stack = None
    tree = None
    try:
        stack = livestack.Stack(binary=options.binary, name="traces", env=dict(
            EXPORT, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_TRACES_SAMPLER="parentbased_always_on",
            OTEL_EXPORTER_OTLP_HEADERS="x-collector-key=" + credential,
            OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=test"))
        key_id = stack.key.split("_")[1]
        hooks = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hooks)
        threading.Thread(target=hooks.serve_forever, daemon=True).start()
        made = stack.run_command(["webhook", "add", "--app", "hostile", "--url",
                                  "http://127.0.0.1:%d/hook" % hooks.server_address[1]])
        webhook_secret = made.strip().splitlines()[-1]
        transcript.note("webhook secret", webhook_secret)

        session_id, tree, user_token, login_trace = login_tree(checks, receiver, stack, key_id)
        secrets = {"user token (short-lived)": user_token, "api key": stack.key,
                   "api key secret part": stack.key.split("_", 2)[-1],
                   "app secret": livestack.DEMO_APP_SECRET, "webhook secret": webhook_secret,
                   "encryption key": stack.encryption_key, "collector credential": credential}
        if session_id:
            status, _, grant, _ = call(stack.url, "GET", "/v1/sessions/%s/token" % session_id, stack.key)
            if status == 200:
                secrets.update({"user token (long-lived)": grant.get("access_token"),
                                "appsecret_proof": grant.get("appsecret_proof")})
            unsampled(checks, receiver, stack, session_id)
            invalid_parents(checks, receiver, stack, session_id)
        webhook(checks, receiver, login_trace)
        exported = metric(stack.url, "fbs_otel_exported_spans_total")
        dropped = metric(stack.url, "fbs_otel_dropped_spans_total")
        checks.check("the healthy service counts exported spans and drops none",
                     exported is not None and exported > 0 and dropped == 0,
                     "exported %s, dropped %s" % (exported, dropped))
        if session_id:
            faults(checks, stack, session_id, work, receivers)
            fresh_instance(checks, receiver, stack, session_id, secrets)
            off_without_endpoint(checks, stack, session_id, work, receivers)
        if tree:
            os.makedirs(os.path.dirname(os.path.abspath(options.out)), exist_ok=True)
            with open(options.out, "w") as output:
                output.write(tree)
        logs = []
        # The service's own logs and the commands' (the emulator's log is Facebook's side: it shows the app secret).
        for path in sorted(glob.glob(os.path.join(stack.work, "*.log"))):
            if os.path.basename(path) == "emulator.log":
                continue
            with open(path, encoding="latin-1") as log:
                logs.append((os.path.basename(path), log.read()))
        no_secrets(checks, receivers, secrets, [("the rendered tree", tree or "")] + logs)
    finally:
        for each in receivers:
            each.stop()
        if stack is not None:
            part = stack.part
            for index, each in enumerate(receivers):
                each.keep_in(part, "otlp-%s" % each.mode if index else "otlp")
            if part is not None and Hooks.received:
                kept = transcript.ResponseFile(part, "responses-webhook-deliveries.txt")
                for headers, body in Hooks.received:
                    kept.add("POST", "/webhook-delivery", 0, list(headers.items()), body)
            stack.stop()
        if os.environ.get("FBS_KEEP_WORK") != "1":
            shutil.rmtree(work, ignore_errors=True)
    if tree:
        print("\nthe login trace as the receiver decoded it (%s):\n" % os.path.relpath(options.out, ROOT))
        print(tree)
    print("%s traces check: %d failed; %.1fs" % ("FAIL" if checks.failed else "PASS", len(checks.failed),
                                                 time.monotonic() - started))
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
