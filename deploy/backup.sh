#!/usr/bin/env bash
# Dumps fbsessiond's database with pg_dump in custom format (-Fc: compressed, restorable with pg_restore,
# table by table if need be).
#
#     deploy/backup.sh                                   # into /var/backups/fbsessiond/fbsessiond-<UTC time>.dump
#     deploy/backup.sh --output /srv/backups/today.dump
#
# Options:
#   --env-file FILE   where DATABASE_URL is read when it is not in the environment
#                     (default /etc/fbsessions/fbsessiond.env)
#   --output FILE     the dump file (default DIR/fbsessiond-YYYYmmddTHHMMSSZ.dump)
#   --dir DIR         the folder for the default file name (default /var/backups/fbsessiond)
#
# The dump holds tokens and app secrets encrypted, and API keys as hashes; it does not hold the encryption keys.
# Restoring it needs every key that sealed a value in it: keep FBS_ENCRYPTION_KEYS backed up separately, and
# keep a retired key as long as a backup made before its rotation is kept. The file is written mode 0600.
# Prints the dump's path on its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/lib.sh
. "$here/lib.sh"

env_file=/etc/fbsessions/fbsessiond.env
output=""
directory=/var/backups/fbsessiond

while [ "$#" -gt 0 ]; do
    case "$1" in
        --env-file) env_file="${2:?--env-file needs a file}"; shift 2 ;;
        --output) output="${2:?--output needs a file}"; shift 2 ;;
        --dir) directory="${2:?--dir needs a folder}"; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) fbs_die "unknown option $1 (see --help)" ;;
    esac
done

database_url="$(fbs_database_url "$env_file")"
if [ -z "$output" ]; then
    mkdir -p "$directory"
    chmod 0700 "$directory"
    output="$directory/fbsessiond-$(date -u +%Y%m%dT%H%M%SZ).dump"
fi
pg_dump="$(fbs_pg_program pg_dump)"

umask 077
partial="$output.partial"
fbs_say "dumping $(fbs_mask_url "$database_url") to $output"
# Into a side file first: an interrupted dump never leaves a file that looks complete.
if ! "$pg_dump" --format=custom --compress=6 --no-password --file="$partial" --dbname="$database_url"; then
    rm -f "$partial"
    fbs_die "pg_dump failed"
fi
mv "$partial" "$output"
# A dump pg_restore cannot list is not a backup.
"$(fbs_pg_program pg_restore)" --list "$output" >/dev/null || fbs_die "pg_restore cannot read $output"
fbs_say "backup done: $(du -h "$output" | cut -f1)"
printf '%s\n' "$output"
