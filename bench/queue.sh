#!/usr/bin/env bash
# jobctl's PostgreSQL queue against PgQueuer 1.6.0, side by side on one throwaway durable
# cluster (fsync and synchronous_commit on): bench/queuebench.py does the work. Build first:
#   swift build -c release --scratch-path .build-release && bench/queue.sh [queue.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
JOBCTL_PG_DURABLE=1 exec scripts/test-postgres.sh run python3 bench/queuebench.py "$@"
