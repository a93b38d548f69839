#!/usr/bin/env python3
"""The HA test (docs/high-availability.md): fbsessiond through a PostgreSQL failover, behind PgBouncer in
transaction mode, with nothing lost.

    tools/ha/run [--only NAME,...] [--keep]      (FBSESSIOND names the binary: .build/debug/fbsessiond)

Stands up, on 127.0.0.1 with free ports under a temporary folder, from Debian packages and deploy/ha's files:
etcd, two PostgreSQL 15 nodes under Patroni (synchronous mode), HAProxy on Patroni's /primary, PgBouncer in
transaction mode, the Graph emulator, three `fbsessiond serve` behind nginx, a webhook receiver, and Prometheus
scraping the instances with deploy/observability's alert rules (sped up). Under steady load it checks that no alert
fires in a calm before the faults, runs the scenarios (all of them, as CI does: switchover, kill9, standby-stall,
node-loss, freeze; or those --only names), checks each one (and the alerts it fired), then kills one instance and
checks that Prometheus reports it down, and prints a table. Every process it starts is stopped by its pid, also
on failure, SIGINT or SIGTERM. Exits non-zero
when any check failed.
"""

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fleet as fleetlib  # noqa: E402  (puts tools/chaos and tools/secrets on sys.path)
import checks  # noqa: E402
import scenarios  # noqa: E402
from prometheus import Prometheus, dashboard_queries  # noqa: E402
import transcript  # noqa: E402
import verify  # noqa: E402
from cluster import PG_BIN, Database  # noqa: E402
from load import POLL_WAIT, Load  # noqa: E402
from processes import DEPLOY, ROOT, HAError, Processes, wait_until  # noqa: E402

TOOLS = {"etcd": "etcd-server", "patroni": "patroni", "haproxy": "haproxy", "pgbouncer": "pgbouncer",
         "nginx": "nginx", "prometheus": "prometheus"}
# Seconds of load before the first fault during which no alert may fire: longer than every sped-up `for:` but the
# Graph version's (1 h / 60), which the emulator's default version is years away from.
CALM = 15.0
# The alerts each scenario must fire (on some instance); docs/operations.md, "Alerts in the HA check", has what
# else fired. Every failover answers 503 database_unavailable for seconds. The three faults that cost Patroni's
# ttl (20 s) also keep every listener without a connection (through HAProxy) for far longer than the sped-up 2 s
# of FBSCacheNotListening; a switchover or a crashed postmaster (about 5 s) fired it too in the runs so far, but
# with less margin, so it is reported there, not required.
EXPECTED = {name: {"FBSDatabaseUnavailable"} for name in scenarios.NAMES}
for name in ("standby-stall", "node-loss", "freeze"):
    EXPECTED[name].add("FBSCacheNotListening")
# The service's database deadlines in this test (seconds). A request waits at most ACQUIRE for a pool
# connection, and a statement at most STATEMENT plus the client-side MARGIN (PostgresConnection.Options'
# deadlineMargin) before the client cancels it and answers 503.
ACQUIRE = 2
STATEMENT = 3
MARGIN = 0.5


def patroni_ttl():
    """The leader key's ttl in deploy/ha/patroni.yml (the bound on a failover's length)."""
    with open(os.path.join(DEPLOY, "patroni.yml")) as handle:
        found = re.search(r"^\s+ttl:\s*(\d+)\s*$", handle.read(), re.MULTILINE)
    if not found:
        raise HAError("deploy/ha/patroni.yml has no bootstrap.dcs.ttl")
    return int(found.group(1))


