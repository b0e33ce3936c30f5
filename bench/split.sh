#!/usr/bin/env bash
# Split exports (issue 27): one 2-minute 1080p30 export (preset 1280x720)
#   a. on one single-CPU worker (taskset -c 0), not split;
#   b. on two single-CPU workers (taskset -c 0, taskset -c 1) sharing one SQLite queue and one
#      --scratch directory, submitted with --split 20s;
#   f. the same with --split 60s, the default segment length (two segments of a minute);
#   c. by the ffmpeg CLI on both CPUs (the preset's ffmpeg command, -threads 2);
#   d. by `jobctl export --split 20s --split-parallel 2` on both CPUs, in one process;
#   e. (control) on one single-CPU worker, submitted with --split 20s: the split's own cost with
#      no second encoder on the machine;
#   x. (control) x264 alone on CPU 0, then two at once on CPUs 0 and 1: how much a second CPU
#      adds to this machine's encode throughput.
# RUNS rounds (default 3), every case once per round in that order; medians. Wall times of a,
# b and e run from the submit to `jobctl wait` returning (workers already idle). x264 takes its
# thread count from the CPUs the process may use, so taskset sets the codec threads as well.
# From the job timestamps and worker logs of b and e it measures what a split adds to the
# encode: the plan, the audio child, the join, each segment's overhead.
#   swift build -c release --scratch-path .build-release && bash bench/split.sh [RUNS]
# Writes bench/out/split-results.json (then: python3 bench/split_model.py) and keeps each run's
# job database, stamped worker logs and job JSON in bench/out/split-runs/; outputs are deleted
# once probed. Needs 2 CPUs, taskset (util-linux), ffmpeg, ffprobe and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-3}
JOBCTL=${JOBCTL:-.build-release/release/jobctl}
PRESET=${PRESET:-1280x720}
SPLIT=20s
LONG_SPLIT=60s
OUT=bench/out
RAW=$OUT/split-runs
WALLS=$RAW/walls.tsv

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash bench/split.sh [RUNS]" >&2; exit 64; }
[ -x "$JOBCTL" ] || { echo "no $JOBCTL: swift build -c release --scratch-path .build-release" >&2; exit 1; }
(($(nproc) >= 2)) || { echo "bench/split.sh needs 2 CPUs (taskset -c 0 and -c 1)" >&2; exit 1; }
JOBCTL=$(realpath "$JOBCTL")
mkdir -p "$OUT"

# The input (bench/split-input.sh): 120 s of noisy 1080p30 and a sine, made once and cached.
. bench/split-input.sh
INPUT=$(split_input)

