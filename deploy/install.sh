#!/usr/bin/env bash
# Installs fbsessiond on a Debian 12 host: runtime packages, the binary and the resources it locates,
# the ops scripts, a system user, /etc/fbsessions/fbsessiond.env (only when missing) and a hardened systemd unit.
#
#     deploy/install.sh                          # build a release binary here, install under /usr/local
#     deploy/install.sh --binary PATH            # install a binary built elsewhere
#     deploy/install.sh --prefix /opt/fbsessiond --dry-run
#     DESTDIR=/tmp/root deploy/install.sh --binary PATH   # stage into a root (packaging, CI)
#
# Options:
#   --prefix DIR      where bin/ and share/fbsessiond/ go (default /usr/local)
#   --binary PATH     take this fbsessiond instead of running `swift build -c release --static-swift-stdlib`
#   --destdir DIR     same as DESTDIR=DIR: every path is written under DIR
#   --dry-run         print every action and do nothing
#   --no-packages     do not apt-get install the runtime packages
#   --no-user         do not create the fbsessiond system user
#   --no-start        install and enable, but do not (re)start the service
#
# With DESTDIR the host is left alone: no apt-get, no user (the target host's own run of install.sh creates
# it), no systemctl; the env file then belongs to root:root unless the fbsessiond group already exists here.
# Migrations run in the unit's ExecStartPre (see fbsessiond.service), so every start applies them first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=deploy/lib.sh
. "$here/lib.sh"

# The runtime libraries of the binary, plus CA certificates (HTTPS to Graph) and the client tools backup.sh uses.
runtime_packages=(libmicrohttpd12 libpq5 libcurl4 libssl3 ca-certificates postgresql-client)
service_user=fbsessiond
unit_name=fbsessiond.service

prefix=/usr/local
binary=""
destdir="${DESTDIR:-}"
dry_run=0
with_packages=1
with_user=1
with_start=1

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

while [ "$#" -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
        --binary=*) binary="${1#*=}"; shift ;;
        --destdir) destdir="${2:?--destdir needs a directory}"; shift 2 ;;
        --destdir=*) destdir="${1#*=}"; shift ;;
        --dry-run) dry_run=1; shift ;;
        --no-packages) with_packages=0; shift ;;
        --no-user) with_user=0; shift ;;
        --no-start) with_start=0; shift ;;
        -h | --help) usage; exit 0 ;;
        *) fbs_die "unknown option $1 (see --help)" ;;
    esac
done

