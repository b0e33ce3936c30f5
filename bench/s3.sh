#!/usr/bin/env bash
# Object storage (issue 28): what writing a 1 GiB export to s3:// costs, against writing it to
# a local file, and against curl's own signed single PUT of the same file; and whether the
# worker's memory grows with the output's size.
#   L. a worker exports 55 s of the 2-minute 1080p input with --preset passthrough (a remux,
#      about 1 GiB; the cheapest export there is, so the upload's share is at its largest) to a
#      local file;
#   S. the same export to s3:// (SeaweedFS on loopback, scripts/test-s3.sh): a multipart upload
#      of 8 MiB parts, four in flight;
#   Q. the same to s3:// for 14 s of the input (about 256 MiB): the worker's peak RSS against S;
#   C. curl --aws-sigv4 -T of L's output: one signed PUT, what a shell script would do;
#   E. an export that encodes about 1 GiB: 78 s of the input with --preset highest (x264 CRF
#      18 at 1080p; the input's noise makes it about 110 Mb/s) to a local file;
#   F. the same encode to s3://: what the upload adds to an export that encodes.
# CASES (default LSQC; EF takes about 25 minutes a round here) picks cases. RUNS rounds
# (default 3), every case once per round in that order; medians. Walls run from
# the submit to `jobctl wait` returning (the worker started just before, `--once`); the worker's
# peak RSS comes from GNU time. Needs ffmpeg, curl and GNU time (/usr/bin/time).
#   swift build -c release --scratch-path .build-release && bash bench/s3.sh [RUNS] [CASES]
# Writes bench/out/s3-results.json (s3-results-CASES.json for other cases).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-3}
CASES=${2:-LSQC}
JOBCTL=${JOBCTL:-.build-release/release/jobctl}
OUT=bench/out
RAW=$OUT/s3-runs
[[ $RUNS =~ ^[1-9][0-9]*$ && $CASES =~ ^[LSQCEF]+$ ]] || { echo "usage: bash bench/s3.sh [RUNS] [CASES: LSQCEF]" >&2; exit 64; }
[[ $CASES != *C* || $CASES == *L* ]] || { echo "case C uploads L's output: give L too" >&2; exit 64; }
RESULTS=$OUT/s3-results.json
[ "$CASES" = LSQC ] || RESULTS=$OUT/s3-results-$CASES.json
[ -x "$JOBCTL" ] || { echo "no $JOBCTL: swift build -c release --scratch-path .build-release" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is missing: apt-get install time" >&2; exit 1; }
JOBCTL=$(realpath "$JOBCTL")
mkdir -p "$OUT"
. bench/split-input.sh
INPUT=$(split_input)

rm -rf "$RAW"
mkdir -p "$RAW"
STORE=$(mktemp -d /tmp/jobctl-bench-s3.XXXXXX)
trap 'scripts/test-s3.sh stop "$STORE"' EXIT
PORT=$(python3 -c 'import random; print(random.randrange(20000, 40000))')
scripts/test-s3.sh start "$STORE" "$PORT" $$ >/dev/null
# shellcheck disable=SC1091
. "$STORE/env"
cat "$INPUT" >/dev/null # into the page cache before the first timed run

# One export by one `worker --once`: CASE RUN RANGE OUTPUT [PRESET]; records wall, peak RSS
# (KiB), bytes.
export_case() {
    local case=$1 run=$2 range=$3 output=$4 preset=${5:-passthrough} dir=$RAW/r$2-$1 id start end
    mkdir -p "$dir"
    "$JOBCTL" migrate --db "$dir/jobs.sqlite" >/dev/null
    start=$EPOCHREALTIME
    id=$("$JOBCTL" submit "$INPUT" --db "$dir/jobs.sqlite" --preset "$preset" --range "$range" -o "$output")
    /usr/bin/time -f '%M' -o "$dir/rss" "$JOBCTL" worker --db "$dir/jobs.sqlite" --once \
        --staging-dir "$dir/staging" 2>"$dir/worker.log"
    "$JOBCTL" wait "$id" --db "$dir/jobs.sqlite" >/dev/null
    end=$EPOCHREALTIME
    "$JOBCTL" show "$id" --db "$dir/jobs.sqlite" --json >"$dir/job.json"
    python3 - "$dir/job.json" "$case" "$run" "$start" "$end" "$(cat "$dir/rss")" >>"$RAW/rows.tsv" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
assert job["status"] == "completed", job.get("error")
print("\t".join([sys.argv[2], sys.argv[3], f"{float(sys.argv[5]) - float(sys.argv[4]):.3f}", sys.argv[6],
                 str(job["result"]["bytes"])]))
PY
}

for run in $(seq 1 "$RUNS"); do
    for case in $(echo "$CASES" | grep -o .); do
        echo "round $run/$RUNS: $case" >&2
        case $case in
        L) export_case L "$run" 0+55s "$(realpath "$RAW")/local-$run.mp4" ;;
        S) export_case S "$run" 0+55s "s3://jobctl-test/bench/s3-$run.mp4" ;;
        Q) export_case Q "$run" 0+14s "s3://jobctl-test/bench/quarter-$run.mp4" ;;
        C)
            start=$EPOCHREALTIME
            curl -s -f -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" \
                --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
                -T "$RAW/local-$run.mp4" "$AWS_ENDPOINT_URL/jobctl-test/bench/curl-$run.mp4"
            end=$EPOCHREALTIME
            printf 'C\t%s\t%.3f\t\t%s\n' "$run" "$(python3 -c "print($end - $start)")" \
                "$(stat -c %s "$RAW/local-$run.mp4")" >>"$RAW/rows.tsv"
            ;;
        E) export_case E "$run" 0+78s "$(realpath "$RAW")/encode-$run.mp4" highest ;;
        F) export_case F "$run" 0+78s "s3://jobctl-test/bench/encode-$run.mp4" highest ;;
        esac
    done
    rm -f "$RAW/local-$run.mp4" "$RAW/encode-$run.mp4"
