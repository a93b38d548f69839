# shellcheck shell=bash
# Shared by scripts/test, scripts/run and .ci/run: source it (it only defines functions and variables).
#
# Pure bash on purpose: these helpers run before anything is built.

# The Debian packages the build and the tests need (pgbouncer: the tests behind a transaction-mode pooler).
FBS_PACKAGES=(libmicrohttpd-dev libcurl4-openssl-dev libpq-dev libssl-dev pkg-config postgresql-15 pgbouncer)
# The HA check's (tools/ha/run): etcd, Patroni with its etcd client, HAProxy, PgBouncer, nginx, and Prometheus
# (which fires deploy/observability's alerts there; its promtool also checks the rules in the system check `alerts`).
# Debian may start some of them as services on install (nginx on :80, etcd on :2379, PgBouncer on :6432, Prometheus
# on :9090): the check starts its own processes on free ports with its own files and never talks to those.
# shellcheck disable=SC2034 # used by .ci/run and scripts/test-system
FBS_HA_PACKAGES=(etcd-server patroni python3-etcd haproxy pgbouncer nginx prometheus)

fbs_say() { printf '==> %s\n' "$*" >&2; }
fbs_die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Puts the Swift toolchain on PATH when `swift` is missing but /opt/swift has it.
fbs_ensure_swift() {
    if command -v swift >/dev/null 2>&1; then
        return 0
    fi
    if [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="/opt/swift/usr/bin:$PATH"
        return 0
    fi
    fbs_die "swift is not on PATH and /opt/swift/usr/bin/swift does not exist; install the Swift 6 toolchain"
}

# Runs a command as root: directly when we are root, else through sudo when it exists.
fbs_as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 1
    fi
}

# Prints, one per line, those of the named packages that dpkg does not list as installed.
fbs_missing_packages() {
    local package
    for package in "$@"; do
        if ! dpkg -s "$package" 2>/dev/null | grep -q '^Status: install ok installed'; then
            printf '%s\n' "$package"
        fi
    done
}

# `apt-get update`, then `apt-get install -y --no-install-recommends --no-upgrade` of the named packages,
# quietly: apt's output goes to a log that is shown only when something fails. --no-upgrade leaves packages
# that are already installed at their version (a test run should not upgrade the machine's PostgreSQL).
fbs_apt_install() {
    if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
        fbs_die "missing packages: $*; install them as root: apt-get install --no-install-recommends $*"
    fi
    local log
    log="$(mktemp)"
    fbs_say "installing with apt-get: $*"
    if ! fbs_as_root env DEBIAN_FRONTEND=noninteractive apt-get -q update >"$log" 2>&1 \
        || ! fbs_as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get -q install -y --no-install-recommends --no-upgrade "$@" >>"$log" 2>&1; then
        tail -n 40 "$log" >&2
        rm -f "$log"
        fbs_die "apt-get failed (last lines above)"
    fi
    rm -f "$log"
}

# Installs those of the named packages that are missing (all of FBS_PACKAGES when none are named).
fbs_install_missing() {
    [ "$#" -gt 0 ] || set -- "${FBS_PACKAGES[@]}"
    if ! command -v dpkg >/dev/null 2>&1; then
        fbs_say "no dpkg here (not Debian?): make sure these are installed: $*"
        return 0
    fi
    local missing
    mapfile -t missing < <(fbs_missing_packages "$@")
    if [ "${#missing[@]}" -gt 0 ]; then
        fbs_apt_install "${missing[@]}"
    fi
}

