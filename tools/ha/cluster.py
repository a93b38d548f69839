"""The database side of the HA harness: one etcd member, two PostgreSQL 15 nodes under Patroni, HAProxy on the
primary and PgBouncer in transaction mode in front of it, all on 127.0.0.1, from deploy/ha's files.

Patroni and PgBouncer run as the postgres OS user (initdb and PgBouncer refuse root) in folders it owns. The
passwords are random, kept in memory and in files readable by that user only, and never printed.
"""

import os
import secrets
import signal
import subprocess
import time

from processes import (DEPLOY, HAError, alive, children_of, chown, database_user, free_port, http_json, render,
                       signal_pids, wait_until, write)

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
DATABASE = "fbsessions"
ROLE = "fbsessiond"


class Etcd:
    """One etcd 3.4 member (with its v2 API on, which Patroni uses), the DCS of the Patroni cluster."""

    def __init__(self, work, processes):
        self.directory = os.path.join(work, "etcd")
        os.makedirs(self.directory, mode=0o700)
        self.client_port, self.peer_port = free_port(), free_port()
        self.address = f"127.0.0.1:{self.client_port}"
        self.processes = processes
        self.process = None

    def start(self):
        peer = f"http://127.0.0.1:{self.peer_port}"
        client = f"http://{self.address}"
        self.process = self.processes.spawn("etcd", [
            "etcd", "--name", "fbs-ha", "--data-dir", os.path.join(self.directory, "data"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"fbs-ha={peer}", "--initial-cluster-state", "new",
            "--initial-cluster-token", "fbs-ha-" + secrets.token_hex(4),
            # Patroni talks to etcd through its v2 API (deploy/ha/patroni.yml says why).
            "--enable-v2=true"],
            os.path.join(self.directory, "etcd.log"))
        wait_until(lambda: http_json(f"{client}/health")[1].get("health") == "true", 30,
                   "etcd did not become healthy (etcd/etcd.log)")


class Node:
    """One Patroni node with its PostgreSQL. The postmaster is Patroni's (detached) child: it is found by its
    `postmaster.pid`, its backends by their parent pid."""

    def __init__(self, work, name, processes, passwords, etcd):
        self.name = name
        self.directory = os.path.join(work, name)
        self.data = os.path.join(self.directory, "data")
        self.log = os.path.join(self.directory, "patroni.log")
        self.pg_port, self.rest_port = free_port(), free_port()
        self.processes = processes
        self.process = None
        self.frozen = []
        self.starts = 0
        self.user = database_user()
        os.makedirs(os.path.join(self.directory, "socket"))
        os.chmod(self.directory, 0o700)
        values = {
            "NODE_NAME": name, "REST_ADDRESS": f"127.0.0.1:{self.rest_port}", "ETCD_HOSTS": etcd.address,
            "PG_ADDRESS": f"127.0.0.1:{self.pg_port}", "PG_DATA_DIR": self.data,
            "PG_SOCKET_DIR": os.path.join(self.directory, "socket"), "PG_BIN_DIR": PG_BIN,
            "PGPASS_FILE": os.path.join(self.directory, "pgpass"), "HBA_NETWORK": "127.0.0.1/32",
            "SUPERUSER_PASSWORD": passwords["superuser"], "REPLICATION_PASSWORD": passwords["replication"],
            "REWIND_PASSWORD": passwords["rewind"],
        }
        self.config = os.path.join(self.directory, "patroni.yml")
        write(self.config, render("patroni.yml", values), 0o600)
        if self.user:
            for path in (self.directory, os.path.join(self.directory, "socket"), self.config):
                chown(path, self.user)

    @property
    def rest(self):
        return f"http://127.0.0.1:{self.rest_port}"

    def start(self):
        self.starts += 1
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.directory, "LANG": "C.UTF-8"}
        self.process = self.processes.spawn(self.name, ["patroni", self.config], self.log, env=env, user=self.user)

    def status(self):
        """Patroni's own view (GET /patroni), or None when its REST API does not answer within 2 s."""
        try:
            code, body = http_json(f"{self.rest}/patroni", timeout=2)
        except OSError:
            return None
        return body if code in (200, 503) else None

    def postmaster_pid(self):
        """The running postmaster's pid, or None."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as handle:
                pid = int(handle.readline().strip())
        except (OSError, ValueError):
            return None
        return pid if alive(pid) else None

    def postgres_pids(self):
        """The postmaster and every process it forked (backends, walsender, checkpointer, ...)."""
        postmaster = self.postmaster_pid()
        return [postmaster] + children_of(postmaster) if postmaster else []

    def kill_postmaster(self):
        """kill -9 of the postmaster alone (its children notice and exit, as after a crash). Returns its pid."""
        postmaster = self.postmaster_pid()
        if not postmaster:
            raise HAError(f"{self.name}: no running postmaster to kill")
        os.kill(postmaster, signal.SIGKILL)
        return postmaster

    def lose(self):
        """The node is gone: kill -9 of Patroni and of every PostgreSQL process, at once."""
        pids = self.postgres_pids()
        if self.process is not None and self.process.poll() is None:
            pids.append(self.process.pid)
        signal_pids(pids, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)
        wait_until(lambda: not any(alive(pid) for pid in pids), 10, f"{self.name}: processes outlived SIGKILL")

    def freeze(self):
        """SIGSTOP to every PostgreSQL process (Patroni keeps running). Returns how many were stopped."""
        self.frozen = self.postgres_pids()
        if not self.frozen:
            raise HAError(f"{self.name}: no PostgreSQL processes to freeze")
        return signal_pids(self.frozen, signal.SIGSTOP)

    def thaw(self):
        """SIGCONT to every process `freeze` stopped."""
        signal_pids(self.frozen, signal.SIGCONT)
        self.frozen = []

    def stop(self):
        """Patroni stops PostgreSQL and exits on SIGTERM; whatever is left is stopped by pid."""
        self.thaw()
        if self.process is not None:
            self.processes.stop(self.process, grace=30)
        leftover = self.postgres_pids()
        if leftover:
            signal_pids(leftover[:1], signal.SIGQUIT)  # postmaster: immediate shutdown
            try:
                wait_until(lambda: not self.postgres_pids(), 15, "")
            except HAError:
                signal_pids(self.postgres_pids(), signal.SIGKILL)


class Database:
    """etcd, two Patroni nodes, HAProxy (the primary's address) and PgBouncer (transaction pooling)."""

    def __init__(self, work, processes):
        self.work = work
        self.processes = processes
        self.passwords = {name: secrets.token_hex(16) for name in ("superuser", "replication", "rewind", ROLE)}
        self.etcd = Etcd(work, processes)
        self.nodes = [Node(work, f"node{n}", processes, self.passwords, self.etcd) for n in (1, 2)]
        self.haproxy_port = free_port()
        self.bouncer_port = free_port()
        self.haproxy = None
        self.bouncer = None

    # --- addresses ---------------------------------------------------------------------------------------------

    def url(self, via, user=ROLE, database=DATABASE):
        """A libpq URI for `user` through `via` ("pgbouncer" or "haproxy"), password included."""
        port = self.bouncer_port if via == "pgbouncer" else self.haproxy_port
        password = self.passwords["superuser" if user == "postgres" else ROLE]
        return f"postgresql://{user}:{password}@127.0.0.1:{port}/{database}"

    def node_url(self, node, database=DATABASE):
        """The superuser's URI of one node directly (not through HAProxy)."""
        return f"postgresql://postgres:{self.passwords['superuser']}@127.0.0.1:{node.pg_port}/{database}"

    # --- start ---------------------------------------------------------------------------------------------------

    def start(self):
        self.etcd.start()
        first, second = self.nodes
        first.start()
        wait_until(lambda: self.leader() is first, 90, f"{first.name} did not become the leader ({first.log})")
        self._start_haproxy()
        second.start()
        self.wait_healthy(120)
        self.psql_file(os.path.join(DEPLOY, "roles.sql"), variables={"password": self.passwords[ROLE]},
                       database="postgres")
        self._start_bouncer()

    def _start_haproxy(self):
        directory = os.path.join(self.work, "haproxy")
        os.makedirs(directory)
        first, second = self.nodes
        write(os.path.join(directory, "global.cfg"),
              "# tools/ha: the process settings; the proxy itself is deploy/ha/haproxy.cfg\n"
              "global\n    maxconn 2000\n    log stdout format raw local0 info\n")
        write(os.path.join(directory, "haproxy.cfg"), render("haproxy.cfg", {
            "PRIMARY_ADDRESS": f"127.0.0.1:{self.haproxy_port}",
            "NODE1_PG_ADDRESS": f"127.0.0.1:{first.pg_port}", "NODE1_REST_PORT": first.rest_port,
            "NODE2_PG_ADDRESS": f"127.0.0.1:{second.pg_port}", "NODE2_REST_PORT": second.rest_port}))
        self.haproxy = self.processes.spawn("haproxy", [
            "haproxy", "-db", "-f", os.path.join(directory, "global.cfg"), "-f",
            os.path.join(directory, "haproxy.cfg")], os.path.join(directory, "haproxy.log"))
        wait_until(lambda: self.scalar("SELECT NOT pg_is_in_recovery()", database="postgres") == "t", 30,
                   "HAProxy does not lead to the primary (haproxy/haproxy.log)")

    def _start_bouncer(self):
        directory = os.path.join(self.work, "pgbouncer")
        os.makedirs(directory)
        user = database_user()
        auth = os.path.join(directory, "userlist.txt")
        write(auth, f'"{ROLE}" "{self.passwords[ROLE]}"\n', 0o600, owner=user)
        config = os.path.join(directory, "pgbouncer.ini")
        write(config, render("pgbouncer.ini", {
            "DATABASE_NAME": DATABASE, "PRIMARY_HOST": "127.0.0.1", "PRIMARY_PORT": self.haproxy_port,
            "LISTEN_HOST": "127.0.0.1", "LISTEN_PORT": self.bouncer_port, "SOCKET_DIR": directory,
            "AUTH_FILE": auth, "LOG_FILE": os.path.join(directory, "pgbouncer.log"),
            "PID_FILE": os.path.join(directory, "pgbouncer.pid")}), 0o600, owner=user)
        if user:
            chown(directory, user)
        self.bouncer = self.processes.spawn("pgbouncer", ["pgbouncer", config],
                                            os.path.join(directory, "stdout.log"), user=user)
        wait_until(lambda: self.scalar("SELECT 1", url=self.url("pgbouncer")) == "1", 30,
                   "PgBouncer does not answer (pgbouncer/pgbouncer.log)")

    # --- state ----------------------------------------------------------------------------------------------------

    def members(self):
        """Patroni's member list (GET /cluster) from the first node whose REST API answers, or []."""
        for node in self.nodes:
            try:
                code, body = http_json(f"{node.rest}/cluster", timeout=2)
            except OSError:
                continue
            if code == 200 and body:
                return body.get("members", [])
        return []

    def node(self, name):
        return next(node for node in self.nodes if node.name == name)

    def leader(self):
        """The node Patroni names leader with PostgreSQL running, or None."""
        for member in self.members():
            if member.get("role") == "leader" and member.get("state") == "running":
                return self.node(member["name"])
        return None

    def standby(self):
        """The node that is not the leader (whatever its state)."""
        leader = self.leader()
        return next(node for node in self.nodes if node is not leader)

    def healthy(self):
        """A running leader and a streaming synchronous standby that has replayed everything (lag 0)."""
        members = self.members()
        roles = {member.get("role"): member for member in members}
        sync = roles.get("sync_standby")
        return (len(members) == 2 and roles.get("leader", {}).get("state") == "running" and sync is not None
                and sync.get("state") in ("running", "streaming") and sync.get("lag", 1) in (0, "0"))

    def wait_healthy(self, timeout):
        wait_until(self.healthy, timeout, f"the cluster did not get back a leader and a synchronous standby "
                                          f"within {timeout:.0f}s: {self.members()}", interval=0.5)

    def switchover(self):
        """A planned switchover to the standby through the leader's REST API (what `patronictl switchover
        --force` sends). Returns (old leader, new leader)."""
        leader = self.leader()
        candidate = self.standby()
        code, body = http_json(f"{leader.rest}/switchover", "POST",
                               {"leader": leader.name, "candidate": candidate.name}, timeout=60)
        if code != 200:
            raise HAError(f"switchover refused: {code} {body}")
        return leader, candidate

    # --- SQL ------------------------------------------------------------------------------------------------------

    def _psql(self, arguments, url, timeout, stdin=None):
        """psql on `url`; a password in the URL goes to psql through PGPASSWORD, never on its command line."""
        import urllib.parse
        parts = urllib.parse.urlsplit(url)
        env = dict(os.environ, PGPASSWORD=urllib.parse.unquote(parts.password or ""), PGCONNECT_TIMEOUT="5")
        bare = parts._replace(netloc=f"{parts.username}@{parts.hostname}:{parts.port}").geturl()
        result = subprocess.run([os.path.join(PG_BIN, "psql"), "-X", "-A", "-t", "-F", "\t", "-v",
                                 "ON_ERROR_STOP=1", "-d", bare] + arguments,
                                input=stdin, capture_output=True, text=True, timeout=timeout, env=env)
        if result.returncode != 0:
            raise HAError(f"psql failed: {result.stderr.strip()[:300]}")
        return [line.split("\t") for line in result.stdout.splitlines() if line != ""]

    def psql(self, sql, url=None, database=DATABASE, timeout=30):
        """Rows of `sql` as lists of strings, on the primary through HAProxy as the superuser (or at `url`)."""
        return self._psql(["-c", sql], url or self.url("haproxy", "postgres", database), timeout)

    def scalar(self, sql, url=None, database=DATABASE):
        rows = self.psql(sql, url, database, timeout=10)
        return rows[0][0] if rows else None

    def psql_file(self, path, variables=None, database=DATABASE):
        """Runs a SQL file through HAProxy as the superuser, with psql `variables` set first (on standard input,
        so that a password never shows on a command line)."""
        setup = "".join(f"\\set {name} '{value}'\n" for name, value in (variables or {}).items())
        return self._psql(["-q"], self.url("haproxy", "postgres", database), 60,
                          stdin=setup + f"\\i {path}\n")

    # --- stop -----------------------------------------------------------------------------------------------------

    def stop(self):
        """Stops PgBouncer, HAProxy, the nodes (Patroni stops its PostgreSQL), then etcd; each by its pid."""
        for process in (self.bouncer, self.haproxy):
            if process is not None:
                self.processes.stop(process)
        for node in self.nodes:
            node.stop()
        if self.etcd.process is not None:
            self.processes.stop(self.etcd.process)
