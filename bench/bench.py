#!/usr/bin/env python3
"""Benchmark `jobctl export` against the equivalent `ffmpeg` CLI command.

What is measured, for each case (a preset, optionally with a time range):
  * wall time (time.perf_counter around the child process) and peak RSS of the child
    (`ru_maxrss` from os.wait4, KiB on Linux), for `jobctl export INPUT --preset P
    [--range R] -o OUT` and for the ffmpeg command that `jobctl presets --json` gives as
    the preset's equivalent (with `-ss START -t DURATION` before `-i` for a range);
  * each tool runs N times, alternating jobctl/ffmpeg; medians and the ratios
    jobctl/ffmpeg are reported (a ratio <= 1.0: jobctl is at least as fast / as lean);
  * output durations (ffprobe) are compared as a sanity check that both did the same work;
  * memory flatness: jobctl's peak RSS exporting a 10-second and a 10-minute 640x360 input
    with preset `low` (median of 3 runs); the ratio 10min/10s should be about 1.0.

Inputs are generated with the ffmpeg CLI and cached in bench/out/ (git-ignored).

Run (after `swift build -c release --scratch-path .build-release`):
    python3 bench/bench.py                 # all default cases, 5 runs each, memory check
    python3 bench/bench.py --quick         # smoke test: 3 s 320x240 input, 1 run, `low` only
    python3 bench/bench.py --runs 9 --cases low,passthrough@5s+10s --skip-memory
    python3 bench/bench.py --write-doc     # also update the section in docs/benchmarks.md
A case is PRESET or PRESET@RANGE (RANGE as jobctl's --range: 5s+10s, 1:00-1:30, 90).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
DEFAULT_JOBCTL = ROOT / ".build-release" / "release" / "jobctl"
DEFAULT_DOC = ROOT / "docs" / "benchmarks.md"
DEFAULT_CASES = ["low", "low@5s+10s", "1280x720", "highest@0+8s", "passthrough@5s+10s"]
START_MARK, END_MARK = "<!-- bench:export:start -->", "<!-- bench:export:end -->"
DURATION_TOLERANCE = 0.1  # seconds


@dataclass
class Sample:
    wall: float  # seconds
    rss_kib: int
    duration: float | None  # of the output, from ffprobe


@dataclass
class CaseResult:
    case: str
    commands: dict[str, list[str]]
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"jobctl": [], "ffmpeg": []})


class ToolFailed(Exception):
    pass


def run_measured(cmd: list[str]) -> tuple[float, int]:
    """Runs cmd; returns (wall seconds, peak RSS KiB). Raises ToolFailed with stderr."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise ToolFailed(f"exit {proc.returncode}: {shlex.join(cmd)}\n{tail}")
    return wall, usage.ru_maxrss


def probe_duration(path: Path) -> float | None:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True).stdout.strip()
    try:
        return float(out)
    except ValueError:
        return None


def parse_time(text: str) -> float:
    """One time as jobctl parses it: 90, 1.5s, 1500ms, 1:02.5, 00:01:02.5 → seconds."""
    text = text.strip()
    if ":" in text:
        return sum(float(part) * 60 ** i for i, part in enumerate(reversed(text.split(":"))))
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    return float(text.removesuffix("s"))


def ffmpeg_range_args(range_text: str | None) -> list[str]:
    """START+DURATION, START-END or START → ["-ss", START, "-t", DURATION]."""
    if not range_text:
        return []
    if "+" in range_text:
        start_text, duration_text = range_text.split("+", 1)
        start, duration = parse_time(start_text), parse_time(duration_text)
    elif "-" in range_text:
        start_text, end_text = range_text.split("-", 1)
        start = parse_time(start_text)
        duration = parse_time(end_text) - start
    else:
        return ["-ss", f"{parse_time(range_text):g}"]
    return ["-ss", f"{start:g}", "-t", f"{duration:g}"]


