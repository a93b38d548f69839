#!/usr/bin/env python3
"""A small OpenTelemetry collector for tests: an OTLP/HTTP trace receiver that decodes what it is sent.

    receiver.py [--port 0] [--port-file FILE] [--out DIR] [--mode ok|fail503|hang|discard] [--keep-bodies]
                [--require-header NAME]

It listens on 127.0.0.1 only (port 0: any free port), prints `port N` on its first line of output and writes N
to --port-file when given. Each POST to /v1/traces with `Content-Type: application/x-protobuf` (gzip allowed, as
`Content-Encoding: gzip`) is decoded with the OpenTelemetry protocol's own definitions, the generated classes of
PyPI's `opentelemetry-proto` (ExportTraceServiceRequest), and answered with an encoded ExportTraceServiceResponse,
as the OTLP specification's "OTLP/HTTP" section asks.

What it writes into --out (created when missing):
  spans.jsonl     one JSON object per span (below), in the order they arrived
  requests.jsonl  one JSON object per request: path, content type and encoding, body bytes, spans decoded, the
                  answer's status, and `error` when the request was refused (a body that does not decode, another
                  path or content type): the tests count those as failures
  bodies/         with --keep-bodies, each request's body as received (NNNNNN.pb): the bytes hold every string
                  attribute verbatim, so the secrets scan searches them too

A span's JSON: trace_id, span_id, parent_span_id (lower-case hex; "" for a root), name, kind (SERVER, CLIENT,
INTERNAL, PRODUCER, CONSUMER or UNSPECIFIED), start_ns, end_ns, status {code: UNSET|OK|ERROR, message},
attributes (flat: key -> value; arrays as lists, key-value lists as objects, bytes as hex), events, links
(trace_id, span_id, attributes), trace_state, flags, resource (its attributes), scope {name, version}.

--require-header NAME makes it a collector that wants a credential, as one behind an authenticating proxy does:
each request must carry header NAME with the value of the environment variable OTLP_RECEIVER_HEADER_VALUE (never
on the command line), else it is refused with 401 and recorded as a failure (the value is never written).

Modes, for fault tests of an exporter:
  ok       decode, record, answer 200 (the default)
  fail503  read the body, record the request, answer 503 Service Unavailable (a collector that is overloaded)
  hang     read the body, record the request, never answer (until the receiver stops)
  discard  read the body, answer 200, record nothing and decode nothing (a cheap sink for benchmarks)

SIGTERM or SIGINT stops it; every line is flushed as it is written, so the files are complete at any time.
Uses only the standard library besides opentelemetry-proto and its protobuf (which discard mode does not need).
"""

import argparse
import gzip
import hmac
import http.server
import json
import os
import signal
import sys
import threading

TRACES_PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
# The largest body accepted: far above any batch of the service's (512 spans of a few hundred bytes each).
MAX_BODY = 64 * 1024 * 1024
# An ExportTraceServiceResponse with no field set (no partial_success) encodes to no bytes at all: what discard
# mode answers, without the protobuf classes, so that the benchmark's sink runs on a Python with none installed.
EMPTY_RESPONSE = b""
# Filled by load_protocol(): the generated classes, and Span.SpanKind and Status.StatusCode names without their
# prefixes (SPAN_KIND_SERVER -> SERVER).
ExportTraceServiceRequest = ExportTraceServiceResponse = DecodeError = None
KINDS = {}
STATUS_CODES = {}


def load_protocol():
    """Imports opentelemetry-proto's generated classes (every mode but discard needs them)."""
    global ExportTraceServiceRequest, ExportTraceServiceResponse, DecodeError
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
    KINDS.update({value: name.replace("SPAN_KIND_", "") for name, value in Span.SpanKind.items()})
    STATUS_CODES.update({value: name.replace("STATUS_CODE_", "") for name, value in Status.StatusCode.items()})


def any_value(value):
    """An OTLP AnyValue as plain JSON: strings, numbers and booleans as is, arrays as lists, key-value lists as
    objects, bytes as hex."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, which)


def attributes(pairs):
    return {pair.key: any_value(pair.value) for pair in pairs}


def span_json(span, resource, scope):
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "name": span.name,
        "kind": KINDS.get(span.kind, str(span.kind)),
        "start_ns": span.start_time_unix_nano,
        "end_ns": span.end_time_unix_nano,
        "status": {"code": STATUS_CODES.get(span.status.code, str(span.status.code)),
                   "message": span.status.message},
        "attributes": attributes(span.attributes),
        "events": [{"name": event.name, "time_ns": event.time_unix_nano, "attributes": attributes(event.attributes)}
                   for event in span.events],
        "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                   "attributes": attributes(link.attributes)} for link in span.links],
        "trace_state": span.trace_state,
        "flags": span.flags,
        "resource": resource,
        "scope": scope,
    }


def decode(body):
    """The spans of an ExportTraceServiceRequest body as JSON objects. Raises DecodeError for a bad body."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = {"name": scope_spans.scope.name, "version": scope_spans.scope.version}
            spans.extend(span_json(span, resource, scope) for span in scope_spans.spans)
    return spans