# The preset's ffmpeg equivalent as `jobctl presets` prints it, with -threads 2 (case c).
mapfile -d '' FFMPEG < <("$JOBCTL" presets --json | python3 -c '
import json, shlex, sys
preset, input_path, output = sys.argv[1:]
presets = {p["name"]: p for p in json.load(sys.stdin)}
if preset not in presets:
    sys.exit("bench/split.sh: jobctl has no preset %r (it has %s)" % (preset, " ".join(presets)))
words = [{"INPUT": input_path, "OUTPUT": output}.get(w, w) for w in shlex.split(presets[preset]["ffmpeg"])]
words[1:1] = ["-y", "-nostdin", "-v", "error"]
words[-1:-1] = ["-threads", "2"]
sys.stdout.write("\0".join(words) + "\0")
' "$PRESET" "$INPUT" "$(realpath "$OUT")/split-c.mp4")
((${#FFMPEG[@]} > 0)) || exit 1

# Worker logs are text with whole-second times: each line is stamped as it arrives (µs).
stamp() {
    local line
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# A case's start and end (epoch seconds), its output's video frame count and the x264 threads
# written in the output's SEI; then the output is deleted.
record() { # CASE RUN START END [OUTPUT]
    local frames="" threads=""
    if [ -n "${5:-}" ]; then
        frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets \
            -of default=nw=1:nk=1 "$5")
        threads=$(grep -a -o -m1 ' threads=[0-9]*' "$5" | head -1 | cut -d= -f2 || true)
        rm -f "$5"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$frames" "$threads" >>"$WALLS"
}

# Cases a, b, e: one worker per CPU given, started and idle before the submit. The job JSON is
# kept for the analysis.
queue_case() { # CASE RUN SPLIT CPU...
    local case=$1 run=$2 split=$3
    shift 3
    local dir=$RAW/r$run-$case
    rm -rf "$dir"
    mkdir -p "$dir/scratch"
    local db=$dir/jobs.sqlite output=$dir/out.mp4 pids=() cpu id start end deadline
    "$JOBCTL" migrate --db "$db" >/dev/null
    for cpu in "$@"; do
        taskset -c "$cpu" "$JOBCTL" worker --db "$db" --name "w$cpu" --scratch "$dir/scratch" \
            --concurrency 1 2> >(stamp >"$dir/worker-$cpu.log") &
        pids+=($!)
    done
    for cpu in "$@"; do
        deadline=$((SECONDS + 30))
        until grep -q "Worker started" "$dir/worker-$cpu.log" 2>/dev/null; do
            ((SECONDS < deadline)) || { echo "worker w$cpu did not start" >&2; exit 1; }
            sleep 0.05
        done
    done
    start=$EPOCHREALTIME
    id=$("$JOBCTL" submit "$INPUT" --preset "$PRESET" ${split:+--split "$split"} -o "$output" --db "$db")
    "$JOBCTL" wait "$id" --db "$db" >"$dir/wait.txt" || true
    end=$EPOCHREALTIME
    kill -TERM "${pids[@]}"
    wait "${pids[@]}" || true
    "$JOBCTL" show "$id" --db "$db" --json >"$dir/parent.json"
    python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["status"] != "completed")' \
        "$dir/parent.json" || { echo "case $case, round $run: the job did not complete ($dir)" >&2; exit 1; }
    python3 -c 'import json, sys; [print(c["id"]) for c in json.load(open(sys.argv[1])).get("childJobs", [])]' \
        "$dir/parent.json" | while read -r child; do
        "$JOBCTL" show "$child" --db "$db" --json >"$dir/child-$child.json"
    done
    record "$case" "$run" "$start" "$end" "$output"
}

command_case() { # CASE RUN OUTPUT COMMAND...
    local case=$1 run=$2 output=$3 start end
    shift 3
    start=$EPOCHREALTIME
    "$@" >/dev/null
    end=$EPOCHREALTIME
    record "$case" "$run" "$start" "$end" "$output"
}

# Case x: the first 4 s of the input scaled to 720p with x264 on one thread, alone on CPU 0
# (x1), then one copy on each CPU at once (x2).
x264_once() {
    taskset -c "$1" ffmpeg -nostdin -v error -t 4 -i "$INPUT" -vf scale=1280:720 -c:v libx264 -threads 1 -an -f null -
}
scaling_case() { # RUN
    local start end
    start=$EPOCHREALTIME
    x264_once 0
    end=$EPOCHREALTIME
    record x1 "$1" "$start" "$end"
    start=$EPOCHREALTIME
    x264_once 0 &
    x264_once 1
    wait
    end=$EPOCHREALTIME
    record x2 "$1" "$start" "$end"
}

rm -rf "$RAW"
mkdir -p "$RAW"
cat "$INPUT" >/dev/null # into the page cache before the first timed run
echo "input $INPUT, preset $PRESET, $RUNS round(s) of a b f c d e x" >&2
for run in $(seq 1 "$RUNS"); do
    echo "round $run/$RUNS: a (1 worker)" >&2
    queue_case a "$run" "" 0
    echo "round $run/$RUNS: b (2 workers, --split $SPLIT)" >&2
    queue_case b "$run" "$SPLIT" 0 1
    echo "round $run/$RUNS: f (2 workers, --split $LONG_SPLIT)" >&2
    queue_case f "$run" "$LONG_SPLIT" 0 1
    echo "round $run/$RUNS: c (ffmpeg CLI, -threads 2)" >&2
    command_case c "$run" "$OUT/split-c.mp4" taskset -c 0,1 "${FFMPEG[@]}"
    echo "round $run/$RUNS: d (jobctl export --split $SPLIT --split-parallel 2)" >&2
    command_case d "$run" "$OUT/split-d.mp4" taskset -c 0,1 "$JOBCTL" export "$INPUT" --preset "$PRESET" \
        --split "$SPLIT" --split-parallel 2 -o "$OUT/split-d.mp4"
    echo "round $run/$RUNS: e (1 worker, --split $SPLIT)" >&2
    queue_case e "$run" "$SPLIT" 0
    echo "round $run/$RUNS: x (x264 on one CPU, then on two)" >&2
    scaling_case "$run"
done

# The analysis: medians, ratios, and the parts of b and e from their job JSON and logs.
python3 - "$RAW" "$INPUT" "$PRESET" "$SPLIT" "$RUNS" "$OUT/split-results.json" "${FFMPEG[*]}" "$LONG_SPLIT" <<'PY'
import glob, json, os, re, statistics, subprocess, sys
from datetime import datetime, timezone

raw, input_path, preset, split, runs, results_path, ffmpeg_line, long_split = sys.argv[1:]
runs = int(runs)
median = statistics.median
CASES = "abcdefx"


def ts(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def log_events(path):
    """(stamp, message, job id) of each "Job …" line of a stamped worker log."""
    events = []
    for line in open(path):
        m = re.match(r"(\d+\.\d+) .*\[Worker\] (Job \w+(?: \w+)?)$", line.rstrip())
        if m:
            job = re.search(r"job\.id=(\S+)", line)
            events.append((float(m.group(1)), m.group(2), job.group(1) if job else None))
    return events


walls, frames, threads = {}, {}, {}
for line in open(os.path.join(raw, "walls.tsv")):
    case, run, start, end, count, thread_count = line.rstrip("\n").split("\t")
    walls.setdefault(case, {})[int(run)] = float(end) - float(start)
    frames.setdefault(case, {})[int(run)] = int(count) if count else None
    threads.setdefault(case, {})[int(run)] = int(thread_count) if thread_count else None
med = {case: median(walls[case].values()) for case in walls}
probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_frames,avg_frame_rate", "-of", "json", input_path],
                       capture_output=True, text=True, check=True).stdout
stream = json.loads(probe)["streams"][0]
expected = int(stream["nb_frames"])
rate = eval(stream["avg_frame_rate"])  # "30/1"
media_seconds = expected / rate
x_scaling = 2 * med["x1"] / med["x2"]


def graph(case, run):
    """The parts of a split run (b or e) from its job JSON and stamped worker logs (seconds)."""
    d = os.path.join(raw, f"r{run}-{case}")
    parent = json.load(open(os.path.join(d, "parent.json")))
    children = [json.load(open(os.path.join(d, f"child-{c['id']}.json"))) for c in parent["childJobs"]]
    events = sorted(e for p in glob.glob(os.path.join(d, "worker-*.log")) for e in log_events(p))
    claims = [t for t, msg, job in events if job == parent["id"] and msg == "Job claimed"]
    fanned = [t for t, msg, job in events if job == parent["id"] and msg == "Job fanned out"]
    audio = [c for c in children if c["presetSettings"]["segment"]["part"] == "audio"]
    segments = sorted((c for c in children if c["presetSettings"]["segment"]["part"] == "video"),
                      key=lambda c: c["presetSettings"]["segment"]["index"])
    fan_out = min(ts(c["runAt"]) for c in children)
    last_child = max(ts(c["finishedAt"]) for c in children)
    # A worker's idle time before each child: since its previous child ended, or since the
    # fan-out for its first one (the claim's poll included).
    idle = {}
    for worker in {c["worker"] for c in children}:
        previous = fan_out
        for c in sorted((c for c in children if c["worker"] == worker), key=lambda c: ts(c["startedAt"])):
            idle[c["id"]] = ts(c["startedAt"]) - previous
            previous = ts(c["finishedAt"])
    return {
        "run": run,
        "wall": walls[case][run],
        "pickup": claims[0] - ts(parent["createdAt"]),
        "plan": fanned[0] - claims[0],
        "planFromJobTimes": fan_out - claims[0],
        "audio": sum(ts(c["finishedAt"]) - ts(c["startedAt"]) for c in audio),
        "joinPickup": ts(parent["startedAt"]) - last_child,
        "join": ts(parent["finishedAt"]) - ts(parent["startedAt"]),
        "afterJoin": walls[case][run] - (ts(parent["finishedAt"]) - ts(parent["createdAt"])),
        "segments": [{
            "index": s["presetSettings"]["segment"]["index"],
            "worker": s["worker"],
            "frames": s["presetSettings"]["segment"]["frames"],
            "encodedFrames": next(t["frames"] for t in s["result"]["tracks"] if t["mediaType"] == "video"),
            "wall": ts(s["finishedAt"]) - ts(s["startedAt"]),
            "idleBefore": idle[s["id"]],
        } for s in segments],
    }


parts = {case: [graph(case, run) for run in range(1, runs + 1)] for case in "bef"}

# The steady single-CPU video speed: case a's export less the audio it also encodes (case e's
# audio child: same CPU, nothing else running). A segment's fixed overhead is its wall less its
# encoded frames (pre- and post-roll included) at that speed; its roll is the frames encoded
# beyond its own. Case b's segments share the machine with the other worker's encoder, so at
# this speed their "overhead" also holds the slowdown that sharing causes (case x).
steady_fps = expected / (med["a"] - median(p["audio"] for p in parts["e"]))
summary = {}
for case in "bef":
    for p in parts[case]:
        for s in p["segments"]:
            s["fixedOverhead"] = s["wall"] - s["encodedFrames"] / steady_fps
            s["rollSeconds"] = (s["encodedFrames"] - s["frames"]) / steady_fps
        p["segmentCount"] = len(p["segments"])
        for key, total in (("fixedOverhead", "fixedOverheadTotal"), ("idleBefore", "idleTotal"),
                           ("rollSeconds", "rollTotal")):
            p[total] = sum(s[key] for s in p["segments"])
        p["strictSerial"] = p["pickup"] + p["plan"] + p["joinPickup"] + p["join"]
        p["serial"] = p["strictSerial"] + p["audio"]
        p["addedWork"] = p["strictSerial"] + p["fixedOverheadTotal"] + p["idleTotal"] + p["rollTotal"]
    segs = [s for p in parts[case] for s in p["segments"]]
    summary[case] = {key: median(p[key] for p in parts[case]) for key in (
        "pickup", "plan", "planFromJobTimes", "audio", "joinPickup", "join", "afterJoin", "strictSerial", "serial",
        "segmentCount", "fixedOverheadTotal", "idleTotal", "rollTotal", "addedWork")}
    summary[case]["perSegment"] = {
        "fixedOverhead": median(s["fixedOverhead"] for s in segs),
        "idleBefore": median(s["idleBefore"] for s in segs),
        "roll": median(s["rollSeconds"] for s in segs),
    }
    summary[case]["serialShareOfA"] = summary[case]["serial"] / med["a"]
    summary[case]["strictSerialShareOfA"] = summary[case]["strictSerial"] / med["a"]
    summary[case]["addedWorkShareOfA"] = summary[case]["addedWork"] / med["a"]

e = summary["e"]
minutes = media_seconds / 60
results = {
    "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "machine": {
        "nproc": os.cpu_count(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
        "ffmpeg": subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.splitlines()[0],
    },
    "input": {"path": os.path.relpath(input_path), "frames": expected, "seconds": media_seconds},
    "preset": preset, "split": split, "runs": runs,
    "ffmpegCommand": ffmpeg_line,
    "walls": {case: [walls[case][r] for r in sorted(walls[case])] for case in walls},
    "outputFrames": {case: [frames[case][r] for r in sorted(frames[case])] for case in "abcdef"},
    "x264Threads": {case: sorted({t for t in threads[case].values() if t is not None}) for case in "abcdef"},
    "medians": med,
    "ratios": {"a/b": med["a"] / med["b"], "c/b": med["c"] / med["b"], "c/d": med["c"] / med["d"],
               "a/f": med["a"] / med["f"], "c/f": med["c"] / med["f"],
               "a/c": med["a"] / med["c"], "e/a": med["e"] / med["a"], "x264TwoCpuScaling": x_scaling},
    "steadyFps": steady_fps,
    "parts": summary,
    "runsOfSplitCases": parts,
    "model": {  # what bench/split_model.py reads: contention-free figures (cases a and e)
        "speed": media_seconds / med["a"],              # media s per s, one CPU, the whole export
        "videoSpeed": steady_fps / rate,                 # media s per s, one CPU, video only
        # Everything a segment adds to its own frames: its fixed overhead, the frames given to
        # the encoder beyond its own (a CRF preset's post-roll: decoded, not encoded) and idling.
        "segmentOverhead": e["perSegment"]["fixedOverhead"] + e["perSegment"]["roll"] + e["perSegment"]["idleBefore"],
        "planPerMinute": (e["pickup"] + e["plan"]) / minutes,
        "audioPerMinute": e["audio"] / minutes,
        "joinPerMinute": (e["joinPickup"] + e["join"]) / minutes,
    },
}
json.dump(results, open(results_path, "w"), indent=2)

names = {"a": "a  1 worker (CPU 0)", "b": f"b  2 workers (CPU 0, 1), --split {split}",
         "f": f"f  2 workers (CPU 0, 1), --split {long_split}",
         "c": "c  ffmpeg CLI -threads 2 (CPUs 0,1)", "d": f"d  export --split {split} --split-parallel 2 (0,1)",
         "e": f"e  1 worker (CPU 0), --split {split}", "x1": "x1 x264 -threads 1, 4 s, alone (CPU 0)",
         "x2": "x2 the same, one on each CPU at once"}
print(f"\n{expected} frames ({media_seconds:g} s), preset {preset}, {runs} round(s), medians")
print(f"{'case':<50} {'median (s)':>10}   {'runs (s)':<24} frames out, x264 threads")
for case in ("a", "b", "f", "c", "d", "e", "x1", "x2"):
    runs_text = ", ".join(f"{walls[case][r]:.1f}" for r in sorted(walls[case]))
    extra = ""
    if case in frames and any(frames[case].values()):
        extra = f"{'/'.join(map(str, sorted(set(frames[case].values()))))}, {results['x264Threads'][case]}"
    print(f"{names[case]:<50} {med[case]:>10.2f}   {runs_text:<24} {extra}")
r = results["ratios"]
print(f"\na/b {r['a/b']:.2f}x (goal >= 1.8)   c/b {r['c/b']:.2f} (goal >= 1.0, b not slower)   "
      f"c/d {r['c/d']:.2f}   a/c {r['a/c']:.2f}   e/a {r['e/a']:.2f}")
print(f"a/f {r['a/f']:.2f}x   c/f {r['c/f']:.2f}   (f: --split {long_split})")
print(f"x264 throughput on 2 CPUs against 1 (case x): {x_scaling:.2f}x (2.0 would be linear)")
for case in "bef":
    s = summary[case]
    print(f"\ncase {case}'s parts (medians, s): pickup {s['pickup']:.2f}, plan {s['plan']:.2f}, audio {s['audio']:.2f}, "
          f"join pickup {s['joinPickup']:.2f}, join {s['join']:.2f}, after the join {s['afterJoin']:.2f}")
    print(f"  serial (pickup + plan + audio + join pickup + join) {s['serial']:.2f} s = "
          f"{100 * s['serialShareOfA']:.1f} % of a's wall (goal <= 10 %); without the audio {100 * s['strictSerialShareOfA']:.1f} %")
    ps = s["perSegment"]
    print(f"  per segment: fixed overhead {ps['fixedOverhead']:.2f} s, idle before {ps['idleBefore']:.2f} s, "
          f"frames beyond its own at the steady speed (pre-roll, post-roll) {ps['roll']:.2f} s; work added in all: {s['addedWork']:.1f} s "
          f"({100 * s['addedWorkShareOfA']:.1f} % of a)")
print(f"  (steady video speed on one CPU: {steady_fps:.1f} fps)")
bad = [f"{c}: {sorted(set(frames[c].values()), key=str)}" for c in "abcdef" if set(frames[c].values()) != {expected}]
if bad:
    print(f"\nWARNING: output frame counts differ from the input's {expected}: {'; '.join(bad)}")
print(f"\nwrote {results_path}")
PY