def ffmpeg_command(template: str, input_path: Path, output: Path, range_text: str | None) -> list[str]:
    """The preset's ffmpeg equivalent from `presets --json`, made runnable."""
    words = [{"INPUT": str(input_path), "OUTPUT": str(output)}.get(w, w) for w in shlex.split(template)]
    assert words[0] == "ffmpeg" and "-i" in words, f"unexpected ffmpeg command: {template}"
    words[1:1] = ["-y", "-nostdin", "-v", "error"]
    i = words.index("-i")
    words[i:i] = ffmpeg_range_args(range_text)
    return words


def jobctl_command(jobctl: Path, input_path: Path, output: Path, preset: str, range_text: str | None) -> list[str]:
    cmd = [str(jobctl), "export", str(input_path), "--preset", preset]
    return cmd + (["--range", range_text] if range_text else []) + ["-o", str(output)]


def generate_input(width: int, height: int, fps: int, seconds: int, x264_preset: str) -> Path:
    """A testsrc2 + sine clip, cached in bench/out/ (written to a temp name, then renamed)."""
    path = OUT / f"input-{width}x{height}-{fps}fps-{seconds}s-{x264_preset}.mp4"
    if path.exists():
        return path
    print(f"generating {path.relative_to(ROOT)} ...", file=sys.stderr)
    partial = path.with_suffix(".partial.mp4")
    subprocess.run(["ffmpeg", "-y", "-nostdin", "-v", "error",
                    "-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate={fps}",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", str(seconds),
                    "-c:v", "libx264", "-preset", x264_preset, "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-ac", "2", "-shortest", str(partial)], check=True)
    partial.rename(path)
    return path


def load_presets(jobctl: Path) -> dict[str, dict]:
    out = subprocess.run([str(jobctl), "presets", "--json"], capture_output=True, text=True, check=True).stdout
    return {preset["name"]: preset for preset in json.loads(out)}


def run_case(case: str, presets: dict[str, dict], jobctl: Path, input_path: Path, runs: int) -> CaseResult:
    preset_name, _, range_text = case.partition("@")
    if preset_name not in presets:
        sys.exit(f"bench: unknown preset '{preset_name}' (jobctl has: {', '.join(presets)})")
    preset = presets[preset_name]
    stem = case.replace("@", "-").replace("+", "_").replace(":", "_")
    outputs = {tool: OUT / f"out-{stem}-{tool}.{preset['format']}" for tool in ("jobctl", "ffmpeg")}
    commands = {
        "jobctl": jobctl_command(jobctl, input_path, outputs["jobctl"], preset_name, range_text or None),
        "ffmpeg": ffmpeg_command(preset["ffmpeg"], input_path, outputs["ffmpeg"], range_text or None),
    }
    result = CaseResult(case, commands)
    for run in range(runs):
        for tool in ("jobctl", "ffmpeg"):
            print(f"  {case}: {tool} run {run + 1}/{runs}", file=sys.stderr)
            wall, rss = run_measured(commands[tool])
            result.samples[tool].append(Sample(wall, rss, probe_duration(outputs[tool])))
            outputs[tool].unlink(missing_ok=True)
    return result


def duration_warnings(result: CaseResult) -> list[str]:
    # passthrough with a range: jobctl starts at the keyframe at or before START (docs/spec.md §2), while
    # `ffmpeg -ss -c copy` copies the same packets and hides the lead-in with an edit list.
    if result.case.startswith("passthrough@"):
        return []
    pairs = zip(result.samples["jobctl"], result.samples["ffmpeg"])
    bad = {(j.duration, f.duration) for j, f in pairs
           if j.duration is None or f.duration is None or abs(j.duration - f.duration) > DURATION_TOLERANCE}
    return [f"{result.case}: output durations differ: jobctl {j} s, ffmpeg {f} s" for j, f in sorted(bad, key=str)]


def median(values: list[float]) -> float:
    return statistics.median(values)


def display(cmd: list[str]) -> str:
    """A shell-valid command line for people: repo-relative paths, double quotes where they suffice."""
    words = [word.replace(f"{ROOT}/", "") for word in cmd]
    safe = [f'"{w}"' if shlex.quote(w) != w and not any(c in w for c in '"$`\\!') else shlex.quote(w) for w in words]
    return " ".join(safe)


