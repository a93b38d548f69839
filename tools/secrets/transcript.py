"""The secrets transcript of a test run, for the Python tools (standard library only).

`scripts/test` (a full run) and `scripts/test-system secrets` set two variables:

  FBS_SECRETS_TRANSCRIPT_DIR   the run directory: every live service of the run logs at debug level, and its
                               logs, the responses it gave and a dump of its database are kept there, one
                               folder per stack ("part"), instead of being deleted with the stack
  FBS_SECRETS_LEDGER           the ledger: every secret the run creates, one `kind<TAB>hex<LF>` line each
                               (the Graph emulator notes the tokens, codes and app secrets it mints; the tools
                               note the API keys and encryption keys they make)

`tools/secrets/scan-run` then searches the whole directory for every ledger secret in every encoding
(docs/reliability.md, "Secrets: the whole suite"). Without the variables every function here does nothing.

Responses are kept as records that the scanner can take apart (the Swift helper, TestSupport's
SecretsTranscript, writes the same):

    #fbs-response METHOD PATH STATUS HEAD_BYTES BODY_BYTES<LF>
    HTTP/1.1 STATUS<CR><LF>Name: value<CR><LF>...<CR><LF><CR><LF>   (HEAD_BYTES bytes)
    body                                                          (BODY_BYTES bytes, as sent)
    <LF>

PATH is the request path without its query string, with every byte outside printable ASCII (and `%`)
percent-encoded. The first line names the request; it is not scanned (the request is the test's own data).

The ledger and everything in the run directory are secret material: nothing here prints them.
"""

import os
import shutil
import subprocess
import threading

RECORD_MARK = b"#fbs-response "


def directory():
    """The run directory, or None when the transcript is off."""
    return os.environ.get("FBS_SECRETS_TRANSCRIPT_DIR") or None


def enabled():
    return directory() is not None


def note(kind, value):
    """Notes one secret (str or bytes) in the ledger, when there is one."""
    ledger = os.environ.get("FBS_SECRETS_LEDGER")
    if not ledger or not value:
        return
    raw = value if isinstance(value, bytes) else value.encode()
    line = ("%s\t%s\n" % (kind, raw.hex())).encode()
    descriptor = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def note_keyring(text):
    """Notes every key of a keyring in settings form (`kid:base64,...`): the base64 text and the raw bytes."""
    import base64
    import binascii
    for entry in text.split(","):
        encoded = entry.split(":", 1)[-1]
        note("encryption key", encoded)
        try:
            note("encryption key bytes", base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            pass


def part(name):
    """A new folder of the run directory for one stack: NAME, or NAME-2, NAME-3, ... when taken. None when off."""
    base = directory()
    if base is None:
        return None
    os.makedirs(base, mode=0o700, exist_ok=True)
    number = 1
    while True:
        candidate = os.path.join(base, name if number == 1 else "%s-%d" % (name, number))
        try:
            os.mkdir(candidate, 0o700)
            return candidate
        except FileExistsError:
            number += 1


def printable(text):
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    out = "".join(chr(byte) if 0x20 < byte < 0x7F and byte != 0x25 else "%%%02X" % byte for byte in raw)
    return out or "-"


def record(method, path, status, headers, body):
    """One response as a transcript record (bytes). `headers` is a list of (name, value)."""
    head = "HTTP/1.1 %d\r\n" % status + "".join("%s: %s\r\n" % (name, value) for name, value in headers) + "\r\n"
    head_bytes = head.encode("utf-8", "replace")
    body = body or b""
    first = "#fbs-response %s %s %d %d %d\n" % (printable(method), printable(path.split("?", 1)[0]), status,
                                                len(head_bytes), len(body))
    return first.encode() + head_bytes + body + b"\n"


class ResponseFile:
    """Appends response records to FOLDER/NAME (thread-safe). Does nothing when `folder` is None."""

    def __init__(self, folder, name="responses.txt"):
        self.path = os.path.join(folder, name) if folder else None
        self.lock = threading.Lock()

    def add(self, method, path, status, headers, body):
        if self.path is None:
            return
        data = record(method, path, status, headers, body)
        with self.lock:
            with open(self.path, "ab") as output:
                output.write(data)


def regions(data):
    """The records of a responses file: (start, head_start, body_start, end, method, path, status) each, where
    start is the first line's offset and end the offset after the body. Stops at the first malformed record."""
    found = []
    offset = 0
    size = len(data)
    while offset < size:
        newline = data.find(b"\n", offset)
        if newline < 0 or not data.startswith(RECORD_MARK, offset):
            break
        fields = data[offset + len(RECORD_MARK):newline].split(b" ")
        if len(fields) != 5:
            break
        try:
            status, head_length, body_length = int(fields[2]), int(fields[3]), int(fields[4])
        except ValueError:
            break
        head_start = newline + 1
        body_start = head_start + head_length
        end = body_start + body_length
        found.append((offset, head_start, body_start, end, fields[0].decode(), fields[1].decode(), status))
        offset = end + 1
    return found


def har_to_responses(har_path, output_path):
    """Rewrites a HAR file (schemathesis --report har) as response records, and deletes the HAR (its requests
    carry the API key). Returns the number of responses."""
    import base64
    import json
    import urllib.parse
    with open(har_path, encoding="utf-8") as handle:
        har = json.load(handle)
    count = 0
    with open(output_path, "ab") as output:
        for entry in har.get("log", {}).get("entries", []):
            request, response = entry.get("request", {}), entry.get("response", {})
            content = response.get("content", {}) or {}
            text = content.get("text") or ""
            body = base64.b64decode(text) if content.get("encoding") == "base64" else text.encode("utf-8")
            headers = [(h.get("name", ""), h.get("value", "")) for h in response.get("headers", [])]
            path = urllib.parse.urlsplit(request.get("url", "")).path
            output.write(record(request.get("method", "-"), path, int(response.get("status") or 0), headers, body))
            count += 1
    os.remove(har_path)
    return count


def keep_files(folder, paths):
    """Copies the files that exist into `folder` (a part); logs of stacks about to be deleted."""
    if folder is None:
        return
    for path in paths:
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(folder, os.path.basename(path)))


def pg_dump(folder, pg_bin, database_url, name="pg_dump.sql"):
    """A plain-text pg_dump of the database into `folder` (nothing when off). Returns whether it worked."""
    if folder is None:
        return False
    with open(os.path.join(folder, name), "wb") as output:
        result = subprocess.run([os.path.join(pg_bin, "pg_dump"), "--no-owner", database_url], stdout=output,
                                stderr=subprocess.DEVNULL, timeout=120)
    return result.returncode == 0


def main(arguments):
    """`transcript.py har2responses HAR OUTPUT`: for Tests/System/schemathesis.sh."""
    if len(arguments) == 3 and arguments[0] == "har2responses":
        print("%d responses" % har_to_responses(arguments[1], arguments[2]))
        return 0
    print("usage: transcript.py har2responses HAR OUTPUT")
    return 2


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
