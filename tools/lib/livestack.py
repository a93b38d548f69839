"""A live fbsessiond for the hostile-input tools (Python standard library only).

Starts what scripts/test-system starts, with the same shell functions (scripts/lib.sh): a throwaway PostgreSQL
cluster, the Graph emulator (`fbsessiond graph-emulator`), `migrate`, the emulator's demo app and an API key with
every scope, then `fbsessiond serve` with its stderr in a file. `Stack.stop()` (or leaving the `with` block)
stops them and removes the cluster. The binary is `binary`, else $FBSESSIOND, else the debug build.

The key, the encryption key and the app secret are kept in memory and in files under the stack's directory
(mode 0700); nothing here prints them.

With the secrets transcript on (FBS_SECRETS_TRANSCRIPT_DIR, tools/secrets/transcript.py), the service logs at
debug level whatever `log_level` says, the keys are noted in the run's ledger, `responses` records what the caller
adds to it, and `stop()` keeps the service, command and PostgreSQL logs and a pg_dump in the run directory's
folder `name` (or `name-2`, ...) before the cluster is removed.
"""

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "secrets"))
import transcript  # noqa: E402
DEMO_APP_ID = "1000000000000001"
DEMO_APP_SECRET = "demo-app-secret-for-the-local-emulator"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sh_lib(command):
    """Runs `command` in bash with scripts/lib.sh sourced; returns its stdout."""
    return subprocess.run(["bash", "-c", ". scripts/lib.sh; " + command], cwd=ROOT, check=True,
                          stdout=subprocess.PIPE, text=True).stdout


