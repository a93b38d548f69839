"""The service side of the HA harness: the Graph emulator as Facebook, three `fbsessiond serve` instances (pool
through PgBouncer, listener, migrations and locks through HAProxy), nginx in front of them (deploy/ha's file),
and a webhook receiver that checks every delivery's signature.

The API key, the encryption key, the webhook secret and the database password stay in memory (and in the
processes' environments); nothing here prints them. With the secrets transcript on they are noted in its ledger.
"""

import hashlib
import hmac
import http.server
import json
import os
import sys
import threading
import time

from processes import ROOT, HAError, free_port, render, wait_until, write

sys.path.insert(0, os.path.join(ROOT, "tools", "chaos"))
sys.path.insert(0, os.path.join(ROOT, "tools", "secrets"))
import stack as chaos  # noqa: E402  (the chaos tests' emulator client and request())
import transcript  # noqa: E402

DEMO_APP_ID = chaos.DEMO_APP_ID


class Service:
    """One `fbsessiond serve`."""

    def __init__(self, fleet, name, env):
        self.fleet = fleet
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(env, FBS_LISTEN=f"127.0.0.1:{self.port}")
        self.log = os.path.join(fleet.work, f"{name}.log")
        self.process = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.process = self.fleet.processes.spawn(self.name, [self.fleet.binary, "serve"], self.log, env=self.env,
                                                  cwd=ROOT)
        wait_until(self.ready, 60, f"{self.name} did not become ready ({self.log})")

    def ready(self):
        if self.process.poll() is not None:
            raise HAError(f"{self.name} exited with {self.process.returncode} ({self.log})")
        return chaos.request(self.url, "GET", "/readyz", timeout=2, record=False).status == 200

    def alive(self):
        return self.process is not None and self.process.poll() is None


