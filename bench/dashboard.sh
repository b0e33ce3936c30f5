#!/usr/bin/env bash
# The dashboard's jobs page with 1,000,000 jobs (issue 30): latency of each view as a browser
# gets it (curl's total time, a signed-in session), p50 and p95 of RUNS requests, on SQLite and
# on PostgreSQL. The jobs are written with SQL in bulk (as a year of a busy queue would leave
# them: mostly completed, 2 % failed, 1,000 running, 10,000 queued, three tenants and the CLI),
# after `jobctl migrate` made the schema, and ANALYZEd.
#
#   swift build -c release --scratch-path .build-release --product jobctl
#   bash bench/dashboard.sh [RUNS] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-30}
JOBS=${2:-1000000}
JOBCTL=$(realpath "${JOBCTL:-.build-release/release/jobctl}")
OUT=bench/out/dashboard
mkdir -p "$OUT"
[[ $RUNS =~ ^[1-9][0-9]*$ && $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash bench/dashboard.sh [RUNS] [JOBS]" >&2; exit 64; }

# The rows, as SELECT columns over i in 0..JOBS-1 (the same text for both databases).
ROWS="
  lpad(to_hex(i), 8, '0') || '-0000-7000-8000-' || lpad(i::text, 12, '0'),
  CASE i % 10 WHEN 0 THEN 'hls' WHEN 1 THEN 'thumbnails' ELSE 'export' END,
  CASE WHEN i >= $JOBS - 10000 THEN 'unknown' WHEN i >= $JOBS - 11000 THEN 'reading'
       WHEN i % 50 = 0 THEN 'failed' ELSE 'completed' END,
  'talk-' || i || '.mov', 'out-' || i || '.mp4', CASE i % 3 WHEN 0 THEN 'low' ELSE 'medium' END, '{}',
  i % 5, 3, 3, 1700000000000 + i * 1000, 1700000000000 + i * 1000, 1700000000000 + i * 1000,
  CASE WHEN i < $JOBS - 11000 THEN 1700000000000 + i * 1000 + 5000 END,
  CASE i % 4 WHEN 0 THEN NULL ELSE 'tenant' || (i % 4) END,
  CASE WHEN i < $JOBS - 10000 THEN 'worker-' || (i % 8) END"
COLUMNS="id, kind, status, input, output, preset, preset_settings, priority, max_attempts, attempt_budget,
  run_at, created_at, updated_at, finished_at, owner, worker"

load_sqlite() {
    local db=$1
    rm -f "$db"*
    "$JOBCTL" migrate --db "$db" >/dev/null
    # SQLite has no lpad/to_hex: printf does the same.
    local rows=${ROWS//"lpad(to_hex(i), 8, '0') || '-0000-7000-8000-' || lpad(i::text, 12, '0')"/"printf('%08x-0000-7000-8000-%012d', i, i)"}
    sqlite3 "$db" "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $JOBS - 1)
        INSERT INTO jobs ($COLUMNS) SELECT $rows FROM n; ANALYZE;"
}

load_postgres() {
    local db=$1
    "$JOBCTL" migrate --db "$db" >/dev/null
    psql -q "$db" -c "INSERT INTO jobctl.jobs ($COLUMNS) SELECT $ROWS FROM generate_series(0, $JOBS - 1) AS i;
        ANALYZE jobctl.jobs;"
}

# STORE DB: serve it, sign in with an admin key and a tenant's key, time each view.
measure() {
    local store=$1 db=$2 port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local admin tenant
    admin=$("$JOBCTL" keys create --name bench-admin --scope admin --db "$db")
    tenant=$("$JOBCTL" keys create --name bench-tenant --db "$db")
    # The tenant's jobs are the rows owned by 'tenant1': give that owner to the new key.
    local tenant_id=${tenant#jck_}
    tenant_id=${tenant_id%%_*}
    if [ "$store" = sqlite ]; then
        sqlite3 "$db" "UPDATE jobs SET owner = '$tenant_id' WHERE owner = 'tenant1'; ANALYZE;"
    else
        psql -q "$db" -c "UPDATE jobctl.jobs SET owner = '$tenant_id' WHERE owner = 'tenant1'; ANALYZE jobctl.jobs;"
    fi
    "$JOBCTL" serve --db "$db" --listen "127.0.0.1:$port" --rate-limit 0 >"$OUT/serve-$store.log" 2>&1 &
    local serve=$!
    trap "kill $serve 2>/dev/null" RETURN
    while ! grep -q "listening on" "$OUT/serve-$store.log"; do sleep 0.1; done
    # SQLite's search index is filled by `serve` behind the submissions: time it, and measure
    # once it has caught up (as on a server that has been running).
    if [ "$store" = sqlite ]; then
        local started=$SECONDS
        until [ "$(sqlite3 "$db" "SELECT (SELECT indexed_rowid FROM job_search_state) >= (SELECT max(rowid) FROM jobs)")" = 1 ]; do
            sleep 0.5
        done
        echo "sqlite: the search index caught up with $JOBS jobs in $((SECONDS - started)) s" >&2
    fi
    python3 bench/dashboard_measure.py "http://127.0.0.1:$port" "$admin" "$tenant" "$RUNS" "$store" \
        >"$OUT/$store.json"
    cat "$OUT/$store.json"
}

load_sqlite "$OUT/jobs.sqlite"
measure sqlite "$OUT/jobs.sqlite"
scripts/test-postgres.sh run bash -c "$(declare -f load_postgres measure); $(declare -p ROWS COLUMNS JOBCTL OUT RUNS JOBS);
    load_postgres \"\$JOBCTL_TEST_POSTGRES\" && measure postgres \"\$JOBCTL_TEST_POSTGRES\""
rm -f "$OUT/jobs.sqlite"*
