#!/usr/bin/env python3
"""The HTTP API under load: requests per second and latency of `POST /v1/jobs` and
`GET /v1/jobs/{id}` with 32 keep-alive clients (wrk), then how many idle long polls one
`jobctl serve` process holds and at what memory.

    bench/api.sh [--repeats 3] [--duration 10] [--polls 10000]   # SQLite, then PostgreSQL

For each store (a SQLite file in WAL with synchronous=FULL; PostgreSQL from
$JOBCTL_TEST_POSTGRES, which bench/api.sh starts durable: fsync and synchronous_commit on):
  * start `jobctl serve --rate-limit 0` (release build) and create a submit key;
  * POST: wrk -t2 -c32 for --duration seconds, each request an export job (a named preset,
    https input and output, a webhook, metadata) that the server validates, stores and
    answers 201; --repeats rounds, the median round reported;
  * GET: the same for one job's `GET /v1/jobs/{id}`;
  * long polls (SQLite only): --polls connections each sending `GET …?wait=120s` on a queued
    job, held open, on the server the wrk rounds ran on, then on a fresh server; the
    server's resident memory (VmRSS) before and with them all open, and how many were answered
    early (none should be).
The client and the server share the machine's cores, so the rates are a floor.
"""

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POST_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
wrk.body = '{"input":"https://media.example.com/talk.mov","output":"https://bucket.example.com/out/talk.mp4?sig=abc","preset":"low","range":"1s+3s","webhook":"https://app.example.com/hooks/export","metadata":{"order":"1234","tenant":"acme"}}'
"""
GET_LUA = """
wrk.headers["Authorization"] = "Bearer %s"
"""


def start_server(jobctl: str, db: str, work: Path) -> tuple[subprocess.Popen, str, str]:
    key = subprocess.run(
        [jobctl, "keys", "create", "--name", f"bench {time.time()}", "--db", db],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    log = open(work / "serve.log", "w")
    server = subprocess.Popen(
        [jobctl, "serve", "--db", db, "--listen", "127.0.0.1:0", "--rate-limit", "0", "--max-wait", "150s",
         "--max-watches-per-key", "100000"],
        stderr=log, stdout=subprocess.DEVNULL,
    )
    for _ in range(200):
        text = (work / "serve.log").read_text()
        match = re.search(r"listening on (http://\S+)", text)
        if match:
            return server, match.group(1), key
        if server.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"jobctl serve did not start: {(work / 'serve.log').read_text()}")


def wrk(url: str, script: str, duration: int, work: Path) -> dict:
    path = work / "script.lua"
    path.write_text(script)
    out = subprocess.run(
        ["wrk", "-t2", "-c32", f"-d{duration}s", "--latency", "-s", str(path), url],
        check=True, capture_output=True, text=True,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def percentile(name: str) -> float:
        value, unit = re.search(rf"^\s+{name}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {
        "rate": rate, "p50": percentile("50"), "p99": percentile("99"),
        "non2xx": int(non2xx.group(1)) if non2xx else 0, "socketErrors": errors.group(1) if errors else None,
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def hold_polls(host: str, port: int, path: str, key: str, count: int, server_pid: int) -> dict:
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n\r\n").encode()
    opened, answered = [], 0
    started = time.monotonic()

    async def one():
        nonlocal answered
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(request)
        await writer.drain()
        opened.append((reader, writer))

    for start in range(0, count, 500):
        await asyncio.gather(*(one() for _ in range(start, min(count, start + 500))))
    connect_seconds = time.monotonic() - started
    await asyncio.sleep(5)  # let the server read every request and settle
    rss = rss_mb(server_pid)
    for reader, _ in opened:
        # The answer's head comes at once (the poll waits in its body); the job JSON only when
        # the wait ends.
        try:
            data = await asyncio.wait_for(reader.read(65536), timeout=0.001)
            if b'"status"' in data:
                answered += 1
        except (asyncio.TimeoutError, TimeoutError):
            pass
    for _, writer in opened:
        writer.close()
    return {"polls": count, "connectSeconds": round(connect_seconds, 1), "rssMB": round(rss, 1),
            "answeredEarly": answered}


def submit_one(base: str, key: str) -> str:
    created = subprocess.run(
        ["curl", "-sS", "-X", "POST", "-H", f"Authorization: Bearer {key}", "-H", "Content-Type: application/json",
         "--data-binary", '{"input":"https://media.example.com/a.mov","output":"https://bucket.example.com/a.mp4","preset":"low"}',
         base + "/v1/jobs"], check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(created)["id"]


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()


def polls_on(server: subprocess.Popen, base: str, key: str, job: str, count: int) -> dict:
    host, port = base.removeprefix("http://").rsplit(":", 1)
    idle = rss_mb(server.pid)
    held = asyncio.run(hold_polls(host, int(port), f"/v1/jobs/{job}?wait=120s", key, count, server.pid))
    return {"rssIdleMB": round(idle, 1), **held}


def bench_store(name: str, db: str, args, work: Path) -> dict:
    result: dict = {"store": name}
    server, base, key = start_server(args.jobctl, db, work)
    try:
        posts = [wrk(base + "/v1/jobs", POST_LUA % key, args.duration, work) for _ in range(args.repeats)]
        job = submit_one(base, key)
        gets = [wrk(f"{base}/v1/jobs/{job}", GET_LUA % key, args.duration, work) for _ in range(args.repeats)]
        for label, rounds in (("post", posts), ("get", gets)):
            median = sorted(rounds, key=lambda r: r["rate"])[len(rounds) // 2]
            result[label] = {**median, "rates": [r["rate"] for r in rounds]}
        if name == "sqlite" and args.polls:
            # On the server that has just served the wrk rounds.
            result["longPollsAfterLoad"] = polls_on(server, base, key, job, args.polls)
    finally:
        stop(server)
    if name == "sqlite" and args.polls:
        # And on a fresh server: what the polls themselves cost. (Last: 10,000 connections
        # just closed would weigh on the rounds above.)
        server, base, key = start_server(args.jobctl, db, work)
        try:
            result["longPolls"] = polls_on(server, base, key, submit_one(base, key), args.polls)
        finally:
            stop(server)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobctl", default=str(ROOT / ".build-release/release/jobctl"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--polls", type=int, default=10000)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the children (serve) inherit it
    if args.polls + 100 > hard:
        raise SystemExit(f"--polls {args.polls} needs more open files than the limit ({hard})")
    results = []
    with tempfile.TemporaryDirectory(prefix="jobctl-apibench-") as directory:
        work = Path(directory)
        results.append(bench_store("sqlite", str(work / "jobs.sqlite"), args, work))
        if os.environ.get("JOBCTL_TEST_POSTGRES"):
            base = os.environ["JOBCTL_TEST_POSTGRES"]
            prefix = base.partition("?")[0]
            subprocess.run(["psql", "-q", prefix, "-c", "DROP DATABASE IF EXISTS apibench"], check=True)
            subprocess.run(["psql", "-q", prefix, "-c", "CREATE DATABASE apibench"], check=True)
            results.append(bench_store("postgres", prefix.rsplit("/", 1)[0] + "/apibench", args, work))
    print(f"\n32 keep-alive clients (wrk -t2 -c32), {args.duration} s a round, median of {args.repeats} rounds\n")
    print("| store | request | requests/s (rounds) | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---:|---:|---:|---:|")
    for result in results:
        for label, request in (("post", "POST /v1/jobs"), ("get", "GET /v1/jobs/{id}")):
            r = result[label]
            rates = ", ".join(f"{rate:,.0f}" for rate in r["rates"])
            print(f"| {result['store']} | `{request}` | {r['rate']:,.0f} ({rates}) | {r['p50']:.2f} | {r['p99']:.2f} | {r['non2xx']} |")
    for result in results:
        for label, when in (("longPolls", "a fresh server"), ("longPollsAfterLoad", "the server after the wrk rounds")):
            if label in result:
                polls = result[label]
                print(f"\nLong polls ({result['store']}, {when}): {polls['polls']:,} open in {polls['connectSeconds']} s; "
                      f"server RSS {polls['rssIdleMB']} MB idle, {polls['rssMB']} MB with them all open; "
                      f"answered early: {polls['answeredEarly']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