# Prints the PostgreSQL bin directory: PG_BIN if set, else the newest /usr/lib/postgresql/*/bin,
# else `pg_config --bindir`, else the directory of `initdb` on PATH.
fbs_pg_bin() {
    local directory
    if [ -n "${PG_BIN:-}" ]; then
        [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] \
            || fbs_die "PG_BIN=$PG_BIN has no initdb and pg_ctl"
        printf '%s\n' "$PG_BIN"
        return 0
    fi
    while read -r directory; do
        if [ -x "$directory/initdb" ] && [ -x "$directory/pg_ctl" ]; then
            printf '%s\n' "$directory"
            return 0
        fi
    done < <(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -rV)
    if command -v pg_config >/dev/null 2>&1; then
        directory="$(pg_config --bindir 2>/dev/null || true)"
        if [ -n "$directory" ] && [ -x "$directory/initdb" ] && [ -x "$directory/pg_ctl" ]; then
            printf '%s\n' "$directory"
            return 0
        fi
    fi
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    fbs_die "PostgreSQL server programs not found (looked at PG_BIN, /usr/lib/postgresql/*/bin," \
        "pg_config --bindir and PATH); install the Debian package postgresql-15"
}

# Prints a TCP port on 127.0.0.1 that nothing listens on, from 20000-32767 (below Linux's ephemeral range).
fbs_free_port() {
    local port attempt
    for attempt in $(seq 1 200); do
        port=$((20000 + RANDOM % 12768))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    fbs_die "no free TCP port found on 127.0.0.1 after $attempt tries"
}

# Runs a PostgreSQL server program in directory $1, as the postgres OS user when we are root
# (initdb and pg_ctl refuse to run as root).
fbs_pg_run_in() {
    local directory="$1"
    shift
    if [ "$(id -u)" -eq 0 ]; then
        (cd "$directory" && runuser -u postgres -- "$@")
    else
        (cd "$directory" && "$@")
    fi
}

# Creates and starts a throwaway cluster in directory $1 (which must exist), for tests:
# trust auth, fsync off, 127.0.0.1 and a unix socket in $1/socket only, max_connections=300.
# Needs PG_BIN. Sets FBS_PG_PORT to the port it listens on (a free one, retried if taken meanwhile).
fbs_test_cluster_start() {
    local directory="$1" attempt options logged
    mkdir -p "$directory/socket"
    chmod 700 "$directory" "$directory/socket"
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || fbs_die "running as root needs the postgres OS user (package postgresql-15)"
        chown -R postgres:postgres "$directory"
        runuser -u postgres -- test -w "$directory" \
            || fbs_die "the postgres OS user cannot reach $directory; its parents must be searchable (o+x)"
    fi
    if ! fbs_pg_run_in "$directory" "$PG_BIN/initdb" -D "$directory/data" -A trust -U postgres \
        --encoding=UTF8 --locale=C >"$directory/initdb.out" 2>&1; then
        tail -n 30 "$directory/initdb.out" >&2
        fbs_die "initdb failed in $directory/data"
    fi
    for attempt in 1 2 3 4 5; do
        FBS_PG_PORT="$(fbs_free_port)"
        logged=0
        if [ -f "$directory/postgres.log" ]; then
            logged="$(wc -l <"$directory/postgres.log")"
        fi
        options="-p $FBS_PG_PORT -k '$directory/socket' -c listen_addresses=127.0.0.1"
        options+=" -c fsync=off -c full_page_writes=off -c max_connections=300"
        if fbs_pg_run_in "$directory" "$PG_BIN/pg_ctl" -D "$directory/data" -l "$directory/postgres.log" \
            -w -t 60 -o "$options" start >"$directory/pg_ctl.out" 2>&1; then
            return 0
        fi
        if ! tail -n "+$((logged + 1))" "$directory/postgres.log" 2>/dev/null | grep -q 'Address already in use'; then
            break
        fi
        fbs_say "port $FBS_PG_PORT was taken meanwhile; trying another (attempt $attempt)"
    done
    cat "$directory/pg_ctl.out" >&2
    tail -n 30 "$directory/postgres.log" >&2 2>/dev/null || true
    fbs_die "could not start the test PostgreSQL (log: $directory/postgres.log)"
}

# Stops the throwaway cluster in directory $1 at once and deletes the directory. Never fails.
fbs_test_cluster_remove() {
    local directory="$1"
    [ -n "$directory" ] && [ -d "$directory" ] || return 0
    if [ -f "$directory/data/postmaster.pid" ]; then
        fbs_pg_run_in "$directory" "$PG_BIN/pg_ctl" -D "$directory/data" -m immediate -w -t 30 stop \
            >/dev/null 2>&1 || true
    fi
    rm -rf "$directory"
}

