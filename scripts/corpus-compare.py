#!/usr/bin/env python3
"""jobctl and the ffmpeg CLI side by side on a folder of real-world media.

Usage: corpus-compare.py FOLDER [--mode export|ladder] [--jobctl PATH] [--out DIR] [--timeout S]
                          [--jobs N] [--json FILE] [--ffmpeg-from FILE] [--videos] [--every N] [--first K]

--mode export (the default): for every file under FOLDER (sorted), runs `jobctl export FILE
--preset low --range 0s+3s` and the `ffmpeg` command that `jobctl presets --json` gives for
`low`, with `-t 3`.

--mode ladder: makes a one-rung ladder of the whole file, `jobctl hls FILE --ladder 234p`, and
the same with the `ffmpeg` CLI's hls muxer (CMAF segments of 6 s, a keyframe every 2 s, the
picture scaled to 234 lines at 145 kb/s, AAC): ok when ffprobe counts packets through the
ladder's master playlist (the CLI's playlist for the CLI).

--videos keeps the files in which ffprobe finds a picture (not a cover picture); --every N
--first K then takes every Nth of those from the Kth (0-based; the ladder run in
docs/benchmarks.md takes every third from the second). Each run has a time limit, and is
classified (--ffmpeg-from takes the CLI's column from an earlier --json file instead of running
it again: the CLI does not change between jobctl builds; with --videos, that file's selection
too, instead of probing again):

  ok        exit 0 and the output holds media (ffprobe counts packets in a stream)
  empty     exit 0 but the output holds no media (a "success" that wrote nothing)
  refused   a non-zero exit (jobctl: the error code from `error: CODE:`)
  crash     killed by a signal
  hang      still running at the time limit (then killed)

Prints one line per file where the two differ or either did not end ok, then a summary; with
--json, writes every row. Nothing here is jobctl's own checking: ffprobe is the judge of both
outputs. The corpus used in docs/benchmarks.md is androidx/media's test assets (fetched, never
committed).
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("folder")
parser.add_argument("--mode", choices=["export", "ladder"], default="export")
parser.add_argument("--videos", action="store_true")
parser.add_argument("--every", type=int, default=1)
parser.add_argument("--first", type=int, default=0)
parser.add_argument("--jobctl", default=".build/release/jobctl")
parser.add_argument("--out", default=None)
parser.add_argument("--timeout", type=float, default=30)
parser.add_argument("--jobs", type=int, default=2)
parser.add_argument("--json", default=None)
parser.add_argument("--ffmpeg-from", default=None)
arguments = parser.parse_args()
earlier = {}
if arguments.ffmpeg_from:
    with open(arguments.ffmpeg_from) as handle:
        earlier = {row["file"]: row["ffmpeg"] for row in json.load(handle)}

out = arguments.out or tempfile.mkdtemp(prefix="corpus-")
os.makedirs(out, exist_ok=True)
presets = json.loads(subprocess.run([arguments.jobctl, "presets", "--json"], capture_output=True, check=True).stdout)
template = next(p for p in presets if p["name"] == "low")["ffmpeg"]


def run(command, timeout):
    started = time.time()
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "hang", "", time.time() - started
    elapsed = time.time() - started
    if process.returncode < 0:
        return "crash", "signal %d" % -process.returncode, elapsed
    return process.returncode, stderr.decode("utf-8", "replace"), elapsed


def packets(path):
    """Packets in the output's streams, by ffprobe (0 when it has none or cannot be read)."""
    if not os.path.exists(path):
        return 0
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "json", path],
        capture_output=True,
    )
    try:
        streams = json.loads(probe.stdout).get("streams", [])
    except ValueError:
        return 0
    return sum(int(s.get("nb_read_packets", 0) or 0) for s in streams)


def classify(result, output):
    code, stderr, elapsed = result
    if code in ("hang", "crash"):
        return code, stderr
    if code != 0:
        line = next((l for l in stderr.splitlines() if l.startswith("error: ")), stderr.strip().splitlines()[-1:] or [""])
        text = line if isinstance(line, str) else (line[0] if line else "")
        return "refused", text[:160]
    return ("ok", "") if packets(output) > 0 else ("empty", "exit 0, no media in the output")


