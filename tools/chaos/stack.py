"""Real processes for the chaos tests: a PostgreSQL cluster, the Graph emulator and `fbsessiond serve` instances.

Everything started here is registered with a `Stack` and ended by `Stack.close()` (the caller runs it in a
`finally`). Secrets (API keys, access tokens, encryption keys) live in memory only and are never printed; the
service's own logs go to files under the work directory, which is deleted at the end unless `keep` is set.

With the secrets transcript on (FBS_SECRETS_TRANSCRIPT_DIR, tools/secrets/transcript.py) the services log at debug
level, the keys are noted in the run's ledger, every response of a service that `request()` receives is recorded
(not the emulator's: it plays Facebook and hands out tokens), and `close()`
keeps the service and PostgreSQL logs and a pg_dump in the run directory's folder `name` first.
"""

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "secrets"))
import transcript  # noqa: E402

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
DEMO_APP_ID = "1000000000000001"
DEMO_APP_SECRET = "demo-app-secret-for-the-local-emulator"


class ChaosError(Exception):
    """A setup step failed (not a test verdict)."""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def new_key(kid):
    key = f"{kid}:{base64.b64encode(os.urandom(32)).decode()}"
    transcript.note_keyring(key)
    return key


# Where request() records the responses it receives: the current stack's (tests run one at a time).
responses = transcript.ResponseFile(None)