case "$prefix" in /*) ;; *) fbs_die "--prefix must be an absolute path" ;; esac
prefix="${prefix%/}"
destdir="${destdir%/}"
if [ -n "$destdir" ]; then
    case "$destdir" in /*) ;; *) destdir="$(pwd)/$destdir" ;; esac
fi

bindir="$prefix/bin"
sharedir="$prefix/share/fbsessiond"
confdir=/etc/fbsessions
envfile="$confdir/fbsessiond.env"
unitdir=/etc/systemd/system

# Runs one action, or only prints it with --dry-run. Every action goes through here, so a dry run lists them all.
act() {
    if [ "$dry_run" -eq 1 ]; then
        printf 'would run: %s\n' "$*"
    else
        printf '+ %s\n' "$*"
        "$@"
    fi
}

# Writes standard input to a file (an action like act).
write_file() {
    local target="$1"
    if [ "$dry_run" -eq 1 ]; then
        printf 'would write: %s\n' "$target"
        cat >/dev/null
    else
        printf '+ write %s\n' "$target"
        cat >"$target"
    fi
}

skip() { printf 'skipped: %s\n' "$*"; }

# The names the binary asks ResourceLocator for, read from the sources, so that this list is the code's own:
# a resource added with ResourceLocator.candidates("name", ...) is installed without editing this script.
resource_names() {
    local calls named literal
    calls="$(grep -rhoE 'ResourceLocator\.candidates\(' "$repo/Sources" | wc -l)"
    named="$(grep -rhoE 'ResourceLocator\.candidates\("[^"]+"' "$repo/Sources" | wc -l)"
    literal="$(grep -rhoE 'ResourceLocator\.candidates\("[^"]+"' "$repo/Sources" | sed -E 's/.*"([^"]+)"/\1/' | sort -u)"
    if [ "$calls" -ne "$named" ]; then
        fbs_die "a ResourceLocator.candidates call in Sources does not name its resource as a string literal;" \
            "install.sh reads the names from the sources and cannot tell what to install"
    fi
    [ -n "$literal" ] || fbs_die "no ResourceLocator.candidates(\"name\", ...) found under $repo/Sources"
    printf '%s\n' "$literal"
}

fbs_say "installing fbsessiond: prefix $prefix${destdir:+, DESTDIR $destdir}$([ "$dry_run" -eq 1 ] && echo ', dry run')"

# 1. Runtime packages.
if [ "$with_packages" -eq 0 ]; then
    skip "runtime packages (--no-packages): ${runtime_packages[*]}"
elif [ -n "$destdir" ]; then
    skip "runtime packages (DESTDIR is set; the target host installs them): ${runtime_packages[*]}"
else
    command -v apt-get >/dev/null 2>&1 || fbs_die "apt-get not found: this script is for Debian 12"
    act env DEBIAN_FRONTEND=noninteractive apt-get -q update
    act env DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${runtime_packages[@]}"
fi

# 2. The binary: given, or built here in release mode with the Swift runtime linked in (the host needs no toolchain).
if [ -z "$binary" ]; then
    fbs_ensure_swift_for_build() {
        command -v swift >/dev/null 2>&1 && return 0
        [ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH" && return 0
        [ "$dry_run" -eq 1 ] && return 0
        fbs_die "swift not found: install the Swift 6 toolchain, or pass --binary PATH"
    }
    fbs_ensure_swift_for_build
    act swift build --package-path "$repo" -c release --static-swift-stdlib --product fbsessiond
    binary="$repo/.build/release/fbsessiond"
fi
if [ "$dry_run" -eq 0 ]; then
    { [ -f "$binary" ] && [ -x "$binary" ]; } || fbs_die "not an executable file: $binary"
    unresolved="$(ldd "$binary" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ' || true)"
    [ -z "$unresolved" ] || fbs_warn "$binary needs libraries this host lacks: $unresolved"
fi

# 3. Binary and resources.
act install -d -m 0755 "$destdir$bindir" "$destdir$sharedir" "$destdir$sharedir/deploy"
act install -m 0755 "$binary" "$destdir$bindir/fbsessiond"
mapfile -t resources < <(resource_names)
for name in "${resources[@]}"; do
    source_path="$repo/$name"
    [ -e "$source_path" ] || fbs_die "the binary looks for $name, but $source_path does not exist"
    if [ -d "$source_path" ]; then
        # Replace the folder whole, so files removed from the source (there should be none) do not linger.
        act rm -rf "$destdir$sharedir/$name.new"
        act cp -R "$source_path" "$destdir$sharedir/$name.new"
        act chmod -R u=rwX,go=rX "$destdir$sharedir/$name.new"
        act rm -rf "$destdir$sharedir/$name"
        act mv "$destdir$sharedir/$name.new" "$destdir$sharedir/$name"
    else
        act install -m 0644 "$source_path" "$destdir$sharedir/$name"
    fi
done
for script in lib.sh backup.sh restore.sh rotate-key.sh; do
    act install -m 0755 "$here/$script" "$destdir$sharedir/deploy/$script"
done
act install -m 0644 "$here/fbsessiond.env.example" "$destdir$sharedir/fbsessiond.env.example"

# 4. The system user.
if [ "$with_user" -eq 0 ]; then
    skip "system user $service_user (--no-user)"
elif [ -n "$destdir" ]; then
    skip "system user $service_user (DESTDIR is set; install.sh on the target host creates it)"
elif id -u "$service_user" >/dev/null 2>&1; then
    skip "system user $service_user (exists)"
else
    act useradd --system --user-group --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin --comment "fbsessiond service" "$service_user"
fi

# 5. The environment file: written from the example when missing, never overwritten.
owner=(-o root -g root)
group=root
if getent group "$service_user" >/dev/null 2>&1 || { [ -z "$destdir" ] && [ "$with_user" -eq 1 ]; }; then
    group="$service_user"
    owner=(-o root -g "$group")
fi
if [ "$(id -u)" -ne 0 ]; then
    owner=()  # staging as an ordinary user (packaging): the files are the caller's
fi
act install -d -m 0750 "${owner[@]}" "$destdir$confdir"
if [ -e "$destdir$envfile" ]; then
    skip "$envfile exists and is kept"
    missing="$(grep -oE '^#? ?[A-Z][A-Z0-9_]*=' "$here/fbsessiond.env.example" | sed -E 's/^# ?//; s/=$//' | sort -u \
        | while read -r name; do grep -qE "^[#; ]*$name=" "$destdir$envfile" || printf '%s ' "$name"; done)"
    [ -z "$missing" ] || fbs_warn "$envfile does not mention (defaults apply): $missing"
else
    act install -m 0640 "${owner[@]}" "$here/fbsessiond.env.example" "$destdir$envfile"
fi

# 6. The systemd unit, pointed at this prefix.
act install -d -m 0755 "$destdir$unitdir"
sed -e "s#/usr/local/bin/fbsessiond#$bindir/fbsessiond#g" "$here/fbsessiond.service" \
    | write_file "$destdir$unitdir/$unit_name"
act chmod 0644 "$destdir$unitdir/$unit_name"

# 7. systemctl: only on the real root of a host where systemd runs.
if [ -n "$destdir" ]; then
    skip "systemctl (DESTDIR is set)"
elif [ ! -d /run/systemd/system ]; then
    skip "systemctl (systemd is not running here)"
else
    act systemctl daemon-reload
    act systemctl enable "$unit_name"
    database_url="$(fbs_env_get "$envfile" DATABASE_URL 2>/dev/null || true)"
    keys="$(fbs_env_get "$envfile" FBS_ENCRYPTION_KEYS 2>/dev/null || true)"
    if [ "$with_start" -eq 0 ]; then
        skip "start (--no-start)"
    elif [ -z "$database_url" ] || [ -z "$keys" ]; then
        skip "start: set DATABASE_URL and FBS_ENCRYPTION_KEYS in $envfile, then: systemctl start fbsessiond"
    else
        # restart: a running service picks up the new binary; ExecStartPre applies new migrations first.
        act systemctl restart "$unit_name"
    fi
fi

fbs_say "done: $bindir/fbsessiond, $sharedir/{$(IFS=,; echo "${resources[*]}")}, $envfile, $unitdir/$unit_name"