class WebhookReceiver:
    """An HTTP server on 127.0.0.1 that takes fbsessiond's webhook deliveries: each POST's `X-FBS-Signature`
    (`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`) is checked, the event id recorded, 200
    answered. A delivery with a bad signature is recorded as such (and answered 400)."""

    def __init__(self):
        self.secret = None
        self.lock = threading.Lock()
        self.deliveries = []  # (event id, monotonic time)
        self.bad_signatures = 0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the name http.server calls
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                good = receiver._signed(self.headers.get("X-FBS-Signature") or "", body)
                event = None
                try:
                    event = json.loads(body).get("id")
                except (ValueError, AttributeError):
                    good = False
                with receiver.lock:
                    if good and event is not None:
                        receiver.deliveries.append((str(event), time.monotonic()))
                    else:
                        receiver.bad_signatures += 1
                self.send_response(200 if good else 400)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *arguments):
                pass

        class Server(http.server.ThreadingHTTPServer):
            # The service posts many deliveries at once after an outage: a listen backlog of 5 (the default)
            # drops connections, which the service then reports as timeouts.
            request_queue_size = 256
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, name="webhooks", daemon=True)
        self.thread.start()

    def _signed(self, header, body):
        parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
        if self.secret is None or "t" not in parts or "v1" not in parts:
            return False
        expected = hmac.new(self.secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, parts["v1"])

    def received(self):
        """The event ids delivered so far, with repeats, in arrival order."""
        with self.lock:
            return [event for event, _ in self.deliveries]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Nginx:
    """nginx in front of some instances, from deploy/ha/nginx-fbsessiond.conf (its three INSTANCE lines get the
    instances given, repeated when fewer), under a minimal nginx.conf of the harness's own."""

    def __init__(self, work, processes, name, services, workers=1, port=None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        directory = os.path.join(work, name)
        temporary = os.path.join(directory, "tmp")
        os.makedirs(temporary)
        os.chmod(temporary, 0o777)  # nginx's workers run as nobody when the master is root
        values = {"LISTEN_ADDRESS": f"127.0.0.1:{self.port}"}
        for index in range(3):
            values[f"INSTANCE_{index + 1}"] = f"127.0.0.1:{services[index % len(services)].port}"
        write(os.path.join(directory, "fbsessiond.conf"), render("nginx-fbsessiond.conf", values))
        write(os.path.join(directory, "nginx.conf"), f"""# tools/ha: the process settings; the proxy itself is
# deploy/ha/nginx-fbsessiond.conf
daemon off;
worker_processes {workers};
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    client_body_temp_path {temporary}/body;
    proxy_temp_path {temporary}/proxy;
    fastcgi_temp_path {temporary}/fastcgi;
    uwsgi_temp_path {temporary}/uwsgi;
    scgi_temp_path {temporary}/scgi;
    include {directory}/fbsessiond.conf;
}}
""")
        self.process = processes.spawn(name, [
            "nginx", "-e", os.path.join(directory, "error.log"), "-p", directory, "-c",
            os.path.join(directory, "nginx.conf")], os.path.join(directory, "stdout.log"))
        wait_until(lambda: chaos.request(self.url, "GET", "/readyz", timeout=2, record=False).status == 200, 30,
                   f"nginx does not reach the instances ({name}/error.log)")


class Fleet:
    """The emulator, the migrated database with one app, an API key and a webhook, the instances and nginx."""

    def __init__(self, work, processes, binary, database, settings, instances=3):
        self.work = work
        self.processes = processes
        self.binary = binary
        self.database = database
        self.settings = settings
        self.count = instances
        self.services = []
        self.nginx = None
        # nginx's address is the service's public URL (FBS_PUBLIC_URL), so it is chosen before anything starts.
        self.public_port = free_port()
        self.url = f"http://127.0.0.1:{self.public_port}"
        self.hooks = WebhookReceiver()
        self.keys = chaos.new_key("k1")  # notes the keyring in the transcript's ledger
        transcript.note("database password", database.passwords["fbsessiond"])

    def base_env(self):
        """The environment of every instance and admin command (the same for all, as the operator's env file),
        plus the sanitizers' settings of this run (.ci/run sends every ASan/LSan report to a folder it checks)."""
        sanitizers = {name: value for name, value in os.environ.items()
                      if name.split("_", 1)[0] in ("ASAN", "LSAN", "UBSAN", "TSAN")}
        return {
            **sanitizers,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "DATABASE_URL": self.database.url("pgbouncer"),
            "FBS_DIRECT_DATABASE_URL": self.database.url("haproxy"),
            "FBS_DB_PREPARED_STATEMENTS": "false",
            "FBS_ENCRYPTION_KEYS": self.keys,
            "FBS_GRAPH_URL": self.emulator.url,
            "FBS_DIALOG_URL": self.emulator.url,
            "FBS_PICTURE_HOSTS": "127.0.0.1",
            "FBS_PICTURE_ALLOW_HTTP": "true",
            "FBS_PUBLIC_URL": self.url,
            "FBS_LOG_LEVEL": "debug" if transcript.enabled() else "info",
            **{name: str(value) for name, value in self.settings.items()},
        }

    def prepare(self):
        """The emulator, migrations, the app, an API key (sessions, events, tokens:read, audit) and a webhook to the
        receiver."""
        self.emulator = chaos.Emulator(self.binary, self.work, self.processes)
        # Migrations and the admin commands go past the pooler, as an operator's deploy step would.
        self.admin(["migrate"])
        secret = os.path.join(self.work, "app-secret")
        write(secret, chaos.DEMO_APP_SECRET + "\n", 0o600)
        self.admin(["app", "add", "--name", "ha", "--facebook-app-id", DEMO_APP_ID,
                    "--facebook-app-secret-file", secret, "--redirect-uri", self.url + "/callback"])
        self.api_key = self.admin(["key", "add", "--app", "ha", "--scope", "sessions", "--scope", "events",
                                   "--scope", "tokens:read", "--scope", "audit"]).strip().splitlines()[-1]
        transcript.note("api key", self.api_key)
        self.hooks.secret = self.admin(["webhook", "add", "--app", "ha", "--url",
                                        self.hooks.url]).strip().splitlines()[-1]
        transcript.note("webhook secret", self.hooks.secret)
        self.app_id = self.database.scalar("SELECT id FROM apps WHERE name = 'ha'")

    def add_service(self, name, **overrides):
        """Starts one more `fbsessiond serve` with the common environment and `overrides` (None removes one)."""
        env = self.base_env()
        for variable, value in overrides.items():
            if value is None:
                env.pop(variable, None)
            else:
                env[variable] = str(value)
        service = Service(self, name, env)
        self.services.append(service)
        service.start()
        return service

    def start(self):
        """The HA test's fleet: `prepare()`, the instances, and nginx at the public URL in front of them."""
        self.prepare()
        for number in range(1, self.count + 1):
            self.add_service(f"fbsessiond-{number}")
        self.nginx = self.front(self.services, "nginx", port=self.public_port)

    def front(self, services, name, port=None, workers=1):
        """nginx in front of `services` (on `port` when given)."""
        return Nginx(self.work, self.processes, name, services, workers, port)

    def admin(self, argv):
        """Runs `fbsessiond ARGV` to completion with DATABASE_URL past the pooler; returns its stdout."""
        import subprocess
        env = self.base_env()
        env["DATABASE_URL"] = env["FBS_DIRECT_DATABASE_URL"]
        result = subprocess.run([self.binary] + argv, env=env, cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
        if result.returncode != 0:
            raise HAError(f"fbsessiond {argv[0]} failed ({result.returncode}): {result.stderr[-800:]}")
        return result.stdout

    def service_logs(self):
        return [service.log for service in self.services]

    def close(self):
        if self.nginx is not None:
            self.processes.stop(self.nginx.process)
        for service in self.services:
            if service.process is not None:
                self.processes.stop(service.process, grace=15)
        self.hooks.close()
