#!/usr/bin/env bash
# Fuzzes a running `jobctl serve` against its own OpenAPI document (Sources/JobAPI/openapi.json)
# with schemathesis from PyPI, installed into a virtualenv under .build-venv/ (git-ignored):
# every operation, schema-valid and schema-invalid bodies, parameters and headers, undeclared
# methods, and stateful sequences through the document's links (submit, then show, cancel,
# retry, events, deliveries). A run fails on any 5xx, any response that does not match the
# document, any schema-invalid request that is accepted, or a server that stops answering.
#
# One worker: with two, Hypothesis parsed source in two threads at once and CPython 3.11 failed
# ("AST constructor recursion depth mismatch", a tool error, not the server's) now and then.
#
# Not checked: "schema-valid requests are accepted" (positive_data_acceptance). The document
# cannot say what the server decides at run time: whether a path is under --input-root, a
# preset exists, or a URL's address is public.
#
# Usage: scripts/fuzz-api.sh [DB]   (default: a new SQLite file; a postgres:// URL works too)
# Env: JOBCTL (the binary, default .build/debug/jobctl), FUZZ_EXAMPLES (per operation, 25),
#      FUZZ_SEED (to replay a run; each run prints its seed).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
# Hypothesis pinned too, so that a run can be replayed with its seed.
venv=$(venv_with schemathesis "schemathesis==4.32.5" "hypothesis==6.170.15")
jobctl=${JOBCTL:-.build/debug/jobctl}
work=$(mktemp -d /tmp/jobctl-fuzz.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
db=${1:-$work/jobs.sqlite}
key=$("$jobctl" keys create --name "fuzz $(date +%s)" --scope admin --db "$db" 2>/dev/null)
# Short waits and streams: the fuzzer asks for many, and each would hold a request open.
"$jobctl" serve --db "$db" --listen 127.0.0.1:0 --input-root "$work" --output-root "$work" \
    --rate-limit 0 --max-wait 300ms --max-stream 300ms 2>"$work/serve.log" &
pid=$!
base=
for _ in $(seq 100); do
    base=$(sed -n 's/^listening on //p' "$work/serve.log" | head -1)
    [ -n "$base" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$base" ]; then
    echo "fuzz-api: jobctl serve did not start:" >&2
    cat "$work/serve.log" >&2
    exit 1
fi
status=0
"$venv/bin/schemathesis" --config-file "$(dirname "$0")/schemathesis.toml" run "$base/openapi.json" \
    --header "Authorization: Bearer $key" \
    --checks all --exclude-checks positive_data_acceptance \
    --max-examples "${FUZZ_EXAMPLES:-25}" --workers 1 --no-color \
    --generation-database none --report-dir "$work/report" \
    ${FUZZ_SEED:+--seed "$FUZZ_SEED"} || status=$?
if ! kill -0 "$pid" 2>/dev/null || grep -q "Fatal error" "$work/serve.log"; then
    echo "fuzz-api: the server died during the run:" >&2
    grep -A5 "Fatal error" "$work/serve.log" >&2 || tail -20 "$work/serve.log" >&2
    status=1
fi
exit "$status"