class Stack:
    def __init__(self, env=None, binary=None, log_level="info", name="livestack"):
        self.binary = binary or os.environ.get("FBSESSIOND") or os.path.join(ROOT, ".build/debug/fbsessiond")
        if not os.access(self.binary, os.X_OK):
            raise SystemExit("build first: swift build (no %s)" % self.binary)
        self.part = transcript.part(name)
        if self.part is not None:
            log_level = "debug"
        self.responses = transcript.ResponseFile(self.part)
        self.work = tempfile.mkdtemp(prefix="fbs-hostile.", dir="/tmp")
        os.chmod(self.work, 0o755)
        self.processes = []
        self.pg_dir = os.path.join(self.work, "pg")
        self.pg_bin = sh_lib("fbs_pg_bin").strip()
        try:
            self._start(env or {}, log_level)
        except BaseException:
            self.stop()
            raise

    def _start(self, env, log_level):
        port = sh_lib('PG_BIN="%s"; fbs_test_cluster_start "%s" >&2; echo "$FBS_PG_PORT"'
                      % (self.pg_bin, self.pg_dir)).strip()
        self.database_url = "postgresql://postgres@127.0.0.1:%s/postgres" % port
        self.encryption_key = base64.b64encode(os.urandom(32)).decode()
        transcript.note_keyring(self.encryption_key)
        self.emulator_port = free_port()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.emulator_url = "http://127.0.0.1:%d" % self.emulator_port
        self.env = dict(os.environ)
        self.env.update({
            "DATABASE_URL": self.database_url, "FBS_ENCRYPTION_KEYS": "k1:" + self.encryption_key,
            "FBS_LISTEN": "127.0.0.1:%d" % self.port, "FBS_GRAPH_URL": self.emulator_url,
            "FBS_DIALOG_URL": self.emulator_url, "FBS_PICTURE_HOSTS": "127.0.0.1", "FBS_PICTURE_ALLOW_HTTP": "true",
            "FBS_SWEEP_INTERVAL": "0", "FBS_PUBLIC_URL": self.url, "FBS_LOG_LEVEL": log_level,
            "FBS_LIMITED_JWKS_URL": self.emulator_url + "/.well-known/oauth/openid/jwks/",
            "FBS_LIMITED_UNINSTALL_URL": self.emulator_url + "/platform/uninstall/",
        })
        self.env.update(env)
        self.emulator_log = os.path.join(self.work, "emulator.log")
        self.service_log = os.path.join(self.work, "service.log")
        self._spawn([self.binary, "graph-emulator", "--port", str(self.emulator_port)], self.emulator_log)
        self.run_command(["migrate"])
        secret_file = os.path.join(self.work, "secret")
        with open(secret_file, "w") as handle:
            handle.write(DEMO_APP_SECRET + "\n")
        self.run_command(["app", "add", "--name", "hostile", "--facebook-app-id", DEMO_APP_ID,
                          "--facebook-app-secret-file", secret_file, "--redirect-uri", self.url + "/callback"])
        self.key = self.run_command(["key", "add", "--app", "hostile", "--scope", "sessions", "--scope", "events",
                                     "--scope", "tokens:read"]).strip().splitlines()[-1]
        transcript.note("api key", self.key)
        self.service = self._spawn([self.binary, "serve"], self.service_log)
        self.wait_ready()

    def _spawn(self, argv, log):
        with open(log, "ab") as output:
            process = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=output, stderr=output,
                                       preexec_fn=os.setsid)
        self.processes.append(process)
        return process

    def start_service(self, env, log_name):
        """Another `fbsessiond serve` on the stack's database and emulator, on a port of its own, with `env` over
        the stack's settings (a value of None removes the stack's) and its output in WORK/LOG_NAME (kept with the
        other logs). Returns (process, url) once /readyz answers; `stop()` stops it with the rest, `stop_process`
        before."""
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        settings = dict(self.env, FBS_LISTEN="127.0.0.1:%d" % port, FBS_PUBLIC_URL=url)
        for name, value in env.items():
            if value is None:
                settings.pop(name, None)
            else:
                settings[name] = value
        with open(os.path.join(self.work, log_name), "ab") as output:
            process = subprocess.Popen([self.binary, "serve"], cwd=ROOT, env=settings, stdout=output, stderr=output,
                                       preexec_fn=os.setsid)
        self.processes.append(process)
        deadline = time.time() + 60
        while time.time() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        return process, url
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the extra service did not become ready (log: %s)" % log_name)

    @staticmethod
    def stop_process(process, seconds=15):
        """SIGTERM to a started process's group, SIGKILL after `seconds`. Returns whether SIGTERM was enough."""
        if process.poll() is not None:
            return True
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return False

    def run_command(self, arguments, env=None, check=True):
        """Runs `fbsessiond ARGUMENTS` to completion; returns stdout (stderr goes to the service log)."""
        with open(os.path.join(self.work, "commands.log"), "ab") as errors:
            result = subprocess.run([self.binary] + arguments, cwd=ROOT, env=dict(self.env, **(env or {})),
                                    stdout=subprocess.PIPE, stderr=errors, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError("fbsessiond %s failed (%d)" % (arguments[0], result.returncode))
        return result.stdout.decode()

    def wait_ready(self, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            if self.service.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("the service did not become ready (log: %s)" % self.service_log)

    @property
    def pid(self):
        return self.service.pid

    def rss_kib(self):
        with open("/proc/%d/status" % self.pid) as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def fd_count(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def emulator(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.emulator_url + "/__emulator/" + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"null")

    def user_token(self, name="Hostile Tester", long_lived=False):
        user = self.emulator("POST", "users", {"name": name, "email": "h%d@example.com" % os.getpid()})
        token = self.emulator("POST", "tokens", {"app_id": DEMO_APP_ID, "user_id": user["id"],
                                                  "long_lived": long_lived})
        return user, token["access_token"]

    def pg_dump(self):
        return subprocess.run([os.path.join(self.pg_bin, "pg_dump"), "--no-owner", self.database_url],
                              check=True, stdout=subprocess.PIPE).stdout.decode("utf-8", "replace")

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=15)
                except (OSError, subprocess.TimeoutExpired):
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        if self.part is not None and getattr(self, "database_url", None):
            transcript.pg_dump(self.part, self.pg_bin, self.database_url)
            logs = [os.path.join(self.work, name) for name in sorted(os.listdir(self.work))
                    if name.endswith(".log") and name != "emulator.log"]
            transcript.keep_files(self.part, logs + [os.path.join(self.pg_dir, "postgres.log")])
        sh_lib('PG_BIN="%s"; fbs_test_cluster_remove "%s"' % (self.pg_bin, self.pg_dir))
        if os.environ.get("FBS_KEEP_WORK") != "1":
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
