# shellcheck shell=bash
# Helpers shared by the scripts in deploy/ (install.sh, backup.sh, restore.sh, rotate-key.sh and test/run).
# Source it; it only defines functions. Nothing here prints a secret: database URLs go through fbs_mask_url,
# and env-file values are read into variables, never echoed and never put on a command line.

fbs_say() { printf '==> %s\n' "$*" >&2; }
fbs_warn() { printf 'warning: %s\n' "$*" >&2; }
fbs_die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Prints a libpq URI or key=value string with its password replaced by ***.
fbs_mask_url() {
    printf '%s\n' "$1" | sed -E \
        -e 's#^(postgres(ql)?://[^:/@?]*):[^@/?]*@#\1:***@#' \
        -e 's#([?&]password=)[^&]*#\1***#g' \
        -e "s#(^|[[:space:]])password[[:space:]]*=[[:space:]]*('[^']*'|[^[:space:]]*)#\\1password=***#g"
}

# Reads the value of KEY from an environment file in systemd's EnvironmentFile format (KEY=VALUE lines,
# # or ; comments, a value optionally in single or double quotes); the last assignment wins.
# Prints the value; returns 1 when the file does not assign KEY.
fbs_env_get() {
    local file="$1" key="$2" line name value found=1 result=""
    [ -r "$file" ] || return 1
    while IFS= read -r line || [ -n "$line" ]; do
        line="${line#"${line%%[![:space:]]*}"}"
        case "$line" in '' | '#'* | ';'*) continue ;; esac
        [[ "$line" == *=* ]] || continue
        name="${line%%=*}"
        name="${name%"${name##*[![:space:]]}"}"
        [ "$name" = "$key" ] || continue
        value="${line#*=}"
        value="$(fbs_env_unquote "$value")"
        result="$value"
        found=0
    done <"$file"
    [ "$found" -eq 0 ] || return 1
    printf '%s\n' "$result"
}

# Trims a raw env-file value and removes one pair of surrounding quotes.
fbs_env_unquote() {
    local value="$1"
    value="${value#"${value%%[![:space:]]*}"}"
    value="${value%"${value##*[![:space:]]}"}"
    if [ "${#value}" -ge 2 ]; then
        case "$value" in
            \"*\" | \'*\') value="${value:1:${#value}-2}" ;;
        esac
    fi
    printf '%s' "$value"
}

# Exports every KEY=VALUE of an environment file into the current shell, without evaluating anything in it.
# Call it in a subshell that then runs the program, so the values reach it through the environment only.
fbs_env_export() {
    local file="$1" line name value
    [ -r "$file" ] || fbs_die "cannot read the environment file $file"
    while IFS= read -r line || [ -n "$line" ]; do
        line="${line#"${line%%[![:space:]]*}"}"
        case "$line" in '' | '#'* | ';'*) continue ;; esac
        [[ "$line" == *=* ]] || continue
        name="${line%%=*}"
        name="${name%"${name##*[![:space:]]}"}"
        [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
        value="$(fbs_env_unquote "${line#*=}")"
        export "$name=$value"
    done <"$file"
}

# Prints DATABASE_URL: from the environment when set there, else from the environment file $1.
fbs_database_url() {
    local file="$1" url="${DATABASE_URL:-}"
    if [ -z "$url" ] && [ -n "$file" ]; then
        url="$(fbs_env_get "$file" DATABASE_URL || true)"
    fi
    [ -n "$url" ] || fbs_die "DATABASE_URL is neither in the environment nor in ${file:-the environment file}"
    printf '%s\n' "$url"
}

# Prints the connection string $1 with its database replaced by $2 (a URI's path, or a dbname= keyword,
# which libpq takes from the last occurrence).
fbs_url_with_database() {
    local url="$1" name="$2"
    case "$url" in
        postgres://* | postgresql://*)
            local head="${url%%\?*}" query=""
            [ "$head" = "$url" ] || query="?${url#*\?}"
            local scheme="${head%%://*}" rest="${head#*://}"
            local authority="${rest%%/*}"
            printf '%s://%s/%s%s\n' "$scheme" "$authority" "$(fbs_percent_encode "$name")" "$query"
            ;;
        *)
            printf "%s dbname='%s'\n" "$url" "$(printf '%s' "$name" | sed -e "s/\\\\/\\\\\\\\/g" -e "s/'/\\\\'/g")"
            ;;
    esac
}

# Percent-encodes every byte outside [A-Za-z0-9._~-].
fbs_percent_encode() {
    local text="$1" out="" character i
    local LC_ALL=C
    for ((i = 0; i < ${#text}; i++)); do
        character="${text:i:1}"
        case "$character" in
            [A-Za-z0-9._~-]) out+="$character" ;;
            *) out+="$(printf '%%%02X' "'$character")" ;;
        esac
    done
    printf '%s' "$out"
}

# Prints the path of a PostgreSQL client program: $PG_BIN/NAME when PG_BIN is set, else NAME from PATH.
fbs_pg_program() {
    local name="$1"
    if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/$name" ]; then
        printf '%s\n' "$PG_BIN/$name"
    elif command -v "$name" >/dev/null 2>&1; then
        command -v "$name"
    else
        fbs_die "$name not found; install the Debian package postgresql-client (or set PG_BIN)"
    fi
}
