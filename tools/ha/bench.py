#!/usr/bin/env python3
"""Throughput behind the reference deployment (docs/high-availability.md, "Throughput"): status and login
requests per second through PgBouncer in transaction mode against a direct connection, and through nginx to one
instance against three, measured side by side in one run on the HA test's database (two Patroni nodes,
synchronous replication, HAProxy), with wrk and bench/'s scripts.

    tools/ha/bench [--quick]       (builds nothing: FBSESSIOND names a release binary, tools/ha/bench builds one)

Six configurations, each a real `fbsessiond serve` (or nginx in front of some):
  direct       DATABASE_URL through HAProxy to the primary, statements prepared by name (the default)
  unnamed      the same, FBS_DB_PREPARED_STATEMENTS=false (unnamed statements only)
  pgbouncer    DATABASE_URL through PgBouncer (transaction mode) and HAProxy, FBS_DB_PREPARED_STATEMENTS=false
  nginx-1      nginx in front of the pgbouncer instance alone
  nginx-3      nginx in front of the pgbouncer instance and two more like it
  split-3      the same three instances without nginx: the load split between them by wrk itself (three wrk
               processes at once, a third of the connections each)
Every repetition runs each configuration once per route, in turn, so that the machine's noise falls on all of
them alike; a ratio is the median of the per-repetition ratios. On a 2-core machine the three instances share
the two cores with nginx, PostgreSQL twice, PgBouncer, HAProxy, Patroni, etcd, the emulator and wrk itself:
nginx-3 against the single instance shows what the extra hop and processes cost, not what more machines gain.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fleet as fleetlib  # noqa: E402
from cluster import Database  # noqa: E402
from processes import ROOT, HAError, Processes  # noqa: E402

STATUS_CONNECTIONS = 64
LOGIN_CONNECTIONS = 32
SESSIONS = 10000
TOKENS = 600
RATIOS = [
    ("status", "pgbouncer", "direct", "through PgBouncer (transaction mode) / direct"),
    ("status", "unnamed", "direct", "  of which unnamed statements alone / direct"),
    ("status", "pgbouncer", "unnamed", "  of which the PgBouncer hop alone"),
    ("status", "nginx-3", "pgbouncer", "3 instances behind nginx / 1 instance"),
    ("status", "nginx-1", "pgbouncer", "  of which the nginx hop alone"),
    ("status", "nginx-3", "nginx-1", "  3 instances / 1, both behind nginx"),
    ("status", "split-3", "pgbouncer", "3 instances without nginx / 1 instance"),
    ("login", "pgbouncer", "direct", "through PgBouncer (transaction mode) / direct"),
    ("login", "unnamed", "direct", "  of which unnamed statements alone / direct"),
    ("login", "pgbouncer", "unnamed", "  of which the PgBouncer hop alone"),
    ("login", "nginx-3", "pgbouncer", "3 instances behind nginx / 1 instance"),
    ("login", "nginx-1", "pgbouncer", "  of which the nginx hop alone"),
    ("login", "nginx-3", "nginx-1", "  3 instances / 1, both behind nginx"),
    ("login", "split-3", "pgbouncer", "3 instances without nginx / 1 instance"),
]


def wrk_split(urls, script, connections, seconds, env):
    """wrk on each of `urls` at once, the connections shared out; the summed rate and errors."""
    import threading
    results = [None] * len(urls)

    def one(index):
        share = connections // len(urls) + (1 if index < connections % len(urls) else 0)
        tagged = dict(env, BENCH_TAG=f"{env.get('BENCH_TAG')}-{index}")
        results[index] = wrk(urls[index], script, share, seconds, tagged)
    threads = [threading.Thread(target=one, args=(index,)) for index in range(len(urls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(result is None for result in results):
        raise HAError("a wrk of a split run failed")
    return {key: sum(result[key] for result in results) for key in ("rps", "errors_status", "timeouts")}


def measure(target, script, connections, seconds, env):
    """One wrk run against a URL, or a split run against a list of them."""
    if isinstance(target, list):
        return wrk_split(target, script, connections, seconds, env)
    return wrk(target, script, connections, seconds, env)


def wrk(url, script, connections, seconds, env):
    """One wrk run; the numbers of its BENCH line (bench/report.lua)."""
    result = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s", "--timeout", "5s",
                             "-s", os.path.join(ROOT, "bench", script), url],
                            env=dict(os.environ, **env), capture_output=True, text=True, timeout=seconds + 60)
    line = next((line for line in result.stdout.splitlines() if line.startswith("BENCH ")), None)
    if result.returncode != 0 or line is None:
        raise HAError(f"wrk failed: {result.stderr[-300:]}")
    return {key: float(value) for key, value in re.findall(r"(\w+)=([0-9.]+)", line)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 repetitions of 2 s instead of 5 of 5 s")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    options = parser.parse_args()
    repetitions, seconds = (3, 2) if options.quick else (5, 5)
    binary = os.path.abspath(os.environ.get("FBSESSIOND", os.path.join(ROOT, ".build/release/fbsessiond")))
    if not os.access(binary, os.X_OK):
        sys.exit(f"error: no fbsessiond binary at {binary}")
    work = tempfile.mkdtemp(prefix="fbs-ha-bench.")
    os.chmod(work, 0o755)
    processes = Processes(work)
    database = Database(work, processes)
    fleet = None
    started = time.monotonic()
    try:
        database.start()
        settings = {"FBS_VALIDATE_TTL": 3600, "FBS_SWEEP_INTERVAL": 0}
        fleet = fleetlib.Fleet(work, processes, binary, database, settings)
        fleet.prepare()
        direct = database.url("haproxy")
        instances = {
            "direct": fleet.add_service("direct", DATABASE_URL=direct, FBS_DB_PREPARED_STATEMENTS="true"),
            "unnamed": fleet.add_service("unnamed", DATABASE_URL=direct),
            "pgbouncer": fleet.add_service("pgbouncer"),
        }
        more = [fleet.add_service(f"pgbouncer-{n}") for n in (2, 3)]
        urls = {name: service.url for name, service in instances.items()}
        urls["nginx-1"] = fleet.front([instances["pgbouncer"]], "nginx-1", workers=2).url
        urls["nginx-3"] = fleet.front([instances["pgbouncer"]] + more, "nginx-3", workers=2).url
        urls["split-3"] = [instances["pgbouncer"].url] + [service.url for service in more]
        key = fleet.api_key
        tokens = os.path.join(work, "tokens")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "tools.py"), "tokens", fleet.emulator.url,
                        fleetlib.DEMO_APP_ID, str(TOKENS), tokens], check=True, stdout=subprocess.DEVNULL)
        _, token = fleet.emulator.user_and_token("template")
        answer = fleetlib.chaos.request(urls["direct"], "POST", "/v1/sessions",
                                        {"owner": "bench-template", "access_token": token}, key, record=False)
        template = (answer.json() or {}).get("id")
        if answer.status != 201 or not template:
            raise HAError(f"the template login answered {answer.status}")
        database.psql_file(os.path.join(ROOT, "bench", "load.sql"), {"n": SESSIONS, "template": template})
        print(f"ha bench: {len(urls)} configurations ready after {time.monotonic() - started:.0f} s; "
              f"{repetitions} x {seconds} s per configuration and route", flush=True)

        status_env = {"BENCH_KEY": key, "BENCH_PATH": "/v1/sessions/{id}", "BENCH_IDS": str(SESSIONS)}
        for url in urls.values():  # warm-up: every instance's pool and caches
            measure(url, "get.lua", STATUS_CONNECTIONS, 1, status_env)
        figures = {(route, name): [] for route in ("status", "login") for name in urls}
        errors = {name: 0 for name in urls}
        for repetition in range(repetitions):
            for name, url in urls.items():
                result = measure(url, "get.lua", STATUS_CONNECTIONS, seconds, status_env)
                figures[("status", name)].append(result["rps"])
                errors[name] += int(result["errors_status"] + result["timeouts"])
            for name, url in urls.items():
                result = measure(url, "login.lua", LOGIN_CONNECTIONS, seconds, {
                    "BENCH_KEY": key, "BENCH_TOKENS": tokens, "BENCH_THREADS": "2",
                    "BENCH_TAG": f"{name}-{repetition}"})
                figures[("login", name)].append(result["rps"])
                errors[name] += int(result["errors_status"] + result["timeouts"])
            for service in fleet.services:  # one log line per request: keep the disk free
                open(service.log, "w").close()
            print(f"  repetition {repetition + 1}/{repetitions} done", flush=True)

        print(f"\nthroughput, requests/s (median of {repetitions} x {seconds} s; status: GET /v1/sessions/{{id}} "
              f"within the TTL, {STATUS_CONNECTIONS} connections, {SESSIONS} sessions; login: POST /v1/sessions, "
              f"no Graph latency, {LOGIN_CONNECTIONS} connections)")
        print(f"  {'configuration':<12} {'status':>8} {'login':>8}  non-2xx or timeouts")
        for name in urls:
            print(f"  {name:<12} {statistics.median(figures[('status', name)]):>8.0f} "
                  f"{statistics.median(figures[('login', name)]):>8.0f}  {errors[name]}")
        print("\nratios (median of the per-repetition ratios)")
        for route, top, bottom, label in RATIOS:
            ratio = statistics.median(a / b for a, b in zip(figures[(route, top)], figures[(route, bottom)]))
            print(f"  {route:<6} {label:<48} {top} / {bottom} = {ratio:.2f}")
        print(f"\n(ha bench: {time.monotonic() - started:.0f} s; binary {binary}; load average "
              f"{open('/proc/loadavg').read().split()[0]})")
        if any(errors.values()):
            sys.exit("error: some requests failed (see the table)")
    finally:
        if fleet is not None:
            fleet.close()
        database.stop()
        processes.stop_all()
        if options.keep:
            print(f"(kept {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
