#!/usr/bin/env python3
"""jobctl's PostgreSQL queue against PgQueuer's, side by side, in one run on one cluster.

    JOBCTL_PG_DURABLE=1 scripts/test-postgres.sh run python3 bench/queuebench.py   # what bench/queue.sh does

For each worker count (1, 2, 4) and each of --repeats rounds, alternately:
  * PgQueuer 1.6.0 (asyncpg, batch 10, one connection per worker process): bench/pgqueuer_drain.py
    drains --jobs no-op jobs; timed from "go" to the last job's `successful` log entry;
  * jobctl: `jobctl-bench queue --db … --workers N --repeats 1 --json` (concurrency 32 per
    process); timed from just before the jobs' insert commits to the last finishedAt.
Both exclude process start-up: the workers are running and connected before the clock starts.
Prints a Markdown table with the medians, the ratio jobctl / PgQueuer per worker count and at
the best count of each, then jobctl's pickup latency. --json-out FILE keeps every figure.

PgQueuer and asyncpg are installed from PyPI into bench/out/pgqueuer-venv (git-ignored) on the
first run. The server is whatever $JOBCTL_TEST_POSTGRES points at (a superuser URL); the two
databases are created on it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "bench" / "out" / "pgqueuer-venv"
PGQUEUER = "pgqueuer==1.6.0"


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"Installing {PGQUEUER} and asyncpg into {VENV} …", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    check = subprocess.run(
        [str(python), "-c", "import pgqueuer, asyncpg; print(pgqueuer.__version__)"], capture_output=True, text=True
    )
    if check.returncode != 0 or check.stdout.strip() != PGQUEUER.split("==")[1]:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", PGQUEUER, "asyncpg"], check=True)
    return python


def database_url(base: str, name: str) -> str:
    # base: postgres://user@host:port/postgres (maybe with ?query)
    prefix, _, _ = base.partition("?")
    return prefix.rsplit("/", 1)[0] + "/" + name


def create_database(base: str, name: str) -> None:
    prefix = base.partition("?")[0]
    subprocess.run(["psql", "-q", prefix, "-c", f"DROP DATABASE IF EXISTS {name}"], check=True)
    subprocess.run(["psql", "-q", prefix, "-c", f"CREATE DATABASE {name}"], check=True)


def pgqueuer_run(python: Path, dsn: str, jobs: int, workers: int) -> float:
    out = subprocess.run(
        [str(python), str(ROOT / "bench" / "pgqueuer_drain.py"), "--dsn", dsn, "--jobs", str(jobs),
         "--workers", str(workers), "--repeats", "1", "--json"],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)["runs"][0]["seconds"][0]


def jobctl_run(jobctl: str, url: str, jobs: int, workers: int, concurrency: int, samples: int) -> dict:
    out = subprocess.run(
        [jobctl + "-bench", "queue", "--db", url, "--jobs", str(jobs), "--workers", str(workers), "--repeats", "1",
         "--concurrency", str(concurrency), "--samples", str(samples), "--json"],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobctl", default=str(ROOT / ".build-release" / "release" / "jobctl"))
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--samples", type=int, default=200, help="pickup latency samples (jobctl)")
    parser.add_argument("--json-out", help="also write every figure to this file")
    args = parser.parse_args()

    base = os.environ.get("JOBCTL_TEST_POSTGRES")
    if not base:
        sys.exit("JOBCTL_TEST_POSTGRES is not set: run under scripts/test-postgres.sh run (bench/queue.sh does)")
    python = ensure_venv()
    create_database(base, "pgqueuer_bench")
    create_database(base, "jobctl_bench")
    pgq_dsn = database_url(base, "pgqueuer_bench") + "?sslmode=disable"
    jobctl_url = database_url(base, "jobctl_bench") + "?sslmode=disable"
    settings = subprocess.run(
        ["psql", "-qAt", base.partition("?")[0], "-c",
         "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings "
         "WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers', 'max_connections', 'server_version')"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()

    counts = [int(x) for x in args.workers.split(",")]
    results = {n: {"jobctl": [], "pgqueuer": []} for n in counts}
    for round_ in range(args.repeats):
        for n in counts:
            results[n]["pgqueuer"].append(args.jobs / pgqueuer_run(python, pgq_dsn, args.jobs, n))
            report = jobctl_run(args.jobctl, jobctl_url, args.jobs, n, args.concurrency, 0)
            results[n]["jobctl"].append(report["throughput"][0]["jobsPerSecond"])
            print(f"round {round_ + 1}, {n} workers: jobctl {results[n]['jobctl'][-1]:.0f} jobs/s, "
                  f"PgQueuer {results[n]['pgqueuer'][-1]:.0f} jobs/s", file=sys.stderr)
    pickup = None
    if args.samples > 0:
        pickup = jobctl_run(args.jobctl, jobctl_url, 200, 1, args.concurrency, args.samples)["pickup"]

    print(f"PostgreSQL: {settings}; {args.jobs} no-op jobs per run, median of {args.repeats} rounds")
    print()
    print("| worker processes | jobctl jobs/s (concurrency %d) | PgQueuer 1.6.0 jobs/s (batch 10) | jobctl / PgQueuer |"
          % args.concurrency)
    print("|---:|---:|---:|---:|")
    medians = {}
    for n in counts:
        j = statistics.median(results[n]["jobctl"])
        p = statistics.median(results[n]["pgqueuer"])
        medians[n] = (j, p)
        print(f"| {n} | **{j:.0f}** ({', '.join(f'{x:.0f}' for x in results[n]['jobctl'])}) "
              f"| {p:.0f} ({', '.join(f'{x:.0f}' for x in results[n]['pgqueuer'])}) | {j / p:.2f} |")
    best_j = max(medians.values(), key=lambda x: x[0])[0]
    best_p = max(medians.values(), key=lambda x: x[1])[1]
    print()
    print(f"Best of each: jobctl {best_j:.0f} jobs/s, PgQueuer {best_p:.0f} jobs/s: **{best_j / best_p:.2f}x**")
    if pickup:
        print(f"jobctl pickup latency (idle worker), {pickup['samples']} jobs: p50 {pickup['p50']:.1f} ms, "
              f"p99 {pickup['p99']:.1f} ms")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(
            {"settings": settings, "jobs": args.jobs, "results": results, "pickup": pickup}, indent=2))


if __name__ == "__main__":
    main()