# ---------------------------------------------------------------------------------------------------------
# The secrets transcript of a test run (tools/secrets/transcript.py; docs/reliability.md, "Secrets: the whole
# suite"). When FBS_SECRETS_TRANSCRIPT_DIR names a run directory, every live stack runs the service at debug level
# and keeps its logs and a pg_dump there; FBS_SECRETS_LEDGER names the ledger where every secret made is noted.
# Both unset (the default): these functions do nothing.

# Starts a run directory DIR (emptied, mode 0700) and exports FBS_SECRETS_TRANSCRIPT_DIR and FBS_SECRETS_LEDGER.
fbs_transcript_start() {
    rm -rf "$1"
    mkdir -p "$1"
    chmod 700 "$1"
    export FBS_SECRETS_TRANSCRIPT_DIR="$1" FBS_SECRETS_LEDGER="$1/ledger"
    : >"$FBS_SECRETS_LEDGER"
    chmod 600 "$FBS_SECRETS_LEDGER"
}

# Notes one secret in the ledger: fbs_secret_note KIND VALUE (the value never reaches a command line).
fbs_secret_note() {
    [ -n "${FBS_SECRETS_LEDGER:-}" ] || return 0
    printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | od -An -v -tx1 | tr -d ' \n')" >>"$FBS_SECRETS_LEDGER"
}

