#!/usr/bin/env python3
"""Benchmark `jobctl thumbnails`, `jobctl storyboard` and `jobctl waveform` against the ffmpeg CLI.

What is measured, for each case, in the same run:
  * wall time (time.perf_counter around the child processes) and peak RSS (`ru_maxrss` from
    os.wait4, KiB on Linux) of jobctl's one command and of the ffmpeg command(s) doing the same
    work; when the ffmpeg side is several processes run one after the other (one per image),
    its wall time is their total and its peak RSS the largest of them;
  * each side runs N times, alternating jobctl/ffmpeg; medians and the ratios jobctl/ffmpeg are
    reported (a ratio <= 1.0: jobctl at least as fast / as lean);
  * every run is checked: exit status 0 and the expected files (ten images, one sprite of the
    right size, a peaks file of the right length); on the first run of each case the two
    sides' pictures are compared (PSNR, ffmpeg's psnr filter) so that both took the same frames;
  * memory flatness: jobctl waveform's peak RSS on a 1-hour and a 1-minute audio file of the
    same shape (median of N runs each); the ratio should be about 1.0.

Cases (the full run; --quick shrinks the inputs):
  thumbnails exact     jobctl thumbnails IN --at T1,...,T10 --exact -o DIR
                       vs ten `ffmpeg -ss T -i IN -frames:v 1 -q:v 2 out-NN.jpg`, one after the other
  thumbnails keyframe  jobctl thumbnails IN --at T1,...,T10 -o DIR (default tolerance: the keyframe at or before T)
                       vs ten `ffmpeg -skip_frame nokey -noaccurate_seek -ss T -i IN -copyts -frames:v 1 -q:v 2 out-NN.jpg`
  storyboard 100 tiles jobctl storyboard IN --tiles 100 -o DIR
                       vs `ffmpeg -skip_frame nokey -i IN -vf tpad=...,fps=100/D,scale=256:-2,tile=10x10 -frames:v 1 ...`
  waveform 1 h         jobctl waveform IN -o peaks.json vs `ffmpeg -i IN -f null -` (decoding alone: the floor),
                       and `audiowaveform -i IN -o peaks.json -b 16` if that program is installed

Inputs are generated with the ffmpeg CLI and cached in bench/out/ (git-ignored): a 10-minute
1920x1080 25 fps H.264 (x264 veryfast, 10 s GOPs) + AAC stereo clip, and 1-hour and 1-minute
AAC stereo 48 kHz .m4a files (two sines and pink noise).

Run (after `swift build -c release --scratch-path .build-release`):
    python3 bench/images.py                # all cases, 5 runs each, memory check
    python3 bench/images.py --quick        # smoke test: 20 s 320x240 clip, 20 s / 10 s audio, 1 run
    python3 bench/images.py --runs 3 --write-doc   # also update the section in docs/benchmarks.md
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# bench.py's helpers (the same directory): median, command display, machine info, the failure
# type, the jobctl binary check, writing a marked section of docs/benchmarks.md.
from bench import ToolFailed, display, machine_info, median, require_jobctl, write_doc

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
WORK = OUT / "images"
DEFAULT_JOBCTL = ROOT / ".build-release" / "release" / "jobctl"
DEFAULT_DOC = ROOT / "docs" / "benchmarks.md"
START_MARK, END_MARK = "<!-- bench:images:start -->", "<!-- bench:images:end -->"
HEADING = "## Images and waveforms"
INSERT_BEFORE = "## Queue"  # where the section goes the first time (the export section ends before it)
FPS = 25
GOP = 250  # frames: a keyframe every 10 s
SAMPLE_RATE = 48000
SAMPLES_PER_PIXEL = 256  # jobctl waveform's default (audiowaveform's)
TILES, COLUMNS, TILE_WIDTH = 100, 10, 256
# Pictures of the same frame, JPEG-encoded by each side, are well above this; neighbouring
# frames of testsrc2 (its counter and moving parts change) fall below it.
SAME_FRAME_PSNR = 35.0


class CheckFailed(Exception):
    pass


@dataclass
class Run:
    wall: float  # seconds, all the side's processes
    rss_kib: int  # the largest peak RSS among them
    stdout: bytes = b""  # of the last process


@dataclass
class Side:
    commands: list[list[str]]  # run one after the other
    prepare: Callable[[], None]  # before each run (not timed): a clean output directory
    check: Callable[[Run], str | None]  # after each run (not timed): raises CheckFailed; a note or None


@dataclass
class Case:
    name: str
    input_path: Path
    sides: dict[str, Side]  # "jobctl", "ffmpeg", optionally "audiowaveform"
    compare: Callable[[], str | None] | None = None  # after the first run of both: a note
    describe: str = ""  # what each side does, for the report
    runs: dict[str, list[Run]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Running and measuring


def run_measured(cmd: list[str]) -> tuple[float, int, bytes]:
    """Runs cmd; returns (wall seconds, peak RSS KiB, stdout). Raises ToolFailed with stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise ToolFailed(f"exit {proc.returncode}: {shlex.join(cmd)}\n{tail}")
        out.seek(0)
        return wall, usage.ru_maxrss, out.read()