class Recorder:
    """The output files, written under one lock so that lines of concurrent requests never interleave."""

    def __init__(self, directory, keep_bodies):
        self.directory = directory
        self.keep_bodies = keep_bodies
        self.lock = threading.Lock()
        self.count = 0
        self.spans = self.requests = None
        if directory:
            os.makedirs(directory, exist_ok=True)
            self.spans = open(os.path.join(directory, "spans.jsonl"), "a", encoding="utf-8")
            self.requests = open(os.path.join(directory, "requests.jsonl"), "a", encoding="utf-8")
            if keep_bodies:
                os.makedirs(os.path.join(directory, "bodies"), exist_ok=True)

    def request(self, entry, body=None, spans=()):
        with self.lock:
            self.count += 1
            entry["number"] = self.count
            if self.requests is None:
                return
            if self.keep_bodies and body is not None:
                with open(os.path.join(self.directory, "bodies", "%06d.pb" % self.count), "wb") as kept:
                    kept.write(body)
            for span in spans:
                self.spans.write(json.dumps(span, sort_keys=True) + "\n")
            self.spans.flush()
            self.requests.write(json.dumps(entry, sort_keys=True) + "\n")
            self.requests.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as exporters expect
    server_version = "fbs-otlp-receiver"
    mode = "ok"
    recorder = None
    required_header = None  # (name, value) with --require-header
    stopping = threading.Event()

    def do_POST(self):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > MAX_BODY:
            self.refuse(411 if length is None else 413, "no usable Content-Length", None)
            return
        raw = self.rfile.read(int(length))
        if self.mode == "discard":
            self.answer(200, EMPTY_RESPONSE)
            return
        entry = {"path": self.path, "content_type": self.headers.get("Content-Type", ""),
                 "content_encoding": self.headers.get("Content-Encoding", ""), "bytes": len(raw), "mode": self.mode}
        if self.mode == "hang":
            entry["status"] = None
            self.recorder.request(entry, raw)
            Handler.stopping.wait()  # never answer; the connection closes when the receiver stops
            self.close_connection = True
            return
        if self.mode == "fail503":
            entry["status"] = 503
            self.recorder.request(entry, raw)
            self.answer(503, b"collector unavailable\n", "text/plain")
            return
        if self.required_header is not None:
            name, value = self.required_header
            sent = self.headers.get(name)
            if sent is None or not hmac.compare_digest(sent.encode(), value.encode()):
                self.refuse(401, "header %s missing or wrong" % name, entry)
                return
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self.refuse(404, "not the traces path %s" % TRACES_PATH, entry)
            return
        if entry["content_type"].split(";", 1)[0].strip().lower() != PROTOBUF:
            self.refuse(415, "content type is not %s" % PROTOBUF, entry)
            return
        body = raw
        encoding = entry["content_encoding"].strip().lower()
        if encoding == "gzip":
            try:
                body = gzip.decompress(raw)
            except (OSError, EOFError) as error:
                self.refuse(400, "gzip body does not decompress: %s" % error, entry, raw)
                return
        elif encoding not in ("", "identity"):
            self.refuse(415, "content encoding %s is not supported" % encoding, entry, raw)
            return
        try:
            spans = decode(body)
        except DecodeError as error:
            self.refuse(400, "body is not an ExportTraceServiceRequest: %s" % error, entry, raw)
            return
        entry.update(status=200, spans=len(spans))
        self.recorder.request(entry, raw, spans)
        self.answer(200, ExportTraceServiceResponse().SerializeToString())

    def refuse(self, status, reason, entry, raw=None):
        """Answers `status` and records the request as a failure (when there is an entry to record)."""
        if entry is not None:
            entry.update(status=status, error=reason)
            self.recorder.request(entry, raw)
        self.answer(status, (reason + "\n").encode(), "text/plain")

    def answer(self, status, body, content_type=PROTOBUF):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass  # quiet: the files are the record


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--out", help="directory for spans.jsonl, requests.jsonl and bodies/ (none: record nothing)")
    parser.add_argument("--mode", choices=("ok", "fail503", "hang", "discard"), default="ok")
    parser.add_argument("--keep-bodies", action="store_true")
    parser.add_argument("--require-header", metavar="NAME",
                        help="refuse requests without NAME: $OTLP_RECEIVER_HEADER_VALUE")
    options = parser.parse_args()
    if options.mode != "discard" and not options.out:
        parser.error("--out is needed unless --mode discard")

    if options.mode != "discard":
        load_protocol()
    Handler.mode = options.mode
    if options.require_header:
        value = os.environ.get("OTLP_RECEIVER_HEADER_VALUE")
        if not value:
            parser.error("--require-header needs OTLP_RECEIVER_HEADER_VALUE in the environment")
        Handler.required_header = (options.require_header, value)
    Handler.recorder = Recorder(options.out, options.keep_bodies)
    server = Server(("127.0.0.1", options.port), Handler)
    port = server.server_address[1]
    if options.port_file:
        temporary = options.port_file + ".tmp"
        with open(temporary, "w") as handle:
            handle.write("%d\n" % port)
        os.replace(temporary, options.port_file)  # readers never see a half-written file
    print("port %d" % port, flush=True)

    def stop(*_):
        Handler.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