class Harness:
    """Everything one run starts, and the helpers the scenarios share."""

    def __init__(self, binary, keep, log_level=None):
        self.keep = keep
        self.log_level = log_level
        self.work = tempfile.mkdtemp(prefix="fbs-ha.")
        os.chmod(self.work, 0o755)  # the postgres OS user reaches its folders inside
        self.part = transcript.part("ha")
        fleetlib.chaos.responses = transcript.ResponseFile(self.part)
        self.processes = Processes(self.work)
        self.ttl = patroni_ttl()
        request = ACQUIRE + STATEMENT + MARGIN
        self.bounds = {"*": request, "events": POLL_WAIT + request}
        self.bounds_text = (f"a request's timeout is {request:g} s = FBS_DB_ACQUIRE_TIMEOUT {ACQUIRE} + "
                            f"FBS_STATEMENT_TIMEOUT {STATEMENT} + the {MARGIN:g} s client margin, a long poll's "
                            f"{POLL_WAIT} s more; none may take over its timeout + 1 s")
        self.database = Database(self.work, self.processes)
        self.fleet = None
        self.load = None
        self.prometheus = None
        self.alert_rows = []  # (what, {alert: instances}, {alert: seconds after the fault}) for the alerts table
        self.binary = binary

    def start(self):
        started = time.monotonic()
        self.database.start()
        print(f"   database: etcd, 2 Patroni nodes (leader {self.database.leader().name}), HAProxy, PgBouncer "
              f"in {time.monotonic() - started:.0f} s", flush=True)
        settings = {"FBS_DB_ACQUIRE_TIMEOUT": ACQUIRE, "FBS_STATEMENT_TIMEOUT": STATEMENT}
        if self.log_level:
            settings["FBS_LOG_LEVEL"] = self.log_level
        self.fleet = fleetlib.Fleet(self.work, self.processes, self.binary, self.database, settings)
        self.fleet.start()
        self.load = Load(self.fleet)
        self.load.start()
        print(f"   service: emulator, {len(self.fleet.services)} instances behind nginx, webhook receiver; ready "
              f"after {time.monotonic() - started:.0f} s", flush=True)
        self.prometheus = Prometheus(self.work, self.processes, [f"127.0.0.1:{s.port}" for s in self.fleet.services])
        self.prometheus.start()
        print(f"   Prometheus scraping {len(self.fleet.services)} instances every second with alerts.yml sped up "
              f"(prometheus/alerts.yml); ready after {time.monotonic() - started:.0f} s", flush=True)

    def calm(self):
        """Load without faults for CALM seconds: no alert may fire."""
        began = time.monotonic()
        self.load.run()
        time.sleep(CALM)
        fired = self.prometheus.fired_between(0.0, time.monotonic())
        pending = sorted({name for name, _, state in self.prometheus.alerts() if state == "pending"})
        self.alert_rows.append(("calm", fired, {}))
        checks.verdict("calm/alerts", not fired,
                       f"{time.monotonic() - began:.0f} s of load before the faults, scraped every second: "
                       f"{alerts_text(fired) or 'no alert fired'}"
                       + (f" (pending at its end: {', '.join(pending)})" if pending else ""))

    def scenario_alerts(self, name, row, began):
        """The alerts that began to fire since `began` (the scenario's start): those of EXPECTED must be there."""
        now = time.monotonic()
        fired = self.prometheus.fired_between(began, now)
        after = {alert: first - self.fault_mark for alert, first in self.prometheus.first_fired(began, now).items()}
        row["alerts"] = fired
        self.alert_rows.append((name, fired, after))
        missing = sorted(EXPECTED.get(name, set()) - set(fired))
        verify.report(name, row, not missing,
                      ("alerts", f"fired: {alerts_text(fired, after) or 'none'}; expected "
                                 f"{', '.join(sorted(EXPECTED.get(name, set()))) or 'none'}"
                       + (f"; missing {', '.join(missing)}" if missing else "")))

    def dashboard_queries(self):
        """Every query of the Grafana dashboard, sent to this Prometheus: each must evaluate."""
        failed, empty, count = [], [], 0
        for title, expression in dashboard_queries():
            count += 1
            try:
                if not self.prometheus.api("query", query=expression)["result"]:
                    empty.append(title)
            except Exception as error:  # noqa: BLE001 - a query Prometheus refuses is the finding
                failed.append(f"{title}: {error}")
        checks.verdict("dashboard/queries", not failed,
                       f"{count} queries of deploy/observability/dashboard.json evaluated by Prometheus, "
                       f"{count - len(empty) - len(failed)} with data"
                       + (f"; without data: {', '.join(sorted(set(empty)))}" if empty else "")
                       + (f"; refused: {'; '.join(failed)}" if failed else ""))

    def instance_down(self):
        """kill -9 of the last instance: FBSInstanceDown must fire for it, and for no other."""
        service = self.fleet.services[-1]
        target = f"127.0.0.1:{service.port}"
        began = time.monotonic()
        service.process.kill()
        service.process.wait()
        try:
            wait_until(lambda: "FBSInstanceDown" in self.prometheus.fired_between(began, time.monotonic()), 30, "")
        except HAError:
            pass
        now = time.monotonic()
        fired = self.prometheus.fired_between(began, now)
        after = {alert: first - began for alert, first in self.prometheus.first_fired(began, now).items()}
        self.alert_rows.append(("instance killed", fired, after))
        down = fired.get("FBSInstanceDown", [])
        checks.verdict("instance-down/alerts", down == [target],
                       f"kill -9 of {service.name} ({target}); fired: {alerts_text(fired, after) or 'none'}")

    def login_works(self):
        """True once a login sent after the last fault was acknowledged (the load keeps sending them)."""
        marker = getattr(self, "fault_mark", 0.0)
        with self.load.ledger.lock:
            return any(entry["route"] == "login" and entry["at"] > marker and verify.answered_ok(entry)
                       for entry in reversed(self.load.ledger.entries[-400:]))

    def settle(self, timeout=60):
        """Waits until the feed and the webhook have every committed event, and the audit reader every entry (or
        `timeout` passes); says how long that took, or what was still missing."""
        started = time.monotonic()
        missing = {}

        def caught_up():
            committed = {row[0] for row in self.database.psql(
                f"SELECT id FROM events WHERE app_id = '{self.fleet.app_id}'")}
            missing["feed"] = len(committed - set(self.load.feed_ids()))
            missing["webhook"] = len(committed - set(self.fleet.hooks.received()))
            logged = {row[0] for row in self.database.psql(
                f"SELECT id FROM audit_log WHERE app_id = '{self.fleet.app_id}' OR app_id IS NULL")}
            missing["audit"] = len(logged - set(self.load.audit_ids()))
            return not missing["feed"] and not missing["webhook"] and not missing["audit"]
        try:
            wait_until(caught_up, timeout, "", interval=0.5)
            print(f"   feed, webhook and audit reader caught up {time.monotonic() - started:.1f} s after the load "
                  f"stopped",
                  flush=True)
        except HAError:
            print(f"   after {timeout} s the feed still lacks {missing.get('feed')} events, the webhook "
                  f"{missing.get('webhook')} and the audit reader {missing.get('audit')} entries", flush=True)

    def close(self):
        if self.load is not None:
            self.load.close(timeout=10)
        if self.prometheus is not None:
            self.prometheus.close()
        if self.part is not None and self.fleet is not None:
            try:
                transcript.pg_dump(self.part, PG_BIN, self.database.url("haproxy"))
            except Exception:  # noqa: BLE001 - a dump that fails leaves the scan with less, not the run broken
                pass
        if self.fleet is not None:
            self.fleet.close()
        self.database.stop()
        self.processes.stop_all()
        if self.part is not None:
            logs = ([service.log for service in self.fleet.services] if self.fleet else []) + \
                   [node.log for node in self.database.nodes] + \
                   [os.path.join(self.work, "pgbouncer", "pgbouncer.log")]
            transcript.keep_files(self.part, logs)
        if self.keep and self.load is not None:
            # Every request's outcome, for reading a failure afterwards (no key, token or body in it).
            import json
            with open(os.path.join(self.work, "ledger.jsonl"), "w") as handle:
                for entry in self.load.ledger.entries:
                    handle.write(json.dumps(entry) + "\n")
        if self.keep:
            print(f"   (kept {self.work})")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every scenario (the default): " +
                        ", ".join(scenarios.NAMES))
    parser.add_argument("--only", default="", help="comma-separated scenarios, in the order given")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, ledger.jsonl; it holds "
                                                            "test secrets)")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"],
                        help="the instances' FBS_LOG_LEVEL (default info; debug with the secrets transcript)")
    options = parser.parse_args()
    binary = os.path.abspath(os.environ.get("FBSESSIOND", os.path.join(ROOT, ".build/debug/fbsessiond")))
    if not os.access(binary, os.X_OK):
        sys.exit(f"error: no fbsessiond binary at {binary} (build first, or set FBSESSIOND)")
    missing = [package for tool, package in TOOLS.items() if not shutil.which(tool)]
    if missing:
        sys.exit(f"error: missing Debian packages: {' '.join(missing)}")
    wanted = scenarios.NAMES if options.all else [n for n in options.only.split(",") if n] or scenarios.NAMES
    unknown = [name for name in wanted if name not in scenarios.NAMES]
    if unknown:
        sys.exit(f"error: unknown scenario(s) {', '.join(unknown)}; known: {', '.join(scenarios.NAMES)}")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    print(f"ha: {', '.join(wanted)} with {binary}", flush=True)
    harness = None
    rows = []
    try:
        harness = Harness(binary, options.keep, options.log_level)
        harness.start()
        print("== calm", flush=True)
        harness.calm()
        since = time.monotonic()
        for name in wanted:
            print(f"== {name}", flush=True)
            began = time.monotonic()
            row, since = scenarios.run(harness, name, dict(scenarios.SCENARIOS)[name], since)
            rows.append(row)
            print(f"   {name} took {time.monotonic() - began:.0f} s", flush=True)
        print("== instance killed", flush=True)
        harness.dashboard_queries()
        harness.instance_down()
    except Exception as error:  # a crashed run is a failed run, with its reason
        traceback.print_exc(limit=4)
        checks.verdict("ha/ran", False, f"{type(error).__name__}: {error}")
    finally:
        if harness is not None:
            harness.close()
    if rows:
        print(verify.table(rows, harness.bounds_text if harness else ""), flush=True)
    if harness is not None and harness.alert_rows:
        print(alerts_table(harness.alert_rows), flush=True)
    failed = [line for _, ok, line in checks.RESULTS if not ok]
    print(f"ha: {len(checks.RESULTS) - len(failed)} checks passed, {len(failed)} failed in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    sys.exit(1 if failed else 0)


def alerts_text(fired, after=None):
    """`{alert: [instances]}` as `FBSDatabaseUnavailable (3 instances, 2.9 s after the fault), FBSInstanceDown
    (127.0.0.1:…)`; `after` gives each alert's first firing in seconds after the fault."""
    def where(name, instances):
        named = [instance for instance in instances if instance]
        parts = ([f"{len(named)} instances" if len(named) > 1 else named[0]] if named else []) + (
            [f"{after[name]:.1f} s after the fault"] if after and name in after else [])
        return f" ({', '.join(parts)})" if parts else ""
    return ", ".join(f"{name}{where(name, instances)}" for name, instances in sorted(fired.items()))


def alerts_table(rows):
    """Which alerts began to fire in each part of the run (Prometheus, alerts.yml sped up 60 times)."""
    lines = [("part", "alerts that fired (instances, first firing after the fault)")] + [
        (what, alerts_text(fired, after) or "none") for what, fired, after in rows]
    width = max(len(what) for what, _ in lines)
    text = [f"{what.ljust(width)}  {fired}" for what, fired in lines]
    text.insert(1, f"{'-' * width}  {'-' * max(len(fired) for _, fired in lines)}")
    return "\n".join(text)


if __name__ == "__main__":
    main()