def results_table(results: list[CaseResult]) -> str:
    lines = ["| case | jobctl wall (s) | ffmpeg wall (s) | wall ratio | jobctl peak RSS (MiB) "
             "| ffmpeg peak RSS (MiB) | RSS ratio | output duration jobctl / ffmpeg (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        j, f = r.samples["jobctl"], r.samples["ffmpeg"]
        jw, fw = median([s.wall for s in j]), median([s.wall for s in f])
        jr, fr = median([s.rss_kib for s in j]), median([s.rss_kib for s in f])
        jd, fd = j[0].duration, f[0].duration
        lines.append(f"| `{r.case}` | {jw:.2f} | {fw:.2f} | **{jw / fw:.2f}** | {jr / 1024:.1f} | {fr / 1024:.1f} "
                     f"| **{jr / fr:.2f}** | {jd if jd is not None else '?'} / {fd if fd is not None else '?'} |")
    return "\n".join(lines)


def memory_check(jobctl: Path, presets: dict[str, dict], quick: bool) -> str:
    """jobctl's peak RSS exporting a 10 s and a 10 min input with `low`: should be flat."""
    lengths = [10] if quick else [10, 600]
    runs = 1 if quick else 3
    rss: dict[int, float] = {}
    lines = ["| input (640x360, 25 fps) | jobctl peak RSS (MiB), median of "
             f"{runs} | jobctl wall (s) |", "|---|---:|---:|"]
    for seconds in lengths:
        input_path = generate_input(640, 360, 25, seconds, "ultrafast")
        output = OUT / f"out-memory-{seconds}s.{presets['low']['format']}"
        samples = []
        for run in range(runs):
            print(f"  memory: {seconds} s input, run {run + 1}/{runs}", file=sys.stderr)
            samples.append(run_measured(jobctl_command(jobctl, input_path, output, "low", None)))
            output.unlink(missing_ok=True)
        rss[seconds] = median([s[1] for s in samples])
        lines.append(f"| {seconds} s | {rss[seconds] / 1024:.1f} | {median([s[0] for s in samples]):.2f} |")
    ratio = f"{rss[600] / rss[10]:.2f}" if 600 in rss else "n/a (10-minute input skipped by --quick)"
    return "\n".join(lines) + f"\n\nPeak RSS ratio 10 min / 10 s: **{ratio}** (expected about 1.0: bounded per-track queues)."


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    ffmpeg_version = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.splitlines()[0]
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return {"machine": f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu}",
            "date": date, "ffmpeg": ffmpeg_version}


def report(args: argparse.Namespace, info: dict[str, str], input_path: Path, results: list[CaseResult],
           memory: str | None, warnings: list[str]) -> str:
    example = results[0].commands if results else {}
    parts = [f"Invocation: `{shlex.join(sys.orig_argv)}`", "",
             f"- Machine: {info['machine']}", f"- Date: {info['date']}", f"- ffmpeg: `{info['ffmpeg']}`",
             f"- Input: `{input_path.relative_to(ROOT)}`; {args.runs} run(s) per tool per case, alternating; "
             "medians; ratio = jobctl / ffmpeg (<= 1.0: jobctl at least as fast / as lean)", ""]
    for tool, cmd in example.items():
        parts += [f"Example {tool} command (`{results[0].case}`, from the repo root):", "", "```", display(cmd), "```", ""]
    parts += [results_table(results), ""]
    if any(r.case.startswith("passthrough@") for r in results):
        parts += ["Passthrough durations differ by design: both tools copy the same packets from the keyframe "
                  "before START; jobctl's output starts at that keyframe (docs/spec.md §2), ffmpeg's hides the lead-in "
                  "with an edit list.", ""]
    if warnings:
        parts += ["**WARNINGS:**", ""] + [f"- {w}" for w in warnings] + [""]
    if memory:
        parts += ["Memory flatness (jobctl, preset `low`):", "", memory, ""]
    return "\n".join(parts).rstrip() + "\n"