def run_side(side: Side) -> Run:
    side.prepare()
    wall, rss, stdout = 0.0, 0, b""
    for cmd in side.commands:
        w, r, stdout = run_measured(cmd)
        wall += w
        rss = max(rss, r)
    return Run(wall, rss, stdout)


def ffmpeg(*args: str) -> list[str]:
    return ["ffmpeg", "-y", "-nostdin", "-v", "error", *args]


def fresh_dir(path: Path) -> Callable[[], None]:
    def prepare() -> None:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    return prepare


def probe(path: Path, entries: str, stream: str | None = None) -> dict:
    cmd = ["ffprobe", "-v", "error", "-of", "json", "-show_entries", entries]
    if stream:
        cmd += ["-select_streams", stream]
    out = subprocess.run(cmd + [str(path)], capture_output=True, text=True)
    return json.loads(out.stdout or "{}")


def picture_size(path: Path) -> tuple[int, int] | None:
    streams = probe(path, "stream=width,height", "v:0").get("streams") or []
    return (streams[0]["width"], streams[0]["height"]) if streams else None


def psnr(a: Path, b: Path) -> float:
    """PSNR (dB, average of Y, U, V) of two pictures of the same size; inf when identical."""
    out = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-i", str(a), "-i", str(b),
                          "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"], capture_output=True, text=True).stderr
    match = re.search(r"average:(\S+)", out)
    if not match:
        raise CheckFailed(f"no PSNR for {a} vs {b}:\n{out[-1000:]}")
    return float(match.group(1))


# ---------------------------------------------------------------------------------------------
# Inputs (cached in bench/out/)


def cached(path: Path, cmd_for: Callable[[Path], list[str]]) -> Path:
    if path.exists():
        return path
    print(f"generating {path.relative_to(ROOT)} ...", file=sys.stderr)
    partial = path.with_name(path.stem + ".partial" + path.suffix)
    start = time.perf_counter()
    subprocess.run(cmd_for(partial), check=True)
    partial.rename(path)
    print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return path


def video_input(width: int, height: int, seconds: int) -> Path:
    """testsrc2 + a 440 Hz sine (stereo AAC), H.264 x264 veryfast (B-frames), a keyframe every 10 s."""
    return cached(OUT / f"images-{width}x{height}-{FPS}fps-{seconds}s-gop{GOP}.mp4", lambda out: ffmpeg(
        "-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate={FPS}",
        "-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={SAMPLE_RATE}", "-t", str(seconds),
        "-c:v", "libx264", "-preset", "veryfast", "-g", str(GOP), "-keyint_min", str(GOP), "-sc_threshold", "0",
        "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-shortest", str(out)))


def audio_input(seconds: int) -> Path:
    """Stereo AAC at 48 kHz: 440 Hz left and 330 Hz right, each with its own pink noise."""
    def channel(frequency: int, seed: int, label: str) -> str:
        return (f"sine=frequency={frequency}:sample_rate={SAMPLE_RATE}:duration={seconds}[s{label}];"
                f"anoisesrc=color=pink:amplitude=0.2:sample_rate={SAMPLE_RATE}:duration={seconds}:seed={seed}[n{label}];"
                f"[s{label}][n{label}]amix=inputs=2:normalize=0[{label}];")
    graph = channel(440, 1, "l") + channel(330, 2, "r") + "[l][r]amerge=inputs=2[out]"
    return cached(OUT / f"images-audio-{seconds}s.m4a", lambda out: ffmpeg(
        "-filter_complex", graph, "-map", "[out]", "-c:a", "aac", "-b:a", "128k", "-ar", str(SAMPLE_RATE),
        "-ac", "2", str(out)))


