#!/usr/bin/env bash
# Rotates the encryption key in the env file's FBS_ENCRYPTION_KEYS (the runbook of deploy/README.md, scripted):
#
#   1. prepend a fresh key kN:<32 random bytes, base64> (it encrypts from now on; the old ones still decrypt);
#   2. restart the service, so every instance has the new key ring before anything is sealed with the new key;
#   3. `fbsessiond reencrypt`: re-seal every token, app secret and pending revocation with the new key;
#   4. only when reencrypt reports nothing left: drop the old keys, and restart again.
#
#     deploy/rotate-key.sh                                     # /etc/fbsessions/fbsessiond.env, systemctl
#     deploy/rotate-key.sh --restart 'ansible fbs -m systemd -a "name=fbsessiond state=restarted"'
#
# Options:
#   --env-file FILE     the env file to edit (default /etc/fbsessions/fbsessiond.env); its settings are also
#                       the environment of `fbsessiond reencrypt`
#   --restart COMMAND   restarts every instance that uses the env file, run with bash -c
#                       (default $FBS_RESTART_COMMAND, else `systemctl restart fbsessiond`). With several hosts,
#                       it must restart them all and return only when they are all back.
#   --fbsessiond PATH   the binary (default $FBSESSIOND, else PREFIX/bin/fbsessiond beside this script,
#                       else fbsessiond on PATH)
#
# Safe to interrupt and to run again: a rotation in progress is marked in the env file by a comment line,
# and a rerun finishes that rotation (restart, reencrypt, drop) instead of adding yet another key. A key is
# never dropped before reencrypt has moved every value off it. Keys are never printed; only their ids are.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/lib.sh
. "$here/lib.sh"

env_file=/etc/fbsessions/fbsessiond.env
restart_command="${FBS_RESTART_COMMAND:-systemctl restart fbsessiond}"
fbsessiond="${FBSESSIOND:-}"
marker_prefix="# fbsessiond rotate-key: pending"

while [ "$#" -gt 0 ]; do
    case "$1" in
        --env-file) env_file="${2:?--env-file needs a file}"; shift 2 ;;
        --restart) restart_command="${2:?--restart needs a command}"; shift 2 ;;
        --fbsessiond) fbsessiond="${2:?--fbsessiond needs a path}"; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) fbs_die "unknown option $1 (see --help)" ;;
    esac
done

if [ -z "$fbsessiond" ]; then
    if [ -x "$here/../../../bin/fbsessiond" ]; then
        fbsessiond="$(cd "$here/../../../bin" && pwd)/fbsessiond"
    elif command -v fbsessiond >/dev/null 2>&1; then
        fbsessiond="$(command -v fbsessiond)"
    else
        fbs_die "fbsessiond not found; pass --fbsessiond PATH"
    fi
fi
[ -x "$fbsessiond" ] || fbs_die "not executable: $fbsessiond"
{ [ -f "$env_file" ] && [ -r "$env_file" ] && [ -w "$env_file" ]; } || fbs_die "cannot read and write $env_file"

# One rotation at a time (the env file itself is replaced, so the lock is a file of its own).
exec 9>>"$env_file.rotate-lock"
flock -n 9 || fbs_die "another rotate-key.sh is running on $env_file"

# The key ring as entries "kid:base64", in order.
read_ring() {
    local text entry
    text="$(fbs_env_get "$env_file" FBS_ENCRYPTION_KEYS || true)"
    ring=()
    IFS=',' read -r -a entries <<<"$text"
    for entry in "${entries[@]}"; do
        entry="$(fbs_env_unquote "$entry")"
        [ -z "$entry" ] || ring+=("$entry")
    done
}

kid_of() { printf '%s' "${1%%:*}"; }

ring_ids() {
    local entry ids=()
    for entry in "$@"; do ids+=("$(kid_of "$entry")"); done
    (IFS=,; printf '%s' "${ids[*]}")
}

# Prints the pending rotation's new key id, or nothing.
pending_kid() {
    grep -E "^$marker_prefix " "$env_file" | tail -n 1 | sed -E "s/^$marker_prefix ([^ ]+).*/\\1/" || true
}