def write_doc(path: Path, body: str, marks: tuple[str, str] = (START_MARK, END_MARK),
              insert_before: str | None = None) -> None:
    """Replaces the text between `marks` (what follows the end mark, such as notes written by
    hand, is kept); without them, inserts the section before the line `insert_before` if given
    and present, or at the end."""
    start, end = marks
    section = f"{start}\n{body}{end}\n"
    text = path.read_text() if path.exists() else (
        "# Benchmarks\n\n`jobctl export` against the equivalent `ffmpeg` command; generated by "
        "`python3 bench/bench.py --write-doc`.\n\n")
    if start in text and end in text:
        head, rest = text.split(start, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        text = head + section + ("\n" + after if after else "")
    elif insert_before and (cut := text.find(f"\n{insert_before}")) >= 0:
        text = text[:cut + 1] + section + "\n" + text[cut + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def require_jobctl(path: Path) -> Path:
    """The jobctl binary's absolute path; exits with how to build it when it is missing."""
    jobctl = path.absolute()
    if not os.access(jobctl, os.X_OK):
        sys.exit(f"bench: no jobctl binary at {jobctl}\n"
                 "build it first: swift build -c release --scratch-path .build-release (or `make release` "
                 "and pass --jobctl .build/release/jobctl)")
    return jobctl


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per tool per case (default 5)")
    parser.add_argument("--quick", action="store_true", help="smoke test: 3 s 320x240 input, 1 run, `low` only")
    parser.add_argument("--jobctl", type=Path, default=DEFAULT_JOBCTL, help="the jobctl binary (default %(default)s)")
    parser.add_argument("--cases", help=f"comma-separated PRESET[@RANGE] (default {','.join(DEFAULT_CASES)})")
    parser.add_argument("--skip-memory", action="store_true", help="skip the memory-flatness check")
    parser.add_argument("--write-doc", action="store_true", help="also write the section in docs/benchmarks.md")
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="the file for --write-doc (default %(default)s)")
    parser.add_argument("--input", default="1920x1080@30:20",
                        help="the generated input, WIDTHxHEIGHT@FPS:SECONDS (default %(default)s; 8K: 7680x4320@24:2)")
    parser.add_argument("--section", default="export",
                        help="the section of --doc to write, between <!-- bench:SECTION:start/end --> (default %(default)s)")
    args = parser.parse_args()
    try:
        size, _, rest = args.input.partition("@")
        width, height = (int(n) for n in size.split("x"))
        fps, seconds = (int(n) for n in rest.split(":"))
        args.input = (width, height, fps, seconds)
    except ValueError:
        parser.error("--input is WIDTHxHEIGHT@FPS:SECONDS, like 7680x4320@24:2")
    if args.quick:
        args.runs = 1
    args.cases = args.cases.split(",") if args.cases else (["low"] if args.quick else DEFAULT_CASES)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    jobctl = require_jobctl(args.jobctl)
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"invocation: {shlex.join(sys.orig_argv)}", file=sys.stderr)
    presets = load_presets(jobctl)
    input_path = generate_input(320, 240, 30, 3, "veryfast") if args.quick else generate_input(*args.input, "veryfast")
    try:
        results = [run_case(case, presets, jobctl, input_path, args.runs) for case in args.cases]
        memory = None if args.skip_memory else memory_check(jobctl, presets, args.quick)
    except ToolFailed as failure:
        sys.exit(f"bench: a command failed, {failure}")
    warnings = [w for r in results for w in duration_warnings(r)]
    for w in warnings:
        print(f"\n!!!!!!!! WARNING: {w} !!!!!!!!", file=sys.stderr)
    body = report(args, machine_info(), input_path, results, memory, warnings)
    print(body)
    if args.write_doc:
        marks = (f"<!-- bench:{args.section}:start -->", f"<!-- bench:{args.section}:end -->")
        write_doc(args.doc, body, marks, insert_before="## Notes" if args.section != "export" else None)
        print(f"wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