def duration_of(path: Path) -> float:
    return float(probe(path, "format=duration")["format"]["duration"])


# ---------------------------------------------------------------------------------------------
# Cases


def thumbnail_times(duration: float) -> list[float]:
    """Ten times spread over the clip, each on a frame's timestamp (see the doc's notes) and none
    on a keyframe. With a GOP per tenth of the clip or more (the full run), each time is in the
    middle of its GOP, half a GOP after the keyframe: the average decode distance of a random time."""
    gop = GOP / FPS
    step = duration / 10
    if step >= gop:
        return [round(((step * k + step / 2) // gop) * gop + gop / 2, 3) for k in range(10)]
    times = [round((step * k + step / 2) * FPS) / FPS for k in range(10)]
    return [round(t + (1 / FPS if t % gop == 0 else 0), 3) for t in times]


def thumbnails_case(jobctl: Path, clip: Path, exact: bool) -> Case:
    duration = duration_of(clip)
    times = thumbnail_times(duration)
    mode = "exact" if exact else "keyframe"
    jdir, fdir = WORK / f"thumbs-{mode}-jobctl", WORK / f"thumbs-{mode}-ffmpeg"
    at = ",".join(f"{t:g}" for t in times)
    jcmd = [str(jobctl), "thumbnails", str(clip), "--at", at] + (["--exact"] if exact else []) + \
           ["-o", str(jdir), "--json"]
    seek = [] if exact else ["-skip_frame", "nokey", "-noaccurate_seek"]
    keep = [] if exact else ["-copyts"]  # else a keyframe before T has a negative time and is dropped
    fcmds = [ffmpeg(*seek, "-ss", f"{t:g}", "-i", str(clip), *keep, "-frames:v", "1", "-q:v", "2",
                    str(fdir / f"out-{n + 1:02d}.jpg")) for n, t in enumerate(times)]
    gop = GOP / FPS
    # exact: the frame displayed at T (T is a frame's timestamp); keyframe: the keyframe at or before T
    expected = [t if exact else (t // gop) * gop for t in times]
    size = picture_size(clip)

    def check_jobctl(run: Run) -> str:
        images = json.loads(run.stdout)["images"]
        names = sorted(p.name for p in jdir.glob("thumb-*.jpg"))
        if names != [f"thumb-{n:03d}.jpg" for n in range(1, 11)] or len(images) != 10:
            raise CheckFailed(f"jobctl thumbnails wrote {names}, reported {len(images)} images")
        actual = [image["actualTime"] for image in images]
        if any(abs(a - e) > 0.0005 for a, e in zip(actual, expected)):
            raise CheckFailed(f"jobctl thumbnails ({mode}): actual times {actual}, expected {expected}")
        if any((image["width"], image["height"]) != size for image in images):
            raise CheckFailed(f"jobctl thumbnails: sizes {[(i['width'], i['height']) for i in images]}, input {size}")
        return f"actual times {', '.join(f'{a:g}' for a in actual)} s"

    def check_ffmpeg(run: Run) -> None:
        for n in range(1, 11):
            path = fdir / f"out-{n:02d}.jpg"
            if not path.exists() or path.stat().st_size == 0:
                raise CheckFailed(f"ffmpeg wrote no {path}")

    def compare() -> str:
        values = [psnr(jdir / f"thumb-{n:03d}.jpg", fdir / f"out-{n:02d}.jpg") for n in range(1, 11)]
        if min(values) < SAME_FRAME_PSNR:
            raise CheckFailed(f"thumbnails {mode}: jobctl's and ffmpeg's images differ (PSNR {values} dB): "
                              "not the same frames")
        # and a neighbouring frame is told apart: the check can fail
        neighbour = WORK / f"neighbour-{mode}.jpg"
        subprocess.run(ffmpeg("-ss", f"{times[0] + 1 / FPS:g}", "-i", str(clip), "-frames:v", "1", "-q:v", "2",
                              str(neighbour)), check=True)
        other = psnr(jdir / "thumb-001.jpg", neighbour)
        return (f"same frames on both sides: PSNR jobctl vs ffmpeg min {min(values):.1f} dB "
                f"(the next frame instead: {other:.1f} dB)")

    kind = ("exact: the frame displayed at T" if exact
            else "default tolerance: the keyframe at or before T")
    return Case(
        f"thumbnails {mode}", clip,
        {"jobctl": Side([jcmd], fresh_dir(jdir), check_jobctl),
         "ffmpeg": Side(fcmds, fresh_dir(fdir), check_ffmpeg)},
        compare, f"10 JPEGs at full size ({size[0]}x{size[1]}), {kind}; T = {at} s")


def storyboard_case(jobctl: Path, clip: Path) -> Case:
    duration = duration_of(clip)
    jdir, fdir = WORK / "storyboard-jobctl", WORK / "storyboard-ffmpeg"
    width, height = picture_size(clip)
    tile = (TILE_WIDTH, 2 * round(TILE_WIDTH * height / width / 2))
    rows = TILES // COLUMNS
    sheet = (tile[0] * COLUMNS, tile[1] * rows)
    seconds = round(duration)
    jcmd = [str(jobctl), "storyboard", str(clip), "--tiles", str(TILES), "-o", str(jdir)]
    # tpad: the fps filter stops at the last keyframe's time, which would leave the tiles after it
    # black; the last keyframe is cloned for one GOP so that every tile is filled, as jobctl's are.
    fcmd = ffmpeg("-skip_frame", "nokey", "-i", str(clip), "-an",
                  "-vf", f"tpad=stop_mode=clone:stop_duration={GOP / FPS:g},fps={TILES}/{seconds},"
                         f"scale={TILE_WIDTH}:-2,tile={COLUMNS}x{rows}",
                  "-frames:v", "1", "-fps_mode", "vfr", "-q:v", "2", str(fdir / "sprite.jpg"))

    def check_jobctl(run: Run) -> None:
        for name in ("storyboard.jpg", "storyboard.vtt", "storyboard.json"):
            if not (jdir / name).exists():
                raise CheckFailed(f"jobctl storyboard wrote no {name}")
        got = picture_size(jdir / "storyboard.jpg")
        tiles = json.loads((jdir / "storyboard.json").read_text())["tiles"]
        if got != sheet or len(tiles) != TILES:
            raise CheckFailed(f"jobctl storyboard: sprite {got}, {len(tiles)} tiles; expected {sheet}, {TILES}")

    def check_ffmpeg(run: Run) -> None:
        got = picture_size(fdir / "sprite.jpg")
        if got != sheet:
            raise CheckFailed(f"ffmpeg storyboard: sprite {got}, expected {sheet}")

    def compare() -> str:
        value = psnr(jdir / "storyboard.jpg", fdir / "sprite.jpg")
        # Both scale each keyframe to a tile with their own swscale settings: about 40 dB when the
        # tiles show the same keyframes; a tile from another keyframe takes the sprite far below.
        warning = " (**WARNING: below 30 dB, the tiles are not the same keyframes**)" if value < 30 else ""
        return f"sprites {sheet[0]}x{sheet[1]} on both sides; PSNR jobctl vs ffmpeg {value:.1f} dB{warning}"

    return Case(
        f"storyboard {TILES} tiles", clip,
        {"jobctl": Side([jcmd], fresh_dir(jdir), check_jobctl),
         "ffmpeg": Side([fcmd], fresh_dir(fdir), check_ffmpeg)},
        compare, f"one {COLUMNS}x{rows} sprite of {tile[0]}x{tile[1]} tiles ({sheet[0]}x{sheet[1]} JPEG)")


def expected_points(path: Path) -> int:
    """Points of a peaks file: ceil(samples / samples per pixel); samples from ffprobe's duration."""
    samples = duration_of(path) * SAMPLE_RATE
    return -(-round(samples) // SAMPLES_PER_PIXEL)


def check_peaks(path: Path, audio: Path) -> str:
    """Checks a peaks JSON file's header and counts its values, without loading it: this process
    must stay small (see harness_peak_rss)."""
    try:
        with path.open("rb") as file:
            head = file.read(512)
            match = re.match(rb'\{"version":2,"channels":(\d+),"sample_rate":(\d+),"samples_per_pixel":(\d+),'
                             rb'"bits":16,"length":(\d+),"data":\[', head)
            if not match:
                raise CheckFailed(f"{path}: not an audiowaveform JSON v2 16-bit file as jobctl writes it: {head[:120]!r}")
            channels, rate, spp, length = (int(g) for g in match.groups())
            file.seek(match.end())
            commas, tail = 0, b""
            while chunk := file.read(1 << 20):
                commas += chunk.count(b",")
                tail = (tail + chunk)[-8:]
    except OSError as error:
        raise CheckFailed(f"no peaks file {path}: {error}")
    values = commas + 1 if length else 0
    expected = expected_points(audio)
    if rate != SAMPLE_RATE or spp != SAMPLES_PER_PIXEL or abs(length - expected) > 2 \
            or values != 2 * length * channels or not tail.rstrip().endswith(b"]}"):
        raise CheckFailed(f"{path}: rate {rate}, spp {spp}, length {length} (expected about {expected}), "
                          f"{values} values, ends {tail!r}")
    size = path.stat().st_size
    return f"{length} points, {size / 1e6:.1f} MB" if size >= 1e6 else f"{length} points, {size / 1e3:.0f} kB"


def harness_peak_rss() -> float:
    """This process's peak RSS (MiB). A child's ru_maxrss counts its parent's high-water mark
    (Python starts children with vfork, and at exec Linux folds the old address space's peak
    into the child's), so every figure measured here is at least this: it must stay well below them."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def waveform_case(jobctl: Path, audio: Path, label: str) -> Case:
    directory = WORK / f"waveform-{label.replace(' ', '')}"
    jout = directory / "peaks.json"
    sides = {
        "jobctl": Side([[str(jobctl), "waveform", str(audio), "-o", str(jout)]], fresh_dir(directory),
                       lambda run: check_peaks(jout, audio)),
        "ffmpeg": Side([ffmpeg("-i", str(audio), "-f", "null", "-")], lambda: None, lambda run: None),
    }
    program = shutil.which("audiowaveform")
    if program:
        aout = directory / "audiowaveform.json"
        sides["audiowaveform"] = Side([[program, "-q", "-i", str(audio), "-o", str(aout), "-b", "16"]],
                                      lambda: aout.unlink(missing_ok=True), lambda run: check_peaks(aout, audio))
    return Case(f"waveform {label}", audio, sides, None,
                "peaks (min/max per 256 samples, channels averaged, 16 bits) as audiowaveform JSON; "
                "ffmpeg only decodes (to s16, the null muxer): the floor")


def run_case(case: Case, runs: int) -> Case:
    case.runs = {tool: [] for tool in case.sides}
    for n in range(runs):
        for tool, side in list(case.sides.items()):
            print(f"  {case.name}: {tool} run {n + 1}/{runs}", file=sys.stderr)
            try:
                run = run_side(side)
            except ToolFailed as failure:
                if tool != "audiowaveform":
                    raise
                # An optional extra (it reads MP3, WAV, FLAC, Ogg, Opus; not every build reads AAC).
                case.notes.append(f"audiowaveform failed, left out: {str(failure).splitlines()[0]}")
                del case.sides[tool], case.runs[tool]
                continue
            try:
                note = side.check(run)
            except (CheckFailed, KeyError, ValueError) as error:
                raise CheckFailed(f"{case.name}, {tool}, run {n + 1}: {error}")
            if n == 0 and note:
                case.notes.append(f"{tool}: {note}")
            case.runs[tool].append(run)
            print(f"    {run.wall:.2f} s, {run.rss_kib / 1024:.1f} MiB", file=sys.stderr)
        if n == 0 and case.compare:
            case.notes.append(case.compare())
    return case


# ---------------------------------------------------------------------------------------------
# Report


def med(case: Case, tool: str) -> tuple[float, float]:
    runs = case.runs[tool]
    return median([r.wall for r in runs]), median([r.rss_kib for r in runs]) / 1024


def results_table(cases: list[Case]) -> str:
    lines = ["| case | jobctl wall (s) | ffmpeg wall (s) | wall ratio | jobctl peak RSS (MiB) "
             "| ffmpeg peak RSS (MiB) | RSS ratio | jobctl runs (s) | ffmpeg runs (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for case in cases:
        (jw, jr), (fw, fr) = med(case, "jobctl"), med(case, "ffmpeg")
        all_runs = {tool: ", ".join(f"{r.wall:.2f}" for r in case.runs[tool]) for tool in ("jobctl", "ffmpeg")}
        lines.append(f"| {case.name} | {jw:.2f} | {fw:.2f} | **{jw / fw:.2f}** | {jr:.1f} | {fr:.1f} "
                     f"| **{jr / fr:.2f}** | {all_runs['jobctl']} | {all_runs['ffmpeg']} |")
        if "audiowaveform" in case.runs:
            aw, ar = med(case, "audiowaveform")
            lines.append(f"| {case.name}: audiowaveform instead of ffmpeg | {jw:.2f} | {aw:.2f} | **{jw / aw:.2f}** "
                         f"| {jr:.1f} | {ar:.1f} | **{jr / ar:.2f}** | | |")
    return "\n".join(lines)


def memory_table(long: Case, short: Case, long_label: str, short_label: str) -> str:
    (jlw, jlr), (jsw, jsr) = med(long, "jobctl"), med(short, "jobctl")
    (flw, flr), (fsw, fsr) = med(long, "ffmpeg"), med(short, "ffmpeg")
    runs = len(long.runs["jobctl"])
    lines = [f"| input (AAC stereo 48 kHz) | jobctl waveform peak RSS (MiB), median of {runs} | jobctl wall (s) "
             "| ffmpeg -f null peak RSS (MiB) | peaks.json |",
             "|---|---:|---:|---:|---|",
             f"| {short_label} | {jsr:.1f} | {jsw:.2f} | {fsr:.1f} | {short_note(short)} |",
             f"| {long_label} | {jlr:.1f} | {jlw:.2f} | {flr:.1f} | {short_note(long)} |"]
    return ("\n".join(lines) + f"\n\nPeak RSS ratio {long_label} / {short_label}: jobctl **{jlr / jsr:.2f}** "
            f"(+{jlr - jsr:.1f} MiB), ffmpeg {flr / fsr:.2f} (expected about 1.0: only the points are kept).")


def short_note(case: Case) -> str:
    return next((n.removeprefix("jobctl: ") for n in case.notes if n.startswith("jobctl: ")), "")


NOTES = """\
What differs between the two sides:

- **Thumbnails, ffmpeg side:** ten processes, one per image, because that is how the ffmpeg CLI
  is used for this; each one opens and probes the file again (`avformat_find_stream_info`
  decodes a frame or so), and ten process start-ups are in its time. jobctl opens the file once,
  sorts the times and makes one forward pass (one seek per image here: each time is in another
  GOP). Both write full-size JPEGs at mjpeg quality 2.
- **Exact thumbnails:** `ffmpeg -ss T` before `-i` (accurate seek, the default) seeks to the
  keyframe before T and decodes up to T, as `jobctl --exact` does; both decode about half a GOP
  (125 frames at 1080p) per image. ffmpeg gives the first frame at or after T, jobctl the frame
  displayed at T: the same frame when T is a frame's timestamp, which is why the times are
  chosen so (the check above compares the pictures).
- **Keyframe thumbnails:** jobctl's default tolerance takes the keyframe at or before T. The
  ffmpeg equivalent is `-noaccurate_seek` (output the first frame after the seek, the keyframe
  at or before T) with `-skip_frame nokey` (decode nothing else) and `-copyts`. Without
  `-noaccurate_seek`, ffmpeg skips ahead to the first keyframe *after* T; without `-copyts`,
  the keyframe before T gets a negative time, the output's frame-rate logic drops it, and
  ffmpeg writes the next keyframe, or nothing at all (with exit status 0) when there is none.
- **Storyboard:** jobctl takes for each tile the last keyframe at or before the middle of its
  span, seeking from keyframe to keyframe (a keyframe every 10 s here, so 100 tiles of 6 s
  repeat some keyframes); it also writes the `.vtt` and `.json` beside the sprite. The ffmpeg
  command reads every packet of the file and decodes every keyframe (`-skip_frame nokey`), and
  the `fps` filter picks for each 6 s tick the keyframe whose time rounds to it or before, which
  is the same rule (the PSNR of the two sprites says how close). `tpad` clones the last keyframe
  for one GOP: without it the `fps` filter stops at the last keyframe's time and the last
  tile(s) of ffmpeg's sprite stay black.
- **Waveform:** `ffmpeg -f null -` only decodes (and converts to s16 for the null muxer); it is
  the floor for any waveform tool, not an equivalent. jobctl decodes, converts each sample to 16
  bits, keeps a min/max per 256 samples and writes the JSON."""


def load_average() -> str:
    return " / ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(args: argparse.Namespace, info: dict[str, str], cases: list[Case], memory: str) -> str:
    aw = shutil.which("audiowaveform")
    parts = [HEADING, "",
             "`jobctl thumbnails`, `jobctl storyboard` and `jobctl waveform` against the ffmpeg CLI doing the same "
             "work, in the same run (`bench/images.py`; its docstring says what is measured):", "",
             "```", "make bench                                   # includes the line below",
             "python3 bench/images.py --jobctl .build-release/release/jobctl",
             "python3 bench/images.py --quick              # smoke test: tiny inputs, 1 run, under a minute",
             "python3 bench/images.py --runs 3 --write-doc # rewrites the generated part of this section",
             "```", "",
             f"Invocation of the figures below: `{shlex.join(sys.orig_argv)}`", "",
             f"- Machine: {info['machine']}", f"- Date: {info['date']}", f"- ffmpeg: `{info['ffmpeg']}`",
             f"- audiowaveform: {'`' + aw + '`' if aw else 'not installed (that comparison is skipped)'}",
             f"- Load average (1 / 5 / 15 min) at the start: {args.load_start}; at the end: {load_average()}",
             f"- {args.runs} run(s) per side per case, alternating; medians; ratio = jobctl / ffmpeg "
             "(<= 1.0: jobctl at least as fast / as lean); an ffmpeg side of several processes: their total "
             "wall time, the largest peak RSS", ""]
    inputs = sorted({case.input_path for case in cases} | {args.short_audio}, key=str)
    parts += ["Inputs (generated by the script, cached in `bench/out/`):", ""]
    parts += [f"- `{path.relative_to(ROOT)}` ({duration_of(path):g} s)" for path in inputs] + [""]
    parts += ["Commands (from the repo root; the ffmpeg side of the thumbnail cases is ten such commands, one per "
              "time, run one after the other):", ""]
    for case in cases:
        parts += [f"**{case.name}**: {case.describe}", "", "```"]
        for tool, side in case.sides.items():
            parts.append(display(side.commands[0]))
        parts += ["```", ""]
    parts += [results_table(cases), ""]
    checks = [f"- {case.name}: " + "; ".join(case.notes) for case in cases if case.notes]
    parts += ["Checks (every run: exit status 0 and the expected files; first run):", ""] + checks + [""]
    smallest = min(r.rss_kib for case in cases for runs in case.runs.values() for r in runs) / 1024
    harness = harness_peak_rss()
    parts += [f"The harness's own peak RSS: {harness:.1f} MiB (every child's figure includes at least this; "
              f"the smallest measured is {smallest:.1f} MiB)" +
              (" **WARNING: the harness is as large as the children, their RSS figures are its own**"
               if harness > 0.8 * smallest else "") + ".", ""]
    parts += ["Memory flatness (jobctl waveform, same command on a long and a short file):", "", memory, ""]
    parts += [NOTES, ""]
    return "\n".join(parts).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per side per case (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 20 s 320x240 clip, 20 s and 10 s audio, 1 run")
    parser.add_argument("--jobctl", type=Path, default=DEFAULT_JOBCTL, help="the jobctl binary (default %(default)s)")
    parser.add_argument("--write-doc", action="store_true", help="also write the section in docs/benchmarks.md")
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="the file for --write-doc (default %(default)s)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    jobctl = require_jobctl(args.jobctl)
    OUT.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"invocation: {shlex.join(sys.orig_argv)}", file=sys.stderr)
    args.load_start = load_average()
    if args.quick:
        clip, long_audio, short_audio = video_input(320, 240, 20), audio_input(20), audio_input(10)
        long_label, short_label = "20 s", "10 s"
    else:
        clip, long_audio, short_audio = video_input(1920, 1080, 600), audio_input(3600), audio_input(60)
        long_label, short_label = "1 h", "1 min"
    args.short_audio = short_audio
    cases = [thumbnails_case(jobctl, clip, exact=True), thumbnails_case(jobctl, clip, exact=False),
             storyboard_case(jobctl, clip), waveform_case(jobctl, long_audio, long_label)]
    short = waveform_case(jobctl, short_audio, short_label)
    try:
        for case in cases + [short]:
            run_case(case, args.runs)
    except ToolFailed as failure:
        sys.exit(f"bench: a command failed, {failure}")
    except CheckFailed as failure:
        sys.exit(f"bench: a check failed: {failure}")
    memory = memory_table(cases[-1], short, long_label, short_label)
    body = report(args, machine_info(), cases, memory)
    print(body)
    if args.write_doc:
        # The first time, before the queue benchmark's heading (after the export section).
        write_doc(args.doc, body, (START_MARK, END_MARK), INSERT_BEFORE)
        print(f"wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
