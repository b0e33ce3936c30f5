#!/usr/bin/env bash
# The HTTP API under load (bench/apibench.py): requests/s and latency of POST and GET with 32
# keep-alive clients on SQLite and on a throwaway durable PostgreSQL cluster, and 10,000 idle
# long polls on one process. Needs wrk (apt-get install wrk). Build first:
#   swift build -c release --scratch-path .build-release --product jobctl && bench/api.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "bench/api.sh needs wrk: apt-get install -y wrk" >&2; exit 1; }
JOBCTL_PG_DURABLE=1 exec scripts/test-postgres.sh run python3 bench/apibench.py "$@"
