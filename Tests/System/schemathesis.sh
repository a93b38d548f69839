#!/usr/bin/env bash
# Runs schemathesis against a live fbsessiond (scripts/test-system starts it). Usage: schemathesis.sh WORKDIR
# Needs FBS_URL, FBS_API_KEY (every scope) and FBS_EMULATOR_URL (the Graph emulator the service uses).
# Prepares live data for the dictionaries in schemathesis.toml: emulator users with fresh tokens, two owners
# logged in through the service. The key never reaches the output: schemathesis prints headers filtered, and
# everything it prints passes through a filter that masks the key and the tokens anyway.
# With FBS_SECRETS_PART set (the secrets transcript, scripts/test-system), every response schemathesis received is
# kept there as responses-schemathesis.txt for the whole-run secrets scan (from its HAR report, exact bytes; the
# HAR itself, whose requests carry the key, is deleted).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$1/schemathesis"
mkdir -p "$work"
app_id=1000000000000001

json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
emulator_post() { curl -fsS -X POST -H 'Content-Type: application/json' -d "$2" "$FBS_EMULATOR_URL/__emulator/$1"; }

: >"$work/tokens.dict"
: >"$work/sessions.dict"
printf '"system-owner-1"\n"system/owner@2"\n' >"$work/owners.dict"
for index in $(seq 1 12); do
    user="$(emulator_post users "{\"name\":\"Schema Tester $index\"}" | json_field id)"
    token="$(emulator_post tokens "{\"app_id\":\"$app_id\",\"user_id\":\"$user\",\"long_lived\":true}" \
        | json_field access_token)"
    printf '"%s"\n' "$token" >>"$work/tokens.dict"
    if [ "$index" -le 4 ]; then
        owner="system-owner-1"
        [ "$index" -gt 2 ] && owner="system/owner@2"
        session="$(curl -fsS -H "Authorization: Bearer $FBS_API_KEY" -H 'Content-Type: application/json' \
            -d "{\"owner\":\"$owner\",\"access_token\":\"$token\"}" "$FBS_URL/v1/sessions" | json_field id)"
        printf '"%s"\n' "$session" >>"$work/sessions.dict"
    fi
done

cp "$here/schemathesis.toml" "$work/schemathesis.toml"
mask() {
    python3 -c '
import sys
secrets = [line.strip().strip("\"") for line in open(sys.argv[1])] + [sys.argv[2]]
for line in sys.stdin:
    for secret in secrets:
        if secret:
            line = line.replace(secret, "[masked]")
    sys.stdout.write(line)
    sys.stdout.flush()
' "$work/tokens.dict" "$FBS_API_KEY"
}
reports=(--report junit --report-dir "$work/report")
if [ -n "${FBS_SECRETS_PART:-}" ]; then
    reports=(--report "junit,har" --report-dir "$work/report" --report-har-path "$work/responses.har"
        --report-preserve-bytes)
fi
status=0
(cd "$work" && schemathesis --config-file "$work/schemathesis.toml" run "$FBS_URL/openapi.yaml" \
    --url "$FBS_URL" --request-timeout 40 "${reports[@]}" 2>&1) | mask || status=$?
if [ -n "${FBS_SECRETS_PART:-}" ]; then
    python3 "$here/../../tools/secrets/transcript.py" har2responses "$work/responses.har" \
        "$FBS_SECRETS_PART/responses-schemathesis.txt" || status=1
fi
exit "$status"
