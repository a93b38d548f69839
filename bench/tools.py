#!/usr/bin/env python3
"""Helpers for bench/run that wrk cannot do. Standard library only; prints no key or token.

  tools.py tokens EMULATOR_URL APP_ID COUNT OUT   create COUNT emulator users, one long-lived token each, in OUT
                                                  (one token a line, mode 600); prints the user ids, one a line
  tools.py hold PORT COUNT PID                    open COUNT keep-alive connections, one GET /healthz on each,
                                                  keep them open, print "ANSWERED RSS_KIB" (the VmRSS of PID)
  tools.py ready BINARY PORT COUNT LOG            COUNT times: exec `BINARY serve` on PORT (environment inherited),
                                                  time until the first 200 from /readyz, stop it; prints the
                                                  milliseconds, one a line
  tools.py rss PID                                VmRSS of PID in KiB
  tools.py logins API EMULATOR_URL APP_ID TOKENS USERS COUNT KINDS
                                                  COUNT rounds, one request at a time; each round logs in once per kind
                                                  of KINDS (comma-separated: standard = a token of TOKENS, limited = a
                                                  nonce from the service, a token the emulator signs for a user of
                                                  USERS, then the login) and prints one line of the login requests'
                                                  milliseconds, in KINDS' order (only the POST /v1/sessions is timed;
                                                  the key is BENCH_KEY)
"""
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit(f"tools.py: no VmRSS for pid {pid}")


def tokens(emulator, app_id, count, out):
    parsed = urllib.parse.urlparse(emulator)
    users = [None] * count
    issued = [None] * count
    failures = []

    def worker(indices):
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)

        def post(path, body):
            connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            response = connection.getresponse()
            data = response.read()
            if response.status != 201:
                raise RuntimeError(f"{path}: HTTP {response.status}")
            return json.loads(data)

        try:
            for i in indices:
                user = post("/__emulator/users", {"first_name": "Bench", "last_name": f"User{i}"})
                token = post("/__emulator/tokens",
                             {"app_id": app_id, "user_id": user["id"], "long_lived": True,
                              "granted": ["public_profile", "email"]})
                users[i] = user["id"]
                issued[i] = token["access_token"]
        except Exception as error:  # reported below, without any token
            failures.append(str(error))

    workers = [threading.Thread(target=worker, args=(range(k, count, 4),)) for k in range(4)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if failures:
        raise SystemExit(f"tools.py tokens: {failures[0]}")
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write("\n".join(issued) + "\n")
    print("\n".join(users))


def hold(port, count, pid):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 256)), hard))
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
        sockets.append(s)
    answered = 0
    for s in sockets:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        if head.startswith(b"HTTP/1.1 200"):
            answered += 1
    time.sleep(1.0)
    # Every connection is still open (keep-alive), idle after its one request.
    print(answered, rss_kib(pid))
    sys.stdout.flush()
    for s in sockets:
        s.close()


def readyz_ok(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /readyz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def ready(binary, port, count, log):
    with open(log, "ab") as output:
        for _ in range(count):
            env = dict(os.environ, FBS_LISTEN=f"127.0.0.1:{port}")
            started = time.monotonic()
            process = subprocess.Popen([binary, "serve"], env=env, stdout=output, stderr=output)
            try:
                while not readyz_ok(port):
                    if process.poll() is not None:
                        raise SystemExit(f"tools.py ready: serve exited with {process.returncode} (log: {log})")
                    if time.monotonic() - started > 30:
                        raise SystemExit("tools.py ready: not ready after 30 s")
                    time.sleep(0.001)
                print(f"{(time.monotonic() - started) * 1000:.1f}")
                sys.stdout.flush()
            finally:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            time.sleep(0.2)


def logins(api, emulator, app_id, tokens_file, users_file, count, kinds):
    """Times logins of each kind, interleaved, one at a time (see the module's help)."""
    key = os.environ.get("BENCH_KEY", "")
    with open(tokens_file) as file:
        tokens = [line.strip() for line in file if line.strip()]
    with open(users_file) as file:
        users = [line.strip() for line in file if line.strip()]
    service = urllib.parse.urlparse(api)
    facebook = urllib.parse.urlparse(emulator)
    to_service = http.client.HTTPConnection(service.hostname, service.port, timeout=30)
    to_emulator = http.client.HTTPConnection(facebook.hostname, facebook.port, timeout=30)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + key}
    tag = "%d-%d" % (os.getpid(), int(time.time() * 1000))

    def post(connection, path, body, wanted):
        connection.request("POST", path, json.dumps(body), headers)
        response = connection.getresponse()
        data = response.read()
        if response.status not in wanted:
            raise SystemExit(f"tools.py logins: {path} answered HTTP {response.status}")
        return json.loads(data)

    for round_number in range(count):
        times = []
        for kind in kinds.split(","):
            owner = f"bench-{kind}-{tag}-{round_number}"
            if kind == "standard":
                body = {"owner": owner, "access_token": tokens[round_number % len(tokens)]}
            elif kind == "limited":
                nonce = post(to_service, "/v1/login-nonces", {"owner": owner}, (201,))["nonce"]
                minted = post(to_emulator, "/__emulator/limited/tokens",
                              {"app_id": app_id, "user_id": users[round_number % len(users)], "nonce": nonce}, (201,))
                body = {"owner": owner, "authentication_token": minted["authentication_token"]}
            else:
                raise SystemExit(f"tools.py logins: unknown kind {kind}")
            started = time.monotonic()
            post(to_service, "/v1/sessions", body, (200, 201))
            times.append("%.2f" % ((time.monotonic() - started) * 1000))
        print(" ".join(times), flush=True)


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    command, args = argv[1], argv[2:]
    if command == "tokens" and len(args) == 4:
        tokens(args[0], args[1], int(args[2]), args[3])
    elif command == "hold" and len(args) == 3:
        hold(int(args[0]), int(args[1]), int(args[2]))
    elif command == "ready" and len(args) == 4:
        ready(args[0], int(args[1]), int(args[2]), args[3])
    elif command == "logins" and len(args) == 7:
        logins(args[0], args[1], args[2], args[3], args[4], int(args[5]), args[6])
    elif command == "rss" and len(args) == 1:
        print(rss_kib(int(args[0])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