class Response:
    def __init__(self, status, headers, body, elapsed):
        self.status = status
        self.headers = headers
        self.body = body
        self.elapsed = elapsed

    def json(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    def header(self, name):
        return self.headers.get(name.lower())


def request(base, method, path, body=None, key=None, timeout=30.0, record=True):
    """One HTTP request on a fresh connection. Raises OSError/http.client errors on resets and timeouts.
    `record=False` keeps the answer out of the secrets transcript (the emulator's answers)."""
    parsed = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    headers = {"Connection": "close"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if key:
        headers["Authorization"] = f"Bearer {key}"
    started = time.monotonic()
    try:
        connection.request(method, path, body=data, headers=headers)
        answer = connection.getresponse()
        payload = answer.read()
        if record:
            responses.add(method, path, answer.status, answer.getheaders(), payload)
        return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, payload,
                        time.monotonic() - started)
    finally:
        connection.close()


class Postgres:
    """A throwaway cluster on a fixed port (so that it can be stopped and started under the service)."""

    def __init__(self, directory):
        self.directory = directory
        self.port = free_port()
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        os.makedirs(f"{directory}/socket")
        os.chmod(directory, 0o700)
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", directory], check=True)
        self._run([f"{PG_BIN}/initdb", "-D", f"{directory}/data", "-A", "trust", "-U", "postgres",
                   "--encoding=UTF8", "--locale=C"])
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, argv, check=True):
        result = subprocess.run(self.as_postgres + argv, cwd=self.directory, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise ChaosError(f"{os.path.basename(argv[0])} failed: {result.stderr[-2000:]}")
        return result

    def start(self):
        options = (f"-p {self.port} -k {self.directory}/socket -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c max_connections=300")
        self._run([f"{PG_BIN}/pg_ctl", "-D", f"{self.directory}/data", "-l", f"{self.directory}/postgres.log",
                   "-w", "-t", "60", "-o", options, "start"])

    def stop(self, mode="fast"):
        self._run([f"{PG_BIN}/pg_ctl", "-D", f"{self.directory}/data", "-m", mode, "-w", "-t", "60", "stop"])

    def running(self):
        return os.path.exists(f"{self.directory}/data/postmaster.pid")

    def psql(self, sql):
        """Rows of the last statement, as lists of strings (tab-separated output)."""
        result = subprocess.run(
            [f"{PG_BIN}/psql", "-X", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", "postgres", "-d", "postgres", "-c", sql],
            capture_output=True, text=True)
        if result.returncode != 0:
            raise ChaosError(f"psql failed: {result.stderr.strip()[:500]}")
        return [line.split("\t") for line in result.stdout.splitlines() if line != ""]

    def scalar(self, sql):
        rows = self.psql(sql)
        return rows[0][0] if rows else None


class Emulator:
    def __init__(self, binary, directory, processes):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log = open(f"{directory}/emulator.log", "w")
        self.process = subprocess.Popen([binary, "graph-emulator", "--port", str(self.port)], stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(self.process)
        wait_until(lambda: self._up(), 30, "the Graph emulator did not start")

    def _up(self):
        try:
            return request(self.url, "GET", "/__emulator/", timeout=2, record=False).status == 200
        except OSError:
            return False

    def control(self, method, path, body=None):
        answer = request(self.url, method, "/__emulator/" + path, body=body, timeout=10, record=False)
        if answer.status >= 300:
            raise ChaosError(f"emulator {method} {path}: {answer.status} {answer.body[:300]!r}")
        return answer.json()

    def user_and_token(self, label):
        user = self.control("POST", "users", {"first_name": "Chaos", "last_name": label})
        token = self.control("POST", "tokens", {"app_id": DEMO_APP_ID, "user_id": user["id"], "long_lived": True,
                                                "granted": ["email"]})
        return user["id"], token["access_token"]

    def counters(self):
        return self.control("GET", "counters")

    def graph_calls(self):
        return sum(v for k, v in self.counters().items() if k not in ("cdn", "dialog"))

    def reset_counters(self):
        self.control("DELETE", "counters")

    def latency(self, ms, endpoint="*"):
        self.control("PUT", "latency", {"endpoint": endpoint, "ms": ms})

    def fault(self, endpoint, kind, count=1_000_000, **extra):
        self.control("POST", "faults", {"endpoint": endpoint, "kind": kind, "count": count, **extra})

    def clear_faults(self):
        self.control("DELETE", "faults")

    def token_state(self, token):
        return self.control("POST", "tokens/inspect", {"access_token": token})


class Service:
    """One `fbsessiond serve` process."""

    def __init__(self, stack, name, env):
        self.stack = stack
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(env, FBS_LISTEN=f"127.0.0.1:{self.port}", FBS_PUBLIC_URL=self.url)
        self.process = None
        self.starts = 0

    def start(self):
        self.starts += 1
        log = open(f"{self.stack.work}/{self.name}.{self.starts}.log", "w")
        self.process = subprocess.Popen([self.stack.binary, "serve"], env=self.env, cwd=self.stack.root,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.stack.processes.append(self.process)
        wait_until(self.ready, 60, f"{self.name} did not become ready (log {log.name})")
        return self

    def ready(self):
        if self.process.poll() is not None:
            raise ChaosError(f"{self.name} exited with {self.process.returncode}")
        try:
            return request(self.url, "GET", "/readyz", timeout=2).status == 200
        except OSError:
            return False

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill9(self):
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout=30):
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_text(self):
        text = ""
        for number in range(1, self.starts + 1):
            with open(f"{self.stack.work}/{self.name}.{number}.log", errors="replace") as log:
                text += log.read()
        return text


class Stack:
    """PostgreSQL + emulator + migrated database with the demo app and an API key; services on demand."""

    def __init__(self, binary, root, keep=False, name="chaos"):
        global responses
        self.binary = binary
        self.root = root
        self.keep = keep
        self.processes = []
        self.services = []
        self.part = transcript.part(name)
        responses = transcript.ResponseFile(self.part)
        self.work = tempfile.mkdtemp(prefix="fbs-chaos.")
        os.chmod(self.work, 0o755)
        self.pg = None
        try:
            self.pg = Postgres(f"{self.work}/pg")
            self.pg.start()
            self.emulator = Emulator(binary, self.work, self.processes)
            self.keys = new_key("k1")
            self.base_env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "DATABASE_URL": self.pg.url,
                "FBS_ENCRYPTION_KEYS": self.keys,
                "FBS_GRAPH_URL": self.emulator.url,
                "FBS_DIALOG_URL": self.emulator.url,
                "FBS_LIMITED_JWKS_URL": self.emulator.url + "/.well-known/oauth/openid/jwks/",
                "FBS_LIMITED_UNINSTALL_URL": self.emulator.url + "/platform/uninstall/",
                "FBS_PICTURE_HOSTS": "127.0.0.1",
                "FBS_PICTURE_ALLOW_HTTP": "true",
                "FBS_SWEEP_INTERVAL": "0",
                "FBS_LOG_LEVEL": "info" if self.part is None else "debug",
            }
            self.admin(["migrate"])
            secret = f"{self.work}/app-secret"
            with open(secret, "w") as handle:
                handle.write(DEMO_APP_SECRET + "\n")
            self.admin(["app", "add", "--name", "chaos", "--facebook-app-id", DEMO_APP_ID,
                        "--facebook-app-secret-file", secret, "--redirect-uri", "http://127.0.0.1/callback"])
            out = self.admin(["key", "add", "--app", "chaos", "--scope", "sessions", "--scope", "events",
                              "--scope", "tokens:read"])
            self.api_key = out.strip().splitlines()[-1]
            transcript.note("api key", self.api_key)
            self.app_id = self.pg.scalar("SELECT id FROM apps WHERE name = 'chaos'")
        except BaseException:
            self.close()
            raise

    def admin(self, argv, extra_env=None):
        result = subprocess.run([self.binary] + argv, env=dict(self.base_env, **(extra_env or {})), cwd=self.root,
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise ChaosError(f"fbsessiond {argv[0]} failed ({result.returncode}): {result.stderr[-1500:]}")
        return result.stdout

    def service(self, name, **env):
        service = Service(self, name, dict(self.base_env, **{k: str(v) for k, v in env.items()}))
        self.services.append(service)
        return service.start()

    def close(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.part is not None:
            if self.pg is not None and self.pg.running():
                transcript.pg_dump(self.part, PG_BIN, self.pg.url)
            logs = [os.path.join(self.work, name) for name in sorted(os.listdir(self.work))
                    if name.endswith(".log") and name != "emulator.log"]
            transcript.keep_files(self.part, logs + [os.path.join(self.work, "pg", "postgres.log")])
        if self.pg is not None and self.pg.running():
            try:
                self.pg.stop("immediate")
            except ChaosError:
                pass
        if self.keep:
            print(f"  (kept {self.work})")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def wait_until(predicate, timeout, message, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise ChaosError(message)