# Notes the keys of a keyring in settings form (kid:base64,...): each base64 text and its raw bytes.
fbs_secret_note_keyring() {
    [ -n "${FBS_SECRETS_LEDGER:-}" ] || return 0
    local entry key
    for entry in ${1//,/ }; do
        key="${entry#*:}"
        fbs_secret_note "encryption key" "$key"
        printf '%s\t%s\n' "encryption key bytes" "$(printf '%s' "$key" | base64 -d 2>/dev/null | od -An -v -tx1 \
            | tr -d ' \n')" >>"$FBS_SECRETS_LEDGER"
    done
}

# Prints a new folder of the run directory for one stack: NAME, or NAME-2, NAME-3, ... Prints nothing when off.
fbs_transcript_part() {
    [ -n "${FBS_SECRETS_TRANSCRIPT_DIR:-}" ] || return 0
    local name="$1" folder number=1
    folder="$FBS_SECRETS_TRANSCRIPT_DIR/$name"
    while ! mkdir -m 700 "$folder" 2>/dev/null; do
        number=$((number + 1))
        folder="$FBS_SECRETS_TRANSCRIPT_DIR/$name-$number"
    done
    printf '%s\n' "$folder"
}

# Keeps what a stack leaves before it is removed: fbs_transcript_keep FOLDER DATABASE_URL FILE... copies the files
# that exist into FOLDER and writes a plain pg_dump of DATABASE_URL (when not empty) there. Needs PG_BIN.
fbs_transcript_keep() {
    local folder="$1" url="$2" file
    shift 2
    [ -n "$folder" ] || return 0
    for file in "$@"; do
        [ -f "$file" ] && cp "$file" "$folder/"
    done
    if [ -n "$url" ]; then
        "$PG_BIN/pg_dump" --no-owner "$url" >"$folder/pg_dump-${url##*/}.sql" 2>/dev/null \
            || fbs_say "pg_dump of ${url##*/} failed (the secrets scan will lack it)"
    fi
    return 0
}

# The Graph emulator's demo app: `fbsessiond graph-emulator` seeds it with this id and secret.
FBS_DEMO_APP_ID=1000000000000001
FBS_DEMO_APP_SECRET=demo-app-secret-for-the-local-emulator

# Starts a whole local stack for checks that talk to a live service, and waits until it is ready:
#   fbs_live_stack_start BIN DIR APP_NAME SCOPE...
# a throwaway cluster in DIR/pg, `BIN graph-emulator` (its demo app also accepting <service>/callback), a migrated
# database, the demo app registered as APP_NAME (redirect URI <service>/callback) with a key of the SCOPEs, and `BIN serve` logging to DIR/service.log (append
# mode, so the caller may empty it). Settings already exported by the caller (FBS_VALIDATE_TTL, ...) apply;
# FBS_SWEEP_INTERVAL defaults to 0. Exports DATABASE_URL, FBS_ENCRYPTION_KEYS, the FBS_ settings of the service,
# FBS_URL, FBS_EMULATOR_URL and FBS_API_KEY; sets FBS_SERVICE_PID and appends every started pid to
# FBS_STACK_PIDS. The caller stops those pids and runs fbs_test_cluster_remove DIR/pg. Needs PG_BIN.
# With the secrets transcript on, the service logs at debug and the keys are noted in the ledger (the emulator
# notes its own secrets); the caller keeps the log and a dump with fbs_transcript_keep before the removal.
fbs_live_stack_start() {
    local bin="$1" directory="$2" app="$3" scope emulator_port port
    shift 3
    local scopes=()
    for scope in "$@"; do scopes+=(--scope "$scope"); done
    mkdir -p "$directory/pg"
    fbs_test_cluster_start "$directory/pg"
    export DATABASE_URL="postgresql://postgres@127.0.0.1:$FBS_PG_PORT/postgres"
    FBS_ENCRYPTION_KEYS="k1:$(head -c 32 /dev/urandom | base64)"
    export FBS_ENCRYPTION_KEYS
    fbs_secret_note_keyring "$FBS_ENCRYPTION_KEYS"
    [ -z "${FBS_SECRETS_TRANSCRIPT_DIR:-}" ] || export FBS_LOG_LEVEL=debug
    emulator_port="$(fbs_free_port)"
    port="$(fbs_free_port)"
    while [ "$port" = "$emulator_port" ]; do port="$(fbs_free_port)"; done
    export FBS_URL="http://127.0.0.1:$port"
    # The dialog redirects only to registered URIs (strict mode): the demo app gets the service's callback too.
    "$bin" graph-emulator --port "$emulator_port" --redirect-uri "$FBS_URL/callback" >"$directory/emulator.log" 2>&1 &
    FBS_STACK_PIDS+=($!)
    export FBS_EMULATOR_URL="http://127.0.0.1:$emulator_port"
    export FBS_LISTEN="127.0.0.1:$port" FBS_GRAPH_URL="$FBS_EMULATOR_URL" FBS_DIALOG_URL="$FBS_EMULATOR_URL" \
        FBS_PICTURE_HOSTS=127.0.0.1 FBS_PICTURE_ALLOW_HTTP=true FBS_SWEEP_INTERVAL="${FBS_SWEEP_INTERVAL:-0}" \
        FBS_LIMITED_JWKS_URL="$FBS_EMULATOR_URL/.well-known/oauth/openid/jwks/" \
        FBS_LIMITED_UNINSTALL_URL="$FBS_EMULATOR_URL/platform/uninstall/"
    "$bin" migrate >/dev/null
    printf '%s\n' "$FBS_DEMO_APP_SECRET" >"$directory/app-secret"
    "$bin" app add --name "$app" --facebook-app-id "$FBS_DEMO_APP_ID" --facebook-app-secret-file "$directory/app-secret" \
        --redirect-uri "$FBS_URL/callback" >/dev/null
    FBS_API_KEY="$("$bin" key add --app "$app" "${scopes[@]}" | tail -n 1)"
    export FBS_API_KEY
    fbs_secret_note "api key" "$FBS_API_KEY"
    "$bin" serve 2>>"$directory/service.log" &
    FBS_SERVICE_PID=$!
    FBS_STACK_PIDS+=("$FBS_SERVICE_PID")
    for _ in $(seq 1 200); do
        curl -fs -o /dev/null "$FBS_URL/readyz" && curl -fs -o /dev/null "$FBS_EMULATOR_URL/__emulator/" && return 0
        sleep 0.05
    done
    tail -n 20 "$directory/service.log" >&2
    fbs_die "the local stack did not become ready (log: $directory/service.log)"
}
