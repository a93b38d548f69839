"""Processes the HA harness starts, the deploy/ha templates it renders, and small helpers they share.

Every process is started through `Processes.spawn`, which remembers it; `Processes.stop_all()` ends each one by
its own pid (SIGTERM, then SIGKILL after a grace period). Nothing is ever signalled by name. PostgreSQL is the one
exception to "started here": Patroni starts it (detached, in a session of its own), so the node code signals the
postmaster by the pid in its `postmaster.pid` and the backends by their parent pid, and Patroni stops them.
"""

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy", "ha")
PLACEHOLDER = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")


class HAError(Exception):
    """A setup or repair step failed (not a test verdict)."""


def render(template, values):
    """The text of deploy/ha/TEMPLATE with every `${NAME}` replaced by `values[NAME]`.

    Raises HAError when the template names a placeholder that `values` lacks, or `values` holds one the template
    does not use (so that the harness and the reference files cannot drift apart silently)."""
    with open(os.path.join(DEPLOY, template)) as handle:
        text = handle.read()
    used = set(PLACEHOLDER.findall(text))
    missing = used - set(values)
    unused = set(values) - used
    if missing or unused:
        raise HAError(f"deploy/ha/{template}: placeholders without a value {sorted(missing)}, "
                      f"values without a placeholder {sorted(unused)}")
    return PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), text)


def write(path, text, mode=0o644, owner=None):
    """Writes `text` to `path` with `mode`, owned by `owner` (an OS user name) when given."""
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)
    if owner:
        chown(path, owner)


def chown(path, owner):
    import pwd
    record = pwd.getpwnam(owner)
    os.chown(path, record.pw_uid, record.pw_gid)


def free_port():
    """A TCP port nothing listens on at 127.0.0.1 now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_user():
    """The OS user PostgreSQL, Patroni and PgBouncer run as: `postgres` when we are root (initdb and PgBouncer
    refuse root), else ourselves."""
    return "postgres" if os.geteuid() == 0 else None


def wait_until(predicate, timeout, message, interval=0.1):
    """Calls `predicate` until it returns something true (returned), or raises HAError(message) after `timeout`
    seconds. Exceptions of the predicate count as false."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception:  # noqa: BLE001 - a probe that fails is a probe that says "not yet"
            pass
        if time.monotonic() >= deadline:
            raise HAError(message)
        time.sleep(interval)


def http_json(url, method="GET", body=None, timeout=3.0):
    """(status, parsed JSON or None) of one request; HTTP errors are answers, not exceptions."""
    import json
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, payload = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    try:
        return status, json.loads(payload or b"null")
    except ValueError:
        return status, None


def children_of(pid):
    """The pids whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def signal_pids(pids, number):
    """Sends signal `number` to each pid; gone ones are skipped. Returns how many were signalled."""
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, number)
            sent += 1
        except ProcessLookupError:
            pass
    return sent


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours is not alive.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Processes:
    """The processes a run started, each stopped by its own pid."""

    def __init__(self, work):
        self.work = work
        self.started = []  # (name, Popen)

    def spawn(self, name, argv, log, env=None, user=None, cwd=None):
        """Starts `argv` with stdout and stderr appended to `log`, in a session of its own, as `user` (an OS user
        name; needs root) when given. Returns the Popen."""
        output = open(log, "ab")
        options = {}
        if user:
            import pwd
            record = pwd.getpwnam(user)
            options.update(user=record.pw_uid, group=record.pw_gid, extra_groups=[])
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                       env=env if env is not None else dict(os.environ), cwd=cwd or self.work,
                                       start_new_session=True, **options)
        finally:
            output.close()
        self.started.append((name, process))
        return process

    def append(self, process):
        """Adopts a process started elsewhere (tools/chaos's Emulator registers its Popen this way)."""
        self.started.append((str(process.args), process))

    def stop(self, process, grace=10.0, number=signal.SIGTERM):
        """Ends one process: `number` (SIGTERM), then SIGKILL after `grace` seconds. Never fails."""
        if process.poll() is None:
            try:
                process.send_signal(number)
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            except ProcessLookupError:
                pass

    def stop_all(self, grace=10.0):
        """Ends every process started here, the last started first."""
        for _, process in reversed(self.started):
            self.stop(process, grace)
