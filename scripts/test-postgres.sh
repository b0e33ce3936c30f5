#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, for the tests and the benchmarks.
#
#   scripts/test-postgres.sh start DIR PORT [WATCH_PID]   # prints postgres://postgres@127.0.0.1:PORT/postgres
#   scripts/test-postgres.sh stop DIR
#   scripts/test-postgres.sh run COMMAND...               # start on a free port, export JOBCTL_TEST_POSTGRES
#                                                         # (and JOBCTL_TEST_POSTGRES_CA), run, stop
#
# The server has TLS on with a self-signed certificate for 127.0.0.1 (DIR/ca.crt).
#
# With WATCH_PID the cluster stops (and its directory goes) when that process exits. As root,
# the server runs as the `postgres` user (PostgreSQL refuses to run as root). Tests run it with
# fsync and synchronous commits off; JOBCTL_PG_DURABLE=1 keeps PostgreSQL's durable defaults
# (benchmarks).
set -euo pipefail

# Close descriptors inherited beyond stdin/stdout/stderr (a caller's pipes): the server would
# keep them open, and a caller reading our output to its end would wait forever.
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    case $fd in 0|1|2|255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
done

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "error: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "error: openssl not found, needed for the server's TLS certificate (apt-get install openssl)" >&2; exit 1; }
as_owner=()
[ "$(id -u)" -eq 0 ] && as_owner=(runuser -u postgres --)

start() {
    local dir=$1 port=$2 watch=${3:-}
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
    "${as_owner[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-sync >"$dir/initdb.log" 2>&1
    # TLS as on a stock Debian server (a self-signed certificate), for 127.0.0.1 so that
    # verify-full can be tested too; clients see it at DIR/ca.crt.
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$dir/data/server.key" -out "$dir/data/server.crt" >/dev/null 2>&1
    cp "$dir/data/server.crt" "$dir/ca.crt"
    chmod 600 "$dir/data/server.key"
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir/data/server.key" "$dir/data/server.crt"
    local durability="-c fsync=off -c synchronous_commit=off"
    [ "${JOBCTL_PG_DURABLE:-}" = 1 ] && durability=""
    "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c ssl=on $durability" start >/dev/null
    if [ -n "$watch" ]; then
        (while kill -0 "$watch" 2>/dev/null; do sleep 1; done; stop "$dir") >/dev/null 2>&1 &
        disown
    fi
    echo "postgres://postgres@127.0.0.1:$port/postgres"
}

stop() {
    local dir=$1
    [ -d "$dir/data" ] && "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

case ${1:-} in
    start) start "$2" "$3" "${4:-}" ;;
    stop) stop "$2" ;;
    run)
        shift
        dir=$(mktemp -d /tmp/jobctl-postgres.XXXXXX)
        trap 'stop "$dir"' EXIT
        JOBCTL_TEST_POSTGRES=$(start "$dir" "$(free_port)")
        export JOBCTL_TEST_POSTGRES JOBCTL_TEST_POSTGRES_CA=$dir/ca.crt
        echo "PostgreSQL for the tests: $JOBCTL_TEST_POSTGRES" >&2
        "$@"
        ;;
    *) echo "usage: $0 start DIR PORT [WATCH_PID] | stop DIR | run COMMAND..." >&2; exit 64 ;;
esac
