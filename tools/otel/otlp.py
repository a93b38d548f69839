"""The OTLP receiver (tools/otel/receiver.py) as a process, for the Python tools that check exported spans: the
`traces` system check (Tests/System/traces_test.py) and the secrets scan (tools/secrets/scan).

    receiver = otlp.Receiver(directory, mode="ok")   # started; receiver.url is OTEL_EXPORTER_OTLP_ENDPOINT
    receiver.spans()                                   # every span decoded so far (dicts, as receiver.py writes)
    receiver.stop()

Standard library only; the receiver process needs opentelemetry-proto (the system checks' venv has it) and runs
with the same Python as the caller.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

RECEIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "receiver.py")


class Receiver:
    """receiver.py in `mode`, writing into DIRECTORY/out, its raw bodies kept (for the secrets scan). With
    `header` (name, value), it refuses requests without that header and value (--require-header)."""

    def __init__(self, directory, mode="ok", keep_bodies=True, header=None, port=0):
        os.makedirs(directory, exist_ok=True)
        self.mode = mode
        self.out = os.path.join(directory, "out")
        arguments = [sys.executable, RECEIVER, "--mode", mode, "--out", self.out, "--port", str(port)]
        if keep_bodies:
            arguments.append("--keep-bodies")
        environment = dict(os.environ)
        if header:
            arguments += ["--require-header", header[0]]
            environment["OTLP_RECEIVER_HEADER_VALUE"] = header[1]
        errors = os.path.join(directory, "receiver.stderr")
        with open(errors, "wb") as error_file:
            self.process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=error_file, text=True,
                                            env=environment)
        first = self.process.stdout.readline().split()
        if len(first) != 2 or first[0] != "port":
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()
            with open(errors, encoding="utf-8", errors="replace") as error_file:
                last = (error_file.read().strip().splitlines() or ["no output"])[-1]
            raise RuntimeError("the OTLP receiver did not start: %s" % last)
        self.port = int(first[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def _lines(self, name):
        path = os.path.join(self.out, name)
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as handle:
            # A line being written has no newline yet: read only whole lines.
            return [json.loads(line) for line in handle if line.endswith("\n")]

    def spans(self):
        return self._lines("spans.jsonl")

    def requests(self):
        return self._lines("requests.jsonl")

    def failures(self):
        """Requests the receiver refused (a body that did not decode, another path or content type)."""
        return [entry for entry in self.requests() if entry.get("error")]

    def raw_text(self):
        """spans.jsonl and every kept body, as one latin-1 text (bytes kept one for one), for a search."""
        pieces = []
        for path in self.files():
            with open(path, "rb") as handle:
                pieces.append(handle.read().decode("latin-1"))
        return "\n".join(pieces)

    def files(self):
        found = []
        for folder, _, names in os.walk(self.out):
            found.extend(os.path.join(folder, name) for name in sorted(names))
        return found

    def keep_in(self, folder, prefix="otlp"):
        """Copies what the receiver wrote into a transcript part: PREFIX-spans.jsonl, PREFIX-requests.jsonl and
        PREFIX-bodies/ (nothing when `folder` is None)."""
        if folder is None:
            return
        for name in ("spans.jsonl", "requests.jsonl"):
            path = os.path.join(self.out, name)
            if os.path.exists(path):
                shutil.copyfile(path, os.path.join(folder, "%s-%s" % (prefix, name)))
        bodies = os.path.join(self.out, "bodies")
        if os.path.isdir(bodies):
            shutil.copytree(bodies, os.path.join(folder, "%s-bodies" % prefix), dirs_exist_ok=True)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
