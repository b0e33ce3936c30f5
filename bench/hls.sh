#!/usr/bin/env bash
# Adaptive streaming (issue 29): `jobctl hls` against the `ffmpeg` CLI making the same ladder in
# one command (split filter, one x264 per rung, the hls muxer writing fMP4 segments), on the
# 1080p30 input of bench/split-input.sh, RANGE seconds of it (default 20).
#   J. jobctl hls INPUT --range 0s+RANGEs -o DIR: the auto ladder (234p … 1080p, seven rungs)
#      plus AAC, its playlists written from the segments and checked against the rules;
#   F. ffmpeg -filter_complex split=7 + scale per rung, libx264 per rung at the same bit rates
#      (VBV peak 1.5×, buffer 2×), an IDR every 2 s (-force_key_frames, -sc_threshold 0), AAC
#      128k, -f hls -hls_segment_type fmp4 -hls_time 6 with -var_stream_map: what a user would
#      run instead.
# RUNS rounds (default 3), J then F in each; medians of wall time and peak RSS (GNU time).
#   swift build -c release --scratch-path .build-release && bash bench/hls.sh [RUNS] [RANGE]
# Writes bench/out/hls-results.json.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-3}
RANGE=${2:-20}
JOBCTL=${JOBCTL:-.build-release/release/jobctl}
OUT=bench/out
RAW=$OUT/hls-runs
[[ $RUNS =~ ^[1-9][0-9]*$ && $RANGE =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash bench/hls.sh [RUNS] [RANGE]" >&2; exit 64; }
[ -x "$JOBCTL" ] || { echo "no $JOBCTL: swift build -c release --scratch-path .build-release" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is missing: apt-get install time" >&2; exit 1; }
JOBCTL=$(realpath "$JOBCTL")
. bench/split-input.sh
INPUT=$(split_input)
rm -rf "$RAW"
mkdir -p "$RAW"
cat "$INPUT" >/dev/null

# The auto ladder of a 1920x1080 source: name width height bit rate (Sources/Streaming/Ladder.swift).
RUNGS=("234p 416 234 145000" "360p 640 360 365000" "432p 768 432 1100000" "480p 854 480 1500000"
    "540p 960 540 2000000" "720p 1280 720 4500000" "1080p 1920 1080 7800000")

ffmpeg_ladder() {
    local dir=$1 split="[0:v]split=${#RUNGS[@]}" filters="" maps=() streams="" index=0
    for rung in "${RUNGS[@]}"; do
        read -r name width height rate <<<"$rung"
        split+="[s$index]"
        filters+=";[s$index]scale=$width:$height[o$index]"
        maps+=(-map "[o$index]" -c:v:$index libx264 -b:v:$index "$rate" -maxrate:v:$index "$((rate * 3 / 2))"
            -bufsize:v:$index "$((rate * 2))")
        streams+="v:$index,name:$name "
        index=$((index + 1))
    done
    ffmpeg -nostdin -v error -y -t "$RANGE" -i "$INPUT" -filter_complex "$split$filters" "${maps[@]}" \
        -force_key_frames 'expr:gte(t,n_forced*2)' -sc_threshold 0 -forced-idr 1 \
        -map 0:a -c:a aac -b:a 128k -ac 2 \
        -f hls -hls_time 6 -hls_segment_type fmp4 -hls_playlist_type vod -start_number 1 \
        -var_stream_map "${streams}a:0,name:audio" -master_pl_name master.m3u8 \
        -hls_fmp4_init_filename '%v-init.mp4' -hls_segment_filename "$dir/%v-%05d.m4s" "$dir/%v.m3u8"
}

# CASE RUN: one ladder, its wall (s), peak RSS (KiB) and bytes written.
run_case() {
    local case=$1 run=$2 dir=$RAW/r$2-$1
    mkdir -p "$dir/out"
    if [ "$case" = J ]; then
        /usr/bin/time -f '%e %M' -o "$dir/time" "$JOBCTL" hls "$INPUT" --range "0s+${RANGE}s" -o "$dir/out" --json \
            >"$dir/result.json"
    else
        /usr/bin/time -f '%e %M' -o "$dir/time" bash -c "$(declare -f ffmpeg_ladder); $(declare -p RUNGS INPUT RANGE); ffmpeg_ladder $dir/out"
    fi
    read -r wall rss <"$dir/time"
    echo "$case $run $wall $rss $(du -sb "$dir/out" | cut -f1)" | tee -a "$RAW/all"
    rm -rf "$dir/out"
}

for run in $(seq 1 "$RUNS"); do
    run_case J "$run"
    run_case F "$run"
done

python3 - "$RAW/all" "$OUT/hls-results.json" "$RANGE" <<'PY'
import json, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
result = {"range_seconds": int(sys.argv[3]), "runs": len(rows) // 2}
for case, name in [("J", "jobctl"), ("F", "ffmpeg")]:
    mine = [r for r in rows if r[0] == case]
    result[name] = {
        "wall_s": statistics.median(float(r[2]) for r in mine),
        "peak_rss_mib": round(statistics.median(int(r[3]) for r in mine) / 1024, 1),
        "bytes": int(statistics.median(int(r[4]) for r in mine)),
        "walls": [float(r[2]) for r in mine],
    }
result["wall_ratio"] = round(result["jobctl"]["wall_s"] / result["ffmpeg"]["wall_s"], 3)
result["rss_ratio"] = round(result["jobctl"]["peak_rss_mib"] / result["ffmpeg"]["peak_rss_mib"], 3)
json.dump(result, open(sys.argv[2], "w"), indent=2)
print(json.dumps(result, indent=2))
PY
