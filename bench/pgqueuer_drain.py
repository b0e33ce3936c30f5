#!/usr/bin/env python3
"""PgQueuer's drain of N no-op jobs with 1, 2 or 4 worker processes, for the side-by-side
queue benchmark (bench/queue.sh, docs/benchmarks.md).

    pgqueuer_drain.py --dsn postgres://… --jobs 10000 --workers 1,2,4 --repeats 3

Each worker is a process with one asyncpg connection and a QueueManager that runs a no-op
entrypoint with batch size 10 in drain mode (it exits once the queue is empty and its jobs
are done). The clock starts when every worker has connected and registered its entrypoint
(start-up is not counted, as for jobctl's warm workers) and stops at the last job's
`successful` entry in PgQueuer's log (its acknowledgement's transaction time), or when the
last worker exits if that is earlier. jobs/s = N / that time. Prints a Markdown table, or with
--json one JSON document.
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time


async def prepare(dsn: str, jobs: int) -> None:
    """Installs PgQueuer's schema if missing, empties it, enqueues `jobs` no-op jobs."""
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries

    connection = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(connection))
    if not await queries.schema_is_installed():
        await queries.install()
    await connection.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics")
    for start in range(0, jobs, 1000):
        count = min(1000, jobs - start)
        await queries.enqueue(["noop"] * count, [None] * count, [0] * count)
    await connection.execute("VACUUM ANALYZE pgqueuer")
    await connection.close()


async def work(dsn: str, batch: int) -> None:
    """One worker: connect, say ready, wait for "go" on stdin, drain."""
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries, QueueManager
    from pgqueuer.types import QueueExecutionMode

    connection = await asyncpg.connect(dsn)
    manager = QueueManager(Queries(AsyncpgDriver(connection)))

    @manager.entrypoint("noop")
    async def noop(job) -> None:  # noqa: ARG001
        return None

    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await manager.run(batch_size=batch, mode=QueueExecutionMode.drain)
    await connection.close()


async def outcome(dsn: str) -> tuple[int, float]:
    """Jobs left in the queue, and the last acknowledgement's time (Unix seconds)."""
    import asyncpg

    connection = await asyncpg.connect(dsn)
    count = await connection.fetchval("SELECT count(*) FROM pgqueuer")
    last = await connection.fetchval(
        "SELECT extract(epoch FROM max(created))::float8 FROM pgqueuer_log WHERE status = 'successful'"
    )
    await connection.close()
    return count, last or 0.0


def drain(dsn: str, jobs: int, workers: int, batch: int) -> float:
    asyncio.run(prepare(dsn, jobs))
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", "--dsn", dsn, "--batch", str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    for process in processes:
        if process.stdout.readline().strip() != "ready":
            sys.exit("a PgQueuer worker did not start")
    start = time.time()
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        process.wait()
    exited = time.time()
    left, last = asyncio.run(outcome(dsn))
    if left:
        sys.exit(f"PgQueuer left {left} of {jobs} jobs in its queue")
    return min(exited, last) - start if last > start else exited - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(work(args.dsn, args.batch))
        return
    import json

    import pgqueuer

    print(f"PgQueuer {pgqueuer.__version__}, batch {args.batch}, {args.jobs} no-op jobs", file=sys.stderr)
    if not args.json:
        print("| worker processes | jobs | runs | median seconds | jobs/s (median) | jobs/s (all runs) |")
        print("|---:|---:|---:|---:|---:|---|")
    report = {"pgqueuer": pgqueuer.__version__, "batch": args.batch, "jobs": args.jobs, "runs": []}
    for workers in [int(x) for x in args.workers.split(",")]:
        runs = [drain(args.dsn, args.jobs, workers, args.batch) for _ in range(max(1, args.repeats))]
        median = statistics.median(runs)
        report["runs"].append({"workers": workers, "seconds": runs, "jobsPerSecond": args.jobs / median})
        if not args.json:
            every = ", ".join(str(int(args.jobs / x)) for x in runs)
            print(
                f"| {workers} | {args.jobs} | {len(runs)} | {median:.2f} | **{int(args.jobs / median)}** | {every} |",
                flush=True,
            )
    if args.json:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