done

python3 - "$RAW/rows.tsv" "$RESULTS" <<'PY'
import json, statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
walls, rss, size = {}, {}, {}
for case, run, wall, peak, bytes_ in rows:
    walls.setdefault(case, []).append(float(wall))
    if peak:
        rss.setdefault(case, []).append(int(peak) / 1024)
    size[case] = int(bytes_)
med = {case: statistics.median(values) for case, values in walls.items()}
results = {"walls": walls, "medians": med, "peakRSSMiB": {c: statistics.median(v) for c, v in rss.items()},
           "bytes": size}
# What the upload adds: S against L (a remux), F against E (an encode).
for upload, local, name in (("S", "L", "remux"), ("F", "E", "encode")):
    if upload in med and local in med:
        results[f"{name}UploadAdds"] = med[upload] - med[local]
        results[f"{name}UploadShare"] = (med[upload] - med[local]) / med[local]
json.dump(results, open(sys.argv[2], "w"), indent=2)
names = {"L": "L  export to a local file", "S": "S  export to s3:// (multipart)",
         "Q": "Q  export of a quarter to s3://", "C": "C  curl --aws-sigv4 -T (one PUT)",
         "E": "E  encode to a local file", "F": "F  encode to s3:// (multipart)"}
for case in "LSQCEF":
    if case not in walls:
        continue
    runs = ", ".join(f"{w:.2f}" for w in walls[case])
    peak = f"{results['peakRSSMiB'][case]:.0f} MiB" if case in results["peakRSSMiB"] else ""
    print(f"{names[case]:<36} {med[case]:>8.2f} s   {runs:<24} {size[case] / 2**20:>7.0f} MiB  {peak}")
for name in ("remux", "encode"):
    if f"{name}UploadAdds" in results:
        print(f"the upload adds {results[f'{name}UploadAdds']:.2f} s to the {name} "
              f"({100 * results[f'{name}UploadShare']:.1f} %)")
print(f"wrote {sys.argv[2]}")
PY