# Rewrites the env file atomically with FBS_ENCRYPTION_KEYS=$1 and, when $2 is not empty, the marker for
# key id $2. Other lines stay as they are; the file keeps its owner and mode.
write_ring() {
    local keys="$1" marker_kid="$2" temporary line written=0
    temporary="$(mktemp "$env_file.XXXXXX")"
    chmod --reference="$env_file" "$temporary"
    chown --reference="$env_file" "$temporary" 2>/dev/null || true
    {
        while IFS= read -r line || [ -n "$line" ]; do
            case "$line" in
                "$marker_prefix "*) continue ;;
                FBS_ENCRYPTION_KEYS=* | [[:space:]]*FBS_ENCRYPTION_KEYS=*)
                    if [ "$written" -eq 0 ]; then
                        [ -z "$marker_kid" ] || printf '%s %s (do not edit FBS_ENCRYPTION_KEYS by hand now)\n' \
                            "$marker_prefix" "$marker_kid"
                        printf 'FBS_ENCRYPTION_KEYS=%s\n' "$keys"
                        written=1
                    fi
                    continue
                    ;;
            esac
            printf '%s\n' "$line"
        done <"$env_file"
        if [ "$written" -eq 0 ]; then
            [ -z "$marker_kid" ] || printf '%s %s\n' "$marker_prefix" "$marker_kid"
            printf 'FBS_ENCRYPTION_KEYS=%s\n' "$keys"
        fi
    } >"$temporary"
    sync "$temporary" 2>/dev/null || true
    mv -f "$temporary" "$env_file"
}

restart() {
    fbs_say "restarting: $restart_command"
    bash -c "$restart_command" 9>&- || fbs_die "the restart command failed; no key was dropped. Fix it and run rotate-key.sh again"
}

read_ring
[ "${#ring[@]}" -gt 0 ] || fbs_die "FBS_ENCRYPTION_KEYS is empty in $env_file: there is no key to rotate" \
    "(set a first one: k1:\$(openssl rand -base64 32))"
pending="$(pending_kid)"

if [ -n "$pending" ]; then
    [ "$(kid_of "${ring[0]}")" = "$pending" ] || fbs_die "$env_file marks a rotation to $pending, but its first key" \
        "is $(kid_of "${ring[0]}"); FBS_ENCRYPTION_KEYS was edited by hand. Put $pending first, or remove the marker line"
    fbs_say "resuming the rotation to key $pending (ring: $(ring_ids "${ring[@]}"))"
    new_kid="$pending"
else
    highest=0
    for entry in "${ring[@]}"; do
        kid="$(kid_of "$entry")"
        if [[ "$kid" =~ ^k([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -gt "$highest" ]; then
            highest="${BASH_REMATCH[1]}"
        fi
    done
    new_kid="k$((highest + 1))"
    if command -v openssl >/dev/null 2>&1; then
        secret="$(openssl rand -base64 32)"
    else
        secret="$(head -c 32 /dev/urandom | base64 -w 0)"
    fi
    [ "${#secret}" -eq 44 ] || fbs_die "could not make a 32-byte key"
    fbs_say "adding key $new_kid in front of $(ring_ids "${ring[@]}")"
    write_ring "$new_kid:$secret,$(IFS=,; printf '%s' "${ring[*]}")" "$new_kid"
    unset secret
    read_ring
fi

# Every instance must know the new key before reencrypt seals with it.
restart

fbs_say "re-sealing every stored value with $new_kid: $fbsessiond reencrypt"
reencrypt_log="$(mktemp)"
trap 'rm -f "$reencrypt_log"' EXIT
if ! (fbs_env_export "$env_file" && exec "$fbsessiond" reencrypt) >"$reencrypt_log" 2>&1 9>&-; then
    sed 's/^/    /' "$reencrypt_log" >&2
    fbs_die "reencrypt failed; every key is still in the ring. Fix the cause and run rotate-key.sh again"
fi
sed 's/^/    /' "$reencrypt_log" >&2
# The last line lists what is left per table ("sessions: 0 left, apps: 0 left, ..."); all must be 0.
summary="$(tail -n 1 "$reencrypt_log")"
if ! grep -qE '^[a-z_]+: [0-9]+ left(, [a-z_]+: [0-9]+ left)*$' <<<"$summary" \
    || grep -qE ': [1-9][0-9]* left' <<<"$summary"; then
    fbs_die "reencrypt did not report every value moved ($summary); the old keys stay. Run rotate-key.sh again"
fi

old_ids="$(ring_ids "${ring[@]:1}")"
write_ring "${ring[0]}" ""
fbs_say "dropped the old key(s) ${old_ids:-(none)}; the ring is now $new_kid alone"
restart
fbs_say "rotation to $new_kid done"
