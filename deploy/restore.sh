#!/usr/bin/env bash
# Restores a dump made by backup.sh into a database, with pg_restore, in one transaction.
#
#     deploy/restore.sh /var/backups/fbsessiond/fbsessiond-20250101T000000Z.dump
#     deploy/restore.sh --database fbsessions_restored DUMP
#     deploy/restore.sh --force DUMP          # replace what the database holds
#
# Options:
#   --env-file FILE    where DATABASE_URL is read when it is not in the environment
#                      (default /etc/fbsessions/fbsessiond.env); it names the server, the user and, unless
#                      --database is given, the database
#   --database NAME    restore into this database of that server instead; created when missing
#   --force            restore into a database that already holds tables: its objects that are in the dump
#                      are dropped first (pg_restore --clean --if-exists)
#
# Without --force, a database that holds any table, view or sequence outside the system schemas is refused,
# so a mistyped name never clobbers a live database. Stop the service (systemctl stop fbsessiond) before
# restoring over its database. Objects are restored owned by the connecting user (--no-owner): connect as the
# service's own role. The restored tokens decrypt only with the keys that sealed them (see backup.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/lib.sh
. "$here/lib.sh"

env_file=/etc/fbsessions/fbsessiond.env
database=""
force=0
dump=""

while [ "$#" -gt 0 ]; do
    case "$1" in
        --env-file) env_file="${2:?--env-file needs a file}"; shift 2 ;;
        --database) database="${2:?--database needs a name}"; shift 2 ;;
        --force) force=1; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) fbs_die "unknown option $1 (see --help)" ;;
        *) [ -z "$dump" ] || fbs_die "one dump file only"; dump="$1"; shift ;;
    esac
done
[ -n "$dump" ] || fbs_die "usage: restore.sh [--database NAME] [--force] DUMP"
[ -r "$dump" ] || fbs_die "cannot read $dump"

psql="$(fbs_pg_program psql)"
pg_restore="$(fbs_pg_program pg_restore)"
"$pg_restore" --list "$dump" >/dev/null || fbs_die "$dump is not a pg_dump custom-format archive"

database_url="$(fbs_database_url "$env_file")"
target_url="$database_url"
if [ -n "$database" ]; then
    target_url="$(fbs_url_with_database "$database_url" "$database")"
fi
maintenance_url="$(fbs_url_with_database "$database_url" postgres)"
# Runs SQL from standard input on the maintenance database, with psql variables (which -c does not expand).
maintenance_sql() {
    "$psql" --no-psqlrc --no-password -X -At -q -v ON_ERROR_STOP=1 -d "$maintenance_url" "$@"
}
maintenance_sql -c 'SELECT 1' >/dev/null \
    || fbs_die "cannot connect to the server of $(fbs_mask_url "$database_url") (database postgres)"

# The database: created when missing (psql quotes the name), refused when it holds anything without --force.
if [ -n "$database" ]; then
    exists="$(maintenance_sql -v name="$database" <<<"SELECT count(*) FROM pg_database WHERE datname = :'name'")"
    if [ "$exists" = 0 ]; then
        fbs_say "creating database $database"
        maintenance_sql -v name="$database" <<<'CREATE DATABASE :"name"' >/dev/null
    fi
fi
objects="$("$psql" --no-psqlrc --no-password -X -At -v ON_ERROR_STOP=1 -d "$target_url" -c "
    SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'")" \
    || fbs_die "cannot connect to $(fbs_mask_url "$target_url")"

restore_options=(--no-password --no-owner --no-privileges --single-transaction --exit-on-error)
if [ "$objects" -gt 0 ]; then
    if [ "$force" -eq 0 ]; then
        fbs_die "$(fbs_mask_url "$target_url") is not empty ($objects tables, views or sequences);" \
            "restore into another --database, or pass --force to replace its contents"
    fi
    fbs_say "--force: dropping the dump's objects in $(fbs_mask_url "$target_url") before restoring"
    restore_options+=(--clean --if-exists)
fi

fbs_say "restoring $dump into $(fbs_mask_url "$target_url")"
"$pg_restore" "${restore_options[@]}" --dbname="$target_url" "$dump" || fbs_die "pg_restore failed; nothing was changed"
fbs_say "restore done; start the service (systemctl start fbsessiond) and check /readyz"
