#!/usr/bin/env python3
"""Tests of tools/otel/receiver.py, the OTLP/HTTP receiver of the `traces` system check, over real HTTP.

    python3 tools/otel/receiver_test.py     (needs opentelemetry-proto: scripts/test-system's venv has it)

Each test starts the receiver as a process on a free port, sends it what an exporter sends (an
ExportTraceServiceRequest built with opentelemetry-proto's classes and encoded to protobuf) or something broken,
and checks the answers and the files it writes.
"""

import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

RECEIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "receiver.py")
TRACE_ID = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SERVER_ID = bytes.fromhex("00f067aa0ba902b7")
CLIENT_ID = bytes.fromhex("a3ce929d0e0e4736")
INCOMING_ID = bytes.fromhex("53995c3f42cd8ad8")


def pair(key, **value):
    return KeyValue(key=key, value=AnyValue(**value))


def sample_request():
    """A request as the service would send it: one resource, one scope, a server span and its client child."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend([pair("service.name", string_value="fbsessiond-test")])
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "fbsessiond"
    scope_spans.scope.version = "1.2.3"
    server = scope_spans.spans.add(
        trace_id=TRACE_ID, span_id=SERVER_ID, parent_span_id=INCOMING_ID, name="POST /v1/sessions",
        kind=Span.SPAN_KIND_SERVER, start_time_unix_nano=1_000, end_time_unix_nano=9_000, flags=0x301)
    server.attributes.extend([
        pair("http.request.method", string_value="POST"), pair("http.response.status_code", int_value=201),
        pair("fbs.sampled", bool_value=True), pair("fbs.ratio", double_value=0.5),
        pair("fbs.list", array_value={"values": [AnyValue(string_value="a"), AnyValue(int_value=2)]}),
        pair("fbs.map", kvlist_value={"values": [pair("inner", string_value="x")]}),
        pair("fbs.bytes", bytes_value=b"\x01\xff"),
    ])
    server.status.code = Status.STATUS_CODE_OK
    client = scope_spans.spans.add(
        trace_id=TRACE_ID, span_id=CLIENT_ID, parent_span_id=SERVER_ID, name="graph me",
        kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=2_000, end_time_unix_nano=3_000)
    client.status.code = Status.STATUS_CODE_ERROR
    client.status.message = "timeout"
    client.events.add(name="retry", time_unix_nano=2_500).attributes.extend([pair("attempt", int_value=2)])
    client.links.add(trace_id=TRACE_ID, span_id=INCOMING_ID).attributes.extend([pair("why", string_value="l")])
    return request


class Receiver:
    """The receiver as a process, in a temporary directory."""

    def __init__(self, mode="ok", keep_bodies=False, python=(sys.executable,), header=None):
        self.directory = tempfile.mkdtemp(prefix="fbs-otlp-test.")
        port_file = os.path.join(self.directory, "port")
        arguments = [*python, RECEIVER, "--out", os.path.join(self.directory, "out"), "--mode", mode,
                     "--port-file", port_file]
        if keep_bodies:
            arguments.append("--keep-bodies")
        environment = dict(os.environ)
        if header:
            arguments += ["--require-header", header[0]]
            environment["OTLP_RECEIVER_HEADER_VALUE"] = header[1]
        self.process = subprocess.Popen(arguments, stdout=subprocess.PIPE, text=True, env=environment)
        first = self.process.stdout.readline().split()
        assert first[0] == "port", first
        self.port = int(first[1])
        with open(port_file) as handle:
            assert int(handle.read()) == self.port
        self.url = "http://127.0.0.1:%d" % self.port

    def post(self, body, path="/v1/traces", content_type="application/x-protobuf", encoding=None, timeout=10,
             extra=None):
        headers = dict(extra or {}, **{"Content-Type": content_type})
        if encoding:
            headers["Content-Encoding"] = encoding
        request = urllib.request.Request(self.url + path, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, answer.headers.get("Content-Type"), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type"), error.read()

    def lines(self, name):
        path = os.path.join(self.directory, "out", name)
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle]

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)
        self.process.stdout.close()


class ReceiverTests(unittest.TestCase):
    def start(self, **options):
        receiver = Receiver(**options)
        self.addCleanup(receiver.stop)
        return receiver

    def test_decodes_spans_and_answers_an_export_response(self):
        receiver = self.start(keep_bodies=True)
        body = sample_request().SerializeToString()
        status, content_type, answer = receiver.post(body)
        self.assertEqual((status, content_type), (200, "application/x-protobuf"))
        ExportTraceServiceResponse().ParseFromString(answer)  # a valid (empty) response
        spans = {span["name"]: span for span in receiver.lines("spans.jsonl")}
        self.assertEqual(sorted(spans), ["POST /v1/sessions", "graph me"])
        server, client = spans["POST /v1/sessions"], spans["graph me"]
        self.assertEqual((server["trace_id"], server["span_id"], server["parent_span_id"]),
                         (TRACE_ID.hex(), SERVER_ID.hex(), INCOMING_ID.hex()))
        self.assertEqual((server["kind"], server["start_ns"], server["end_ns"], server["flags"]),
                         ("SERVER", 1000, 9000, 0x301))
        self.assertEqual(server["status"], {"code": "OK", "message": ""})
        self.assertEqual(server["attributes"], {
            "http.request.method": "POST", "http.response.status_code": 201, "fbs.sampled": True, "fbs.ratio": 0.5,
            "fbs.list": ["a", 2], "fbs.map": {"inner": "x"}, "fbs.bytes": "01ff"})
        self.assertEqual(server["resource"], {"service.name": "fbsessiond-test"})
        self.assertEqual(server["scope"], {"name": "fbsessiond", "version": "1.2.3"})
        self.assertEqual((client["kind"], client["parent_span_id"], client["status"]),
                         ("CLIENT", SERVER_ID.hex(), {"code": "ERROR", "message": "timeout"}))
        self.assertEqual(client["events"], [{"name": "retry", "time_ns": 2500, "attributes": {"attempt": 2}}])
        self.assertEqual(client["links"], [{"trace_id": TRACE_ID.hex(), "span_id": INCOMING_ID.hex(),
                                            "attributes": {"why": "l"}}])
        [entry] = receiver.lines("requests.jsonl")
        self.assertEqual((entry["status"], entry["spans"], entry["bytes"], "error" in entry),
                         (200, 2, len(body), False))
        with open(os.path.join(receiver.directory, "out", "bodies", "000001.pb"), "rb") as kept:
            self.assertEqual(kept.read(), body)

    def test_gzip_body(self):
        receiver = self.start()
        status, _, _ = receiver.post(gzip.compress(sample_request().SerializeToString()), encoding="gzip")
        self.assertEqual(status, 200)
        self.assertEqual(len(receiver.lines("spans.jsonl")), 2)

    def test_refuses_and_records_what_does_not_decode(self):
        receiver = self.start()
        # A field 1 (resource_spans) that claims 100 bytes but has 3: truncated.
        self.assertEqual(receiver.post(b"\x0a\x64abc")[0], 400)
        self.assertEqual(receiver.post(b'{"resourceSpans": []}', content_type="application/json")[0], 415)
        self.assertEqual(receiver.post(sample_request().SerializeToString(), path="/v1/metrics")[0], 404)
        self.assertEqual(receiver.post(b"not gzip", encoding="gzip")[0], 400)
        entries = receiver.lines("requests.jsonl")
        self.assertEqual([entry["status"] for entry in entries], [400, 415, 404, 400])
        self.assertTrue(all(entry.get("error") for entry in entries), entries)
        self.assertEqual(receiver.lines("spans.jsonl"), [])

    def test_required_header(self):
        receiver = self.start(header=("X-Collector-Key", "collector-credential-1"))
        body = sample_request().SerializeToString()
        self.assertEqual(receiver.post(body)[0], 401)
        self.assertEqual(receiver.post(body, extra={"X-Collector-Key": "collector-credential-2"})[0], 401)
        self.assertEqual(receiver.post(body, extra={"X-Collector-Key": "collector-credential-1"})[0], 200)
        entries = receiver.lines("requests.jsonl")
        self.assertEqual([entry["status"] for entry in entries], [401, 401, 200])
        with open(os.path.join(receiver.directory, "out", "requests.jsonl")) as handle:
            self.assertNotIn("collector-credential", handle.read())

    def test_fail503(self):
        receiver = self.start(mode="fail503")
        self.assertEqual(receiver.post(sample_request().SerializeToString())[0], 503)
        self.assertEqual([entry["status"] for entry in receiver.lines("requests.jsonl")], [503])
        self.assertEqual(receiver.lines("spans.jsonl"), [])

    def test_hang_never_answers(self):
        receiver = self.start(mode="hang")
        started = time.monotonic()
        with self.assertRaises(OSError):  # socket.timeout is an OSError
            receiver.post(sample_request().SerializeToString(), timeout=1)
        self.assertGreaterEqual(time.monotonic() - started, 0.9)
        self.assertEqual([entry["status"] for entry in receiver.lines("requests.jsonl")], [None])

    def test_discard_answers_and_keeps_nothing(self):
        receiver = self.start(mode="discard")
        status, _, answer = receiver.post(sample_request().SerializeToString())
        self.assertEqual(status, 200)
        ExportTraceServiceResponse().ParseFromString(answer)
        self.assertEqual(receiver.lines("spans.jsonl") + receiver.lines("requests.jsonl"), [])

    def test_discard_needs_no_protobuf(self):
        # -S: no site-packages, so neither opentelemetry-proto nor protobuf (bench/run's sink runs on such a Python).
        receiver = self.start(mode="discard", python=(sys.executable, "-S"))
        status, _, answer = receiver.post(sample_request().SerializeToString())
        self.assertEqual((status, answer), (200, b""))
        ExportTraceServiceResponse().ParseFromString(answer)


if __name__ == "__main__":
    unittest.main(verbosity=2)