def export(index, path):
    mine = os.path.join(out, "%04d.jobctl.mp4" % index)
    theirs = os.path.join(out, "%04d.ffmpeg.mp4" % index)
    jobctl = classify(
        run([arguments.jobctl, "export", path, "--preset", "low", "--range", "0s+3s", "-o", mine], arguments.timeout),
        mine,
    )
    ffmpeg = earlier.get(os.path.relpath(path, arguments.folder))
    if ffmpeg is None:
        command = shlex.split(template.replace("INPUT", shlex.quote(path)).replace("OUTPUT", shlex.quote(theirs)))
        command = [command[0], "-nostdin", "-y", "-v", "error"] + command[1:-1] + ["-t", "3", command[-1]]
        ffmpeg = classify(run(command, arguments.timeout), theirs)
    for leftover in (mine, theirs):
        if os.path.exists(leftover):
            os.remove(leftover)
    return jobctl, ffmpeg


def ladder(index, path):
    mine = os.path.join(out, "%04d.jobctl" % index)
    theirs = os.path.join(out, "%04d.ffmpeg" % index)
    jobctl = classify(
        run([arguments.jobctl, "hls", path, "--ladder", "234p", "-o", mine], arguments.timeout),
        os.path.join(mine, "master.m3u8"),
    )
    ffmpeg = earlier.get(os.path.relpath(path, arguments.folder))
    if ffmpeg is None:
        os.makedirs(theirs, exist_ok=True)
        command = [
            "ffmpeg", "-nostdin", "-y", "-v", "error", "-i", path, "-map", "0:v:0?", "-map", "0:a:0?",
            "-vf", "scale=-2:234", "-c:v", "libx264", "-b:v", "145k", "-force_key_frames", "expr:gte(t,n_forced*2)",
            "-c:a", "aac", "-b:a", "128k", "-ac", "2", "-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod",
            "-hls_segment_type", "fmp4", "-hls_segment_filename", os.path.join(theirs, "%05d.m4s"),
            "-master_pl_name", "master.m3u8", os.path.join(theirs, "index.m3u8"),
        ]
        ffmpeg = classify(run(command, arguments.timeout), os.path.join(theirs, "master.m3u8"))
    for leftover in (mine, theirs):
        shutil.rmtree(leftover, ignore_errors=True)
    return jobctl, ffmpeg


def compare(index_and_path):
    index, path = index_and_path
    jobctl, ffmpeg = (ladder if arguments.mode == "ladder" else export)(index, path)
    return {"file": os.path.relpath(path, arguments.folder), "jobctl": jobctl, "ffmpeg": ffmpeg}


def has_picture(path):
    """Whether ffprobe finds a video stream that is not a cover picture (20 s allowed)."""
    try:
        probe = subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type:stream_disposition=attached_pic",
             "-of", "json", path],
            capture_output=True, timeout=20,
        )
        streams = json.loads(probe.stdout or b"{}").get("streams", [])
    except (subprocess.TimeoutExpired, ValueError):
        return False
    return any(s.get("codec_type") == "video" and not s.get("disposition", {}).get("attached_pic") for s in streams)


files = sorted(
    os.path.join(directory, name)
    for directory, _, names in os.walk(arguments.folder)
    for name in names
    if os.path.isfile(os.path.join(directory, name))
)
if arguments.videos and earlier:
    # The earlier run's selection, without probing every file again.
    files = [path for path in files if os.path.relpath(path, arguments.folder) in earlier]
else:
    if arguments.videos:
        files = [path for path in files if has_picture(path)]
    files = files[arguments.first :: arguments.every]
with concurrent.futures.ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
    rows = list(pool.map(compare, enumerate(files)))

summary = {}
for row in rows:
    for tool in ("jobctl", "ffmpeg"):
        summary.setdefault(tool, {}).setdefault(row[tool][0], 0)
        summary[tool][row[tool][0]] += 1
    if row["jobctl"][0] != "ok" or row["ffmpeg"][0] != "ok":
        mark = "!!" if row["ffmpeg"][0] == "ok" and row["jobctl"][0] != "ok" else "  "
        print(
            "%s %-70s jobctl %-8s ffmpeg %-8s %s" % (mark, row["file"], row["jobctl"][0], row["ffmpeg"][0], row["jobctl"][1]),
            flush=True,
        )
only_ffmpeg = [r["file"] for r in rows if r["ffmpeg"][0] == "ok" and r["jobctl"][0] != "ok"]
only_jobctl = [r["file"] for r in rows if r["jobctl"][0] == "ok" and r["ffmpeg"][0] != "ok"]
print("files: %d" % len(rows))
for tool in ("jobctl", "ffmpeg"):
    print("%-7s %s" % (tool, ", ".join("%s %d" % item for item in sorted(summary[tool].items()))))
print("ffmpeg ok, jobctl not (marked !!): %d" % len(only_ffmpeg))
print("jobctl ok, ffmpeg not: %d" % len(only_jobctl))
if arguments.json:
    with open(arguments.json, "w") as handle:
        json.dump(rows, handle, indent=1)
