#!/usr/bin/env python3
"""What split exports would give on a fleet: a discrete-event model fed with bench/split.sh's figures.

A split export of an input of M media minutes on W single-CPU workers, segments of L seconds:

- the plan (the parent's first attempt, a demux pass): planPerMinute x M, alone;
- then the children, queued in order (the audio first, then segment 0, 1, ...); each worker
  takes the next one when it is free. The audio child takes audioPerMinute x M; a segment takes
  segmentOverhead + L / videoSpeed, the overhead being everything a segment adds to its own
  frames, as measured (bench/split.sh, case e: its claim, start, post-roll decoded but not
  encoded, seam scores and scratch I/O; the preset, CRF, has no pre-roll, decision 109); a
  negative measured overhead (noise) counts as 0;
- the join starts when the last child ends: joinPerMinute x M (its pickup included).

The speed-up is against one single-CPU worker exporting the whole input unsplit (M x 60 / speed,
case a of bench/split.sh). Every figure comes from the "model" object of
bench/out/split-results.json; the defaults simulate a 40-minute input on 4 to 64 workers.

    python3 bench/split_model.py [--results bench/out/split-results.json] [--svg docs/split-model.svg]

Prints a Markdown table (wall time and speed-up per worker count and segment length) and the best
segment length per worker count, writes bench/out/split-model.json and the SVG plot (x = segment
length, y = wall time, one line per worker count; written by hand, no plotting library).
"""

import argparse
import heapq
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def simulate(model: dict, minutes: float, workers: int, segment: float) -> dict:
    """One split export: its wall time and where the time went (seconds)."""
    media = minutes * 60
    count = max(1, round(media / segment))
    lengths = [segment] * (count - 1) + [media - segment * (count - 1)]
    plan = model["planPerMinute"] * minutes
    join = model["joinPerMinute"] * minutes
    jobs = [model["audioPerMinute"] * minutes]
    for length in lengths:
        jobs.append(max(0.0, model["segmentOverhead"]) + length / model["videoSpeed"])
    free = [plan] * workers  # when each worker is next free
    heapq.heapify(free)
    last = plan
    for duration in jobs:  # in queue order: the earliest free worker takes the next child
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
        last = max(last, start + duration)
    wall = last + join
    single = media / model["speed"]
    return {"workers": workers, "segment": segment, "segments": count, "wall": wall, "speedUp": single / wall,
            "plan": plan, "children": last - plan, "join": join, "work": sum(jobs), "single": single}


def nice_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks covering [low, high] on a log axis."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10 ** exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def svg_plot(rows: list[dict], worker_counts: list[int], segments: list[float], title: str) -> str:
    width, height = 640, 420
    left, right, top, bottom = 70, 120, 40, 50
    walls = [r["wall"] for r in rows]
    candidates = nice_ticks(min(walls) / 10, max(walls) * 10)
    y_low = max(t for t in candidates if t <= min(walls))
    y_high = min(t for t in candidates if t >= max(walls))
    x_low, x_high = min(segments), max(segments)

    def x(value: float) -> float:
        return left + (math.log(value) - math.log(x_low)) / (math.log(x_high) - math.log(x_low)) * (width - left - right)

    def y(value: float) -> float:
        return top + (math.log(y_high) - math.log(value)) / (math.log(y_high) - math.log(y_low)) * (height - top - bottom)

    colours = ["#1b6ac9", "#d6501d", "#2f9e44", "#9c36b5", "#b08800", "#0b7285", "#c2255c"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2:.0f}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    for tick in nice_ticks(y_low, y_high):
        out.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - right}" y2="{y(tick):.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for value in segments:
        out.append(f'<line x1="{x(value):.1f}" y1="{top}" x2="{x(value):.1f}" y2="{height - bottom}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{x(value):.1f}" y="{height - bottom + 16}" text-anchor="middle">{value:g}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
               f'fill="none" stroke="#555"/>')
    out.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 12}" text-anchor="middle">'
               f'segment length (s, log scale)</text>')
    out.append(f'<text transform="translate(18 {(top + height - bottom) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">wall time (s, log scale)</text>')
    for n, workers in enumerate(worker_counts):
        colour = colours[n % len(colours)]
        line = sorted((r for r in rows if r["workers"] == workers), key=lambda r: r["segment"])
        points = " ".join(f"{x(r['segment']):.1f},{y(r['wall']):.1f}" for r in line)
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        best = min(line, key=lambda r: r["wall"])
        for r in line:
            radius = 5 if r is best else 3
            out.append(f'<circle cx="{x(r["segment"]):.1f}" cy="{y(r["wall"]):.1f}" r="{radius}" fill="{colour}"/>')
        legend_y = top + 16 + n * 18
        out.append(f'<line x1="{width - right + 12}" y1="{legend_y - 4}" x2="{width - right + 32}" '
                   f'y2="{legend_y - 4}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 38}" y="{legend_y}">{workers} workers</text>')
    note_y = top + 16 + len(worker_counts) * 18 + 10
    out.append(f'<text x="{width - right + 12}" y="{note_y}" font-size="11">large dot: best</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench/out/split-results.json")
    parser.add_argument("--svg", type=Path, default=ROOT / "docs/split-model.svg")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/out/split-model.json")
    parser.add_argument("--minutes", type=float, default=40)
    parser.add_argument("--workers", default="4,8,16,32,64")
    parser.add_argument("--segments", default="10,20,30,60,120,240")
    args = parser.parse_args()

    model = json.loads(args.results.read_text())["model"]
    if model["segmentOverhead"] < 0:  # below the measurement's noise: the segments ran a little faster than case a
        print(f"A segment's measured overhead, {model['segmentOverhead']:.2f} s, is taken as 0.")
        model["segmentOverhead"] = 0.0
    worker_counts = [int(w) for w in args.workers.split(",")]
    segments = [float(s) for s in args.segments.split(",")]
    rows = [simulate(model, args.minutes, w, s) for w in worker_counts for s in segments]

    print(f"Inputs ({args.results.name}): " + ", ".join(f"{k} {v:.4g}" for k, v in model.items()))
    print(f"A {args.minutes:g}-minute input; one worker unsplit: {rows[0]['single']:.0f} s.\n")
    print("| segment (s) | " + " | ".join(f"{w} workers: wall s (speed-up)" for w in worker_counts) + " |")
    print("|---:|" + "---:|" * len(worker_counts))
    for s in segments:
        cells = [next(r for r in rows if r["workers"] == w and r["segment"] == s) for w in worker_counts]
        print(f"| {s:g} | " + " | ".join(f"{r['wall']:.0f} ({r['speedUp']:.1f}x)" for r in cells) + " |")
    print("\nBest segment length per worker count:")
    best = {}
    for w in worker_counts:
        row = min((r for r in rows if r["workers"] == w), key=lambda r: r["wall"])
        best[w] = row
        print(f"- {w} workers: {row['segment']:g} s ({row['segments']} segments): {row['wall']:.0f} s, "
              f"{row['speedUp']:.1f}x ({100 * row['speedUp'] / w:.0f} % of {w}x); "
              f"plan {row['plan']:.0f} s + children {row['children']:.0f} s + join {row['join']:.0f} s")

    title = f"Split export of a {args.minutes:g}-minute input, modelled (bench/split_model.py)"
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(svg_plot(rows, worker_counts, segments, title))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"inputs": model, "minutes": args.minutes, "rows": rows,
                                     "best": {str(w): r for w, r in best.items()}}, indent=2))
    print(f"\nwrote {args.svg} ({args.svg.stat().st_size} bytes) and {args.json}")


if __name__ == "__main__":
    main()
