# jobctl — the two commands of the README are `make demo` and `make test`.

# docs/spec.md §1: the system libraries jobctl builds against (and python3 for the demo's webhook receiver).
PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev \
            libavfilter-dev libsqlite3-dev libcurl4-openssl-dev python3
# The tests also use the ffmpeg/ffprobe CLI as an independent oracle, PostgreSQL, openssl (a
# self-signed certificate), python3-yaml and systemd-analyze to check deploy/, the sqlite3 CLI (damaging a database on purpose),
# and python3-venv for openapi-spec-validator (scripts/check-openapi.sh).
# curl signs its own requests (--aws-sigv4) to check what jobctl wrote to the object store
# (SeaweedFS, from PyPI into .build-venv, scripts/test-s3.sh). Debian's Chromium and its driver
# play the HLS ladders headless, driven by selenium from PyPI (scripts/browser-play.sh).
# musepack-tools' mpcenc writes the Musepack fixture (the ffmpeg CLI reads Musepack but cannot write it).
TEST_PACKAGES := ffmpeg postgresql openssl python3-yaml systemd sqlite3 python3-venv curl chromium chromium-driver nginx-light \
                 musepack-tools
# The benchmarks also make a virtualenv for PgQueuer (bench/queue.sh).
BENCH_PACKAGES := python3-venv wrk

SWIFT ?= swift
JOBCTL := .build/debug/jobctl
DEMO := demo

.PHONY: test-fuzz all deps test-deps build release demo test test-unit test-media test-integration test-timing format lint bench clean

all: build

deps:
	@scripts/install-deps.sh $(PACKAGES)

test-deps:
	@scripts/install-deps.sh $(PACKAGES) $(TEST_PACKAGES)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# The main job on the embedded default: make a sample clip with our own writer, start a local
# webhook receiver (it checks signatures itself), submit `--preset low --range 1s+3s` with a
# webhook to a fresh job database, run a worker until the queue is empty, and show the
# finished job, its output, and the webhook the receiver got.
demo: build
	@mkdir -p $(DEMO) && rm -rf $(DEMO)/jobs.sqlite* $(DEMO)/clip.mp4 $(DEMO)/webhooks.jsonl $(DEMO)/thumbs $(DEMO)/hls
	@echo "== jobctl sample $(DEMO)/talk.mp4"
	@$(JOBCTL) sample $(DEMO)/talk.mp4
	@export JOBCTL_WEBHOOK_SECRET=$$($(JOBCTL) webhooks secret); \
	python3 scripts/webhook-receiver.py --secret "$$JOBCTL_WEBHOOK_SECRET" --log $(DEMO)/webhooks.jsonl --port 0 > $(DEMO)/receiver.out & \
	receiver=$$!; trap "kill -9 $$receiver 2>/dev/null" EXIT; \
	while ! grep -q listening $(DEMO)/receiver.out 2>/dev/null; do sleep 0.1; done; \
	port=$$(cut -d' ' -f2 $(DEMO)/receiver.out) && \
	echo "== jobctl submit $(DEMO)/talk.mp4 --preset low --range 1s+3s -o $(DEMO)/clip.mp4 --webhook http://127.0.0.1:$$port/hooks/export" && \
	id=$$($(JOBCTL) submit $(DEMO)/talk.mp4 --db $(DEMO)/jobs.sqlite --preset low --range 1s+3s -o $(DEMO)/clip.mp4 \
		--webhook http://127.0.0.1:$$port/hooks/export --allow-private-webhooks) && echo "$$id" && \
	echo "== jobctl worker --once" && \
	$(JOBCTL) worker --db $(DEMO)/jobs.sqlite --once --allow-private-webhooks && \
	echo "== jobctl show $$id" && \
	$(JOBCTL) show "$$id" --db $(DEMO)/jobs.sqlite && \
	echo "== jobctl probe $(DEMO)/clip.mp4" && \
	$(JOBCTL) probe $(DEMO)/clip.mp4 && \
	echo "== the webhook the receiver got ($(DEMO)/webhooks.jsonl)" && \
	python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); b=json.loads(r["body"]); print("POST", r["path"], "webhook-id", r["id"], "signature", "valid" if r["valid"] else "INVALID"); d=b["data"]; print(json.dumps({"type": b["type"], "timestamp": b["timestamp"], "data": {"id": d["id"], "status": d["status"], "output": d["output"], "result": {k: d["result"][k] for k in ("bytes", "duration", "actualRange")}, "…": "the whole job JSON"}}, indent=2))' $(DEMO)/webhooks.jsonl && \
	echo "== jobctl thumbnails $(DEMO)/talk.mp4 --at 1s,50%,end --exact --size 320x -o $(DEMO)/thumbs" && \
	$(JOBCTL) thumbnails $(DEMO)/talk.mp4 --at 1s,50%,end --exact --size 320x -o $(DEMO)/thumbs && \
	echo "== jobctl waveform $(DEMO)/talk.mp4 -o $(DEMO)/peaks.json --png $(DEMO)/waveform.png" && \
	$(JOBCTL) waveform $(DEMO)/talk.mp4 -o $(DEMO)/peaks.json --png $(DEMO)/waveform.png && \
	echo "== jobctl hls $(DEMO)/talk.mp4 -o $(DEMO)/hls" && \
	$(JOBCTL) hls $(DEMO)/talk.mp4 -o $(DEMO)/hls && \
	echo "   to watch it: python3 -m http.server -d $(DEMO)/hls 8000, then open http://localhost:8000/player.html" && \
	echo "== jobctl keys create --name demo --scope admin (the key to sign in to the dashboard with)" && \
	$(JOBCTL) keys create --name demo --scope admin --db $(DEMO)/jobs.sqlite && \
	echo "   the dashboard: $(JOBCTL) serve --db $(DEMO)/jobs.sqlite --listen 127.0.0.1:8080," && \
	echo "   then open http://127.0.0.1:8080/ui/ and sign in with the key above (docs/dashboard.md)"

# The whole test suite (Swift Testing, real FFmpeg, ffprobe as the oracle) in three phases:
# test-unit (in process, seconds: the state machines, the conformance suites on the in-memory
# store and SQLite files, whole workers on the in-memory store, signing, the address guard, the
# HTTP client against local listeners, the HTTP API's routes on SQLite files), test-media (the export pipeline on generated clips,
# minutes), then test-integration (IntegrationTests: worker processes, PostgreSQL, webhooks to
# real receivers; JobctlTests: the CLI as a user runs it) with a throwaway PostgreSQL cluster on
# loopback and a SeaweedFS object store (ObjectStorageTests) started for the run and stopped afterwards. The fixtures are generated first, so no
# test's time limit pays for encoding them. Swift Testing would start every test at once; on 2
# cores under load that starves tests of their deadlines, so at most TEST_PARALLELISM run
# together (most tests wait on worker processes, ffmpeg or PostgreSQL). Tests whose assertion
# is about time (a stop within 2 s, a wake-up within a second) live in suites named `Timing`
# (`SuiteTests.Timing`): the other phases skip them and test-timing runs them last, one at a
# time, so that no other test competes with them for the cores.
TEST_PARALLELISM ?= 3
TIMING = /Timing/
UNIT = ^(QueueTests|WorkerUnitTests|WebhookUnitTests|SafeHTTPTests|APITests|StreamingTests|DashboardTests)\.
MEDIA = ^MediaTests\.
INTEGRATION = ^(IntegrationTests|JobctlTests|ObjectStorageTests)\.
test: test-deps lint
	scripts/check-openapi.sh
	$(SWIFT) build --build-tests
	.build/debug/jobctl-fixtures
	$(MAKE) --no-print-directory test-unit test-media test-integration test-timing test-fuzz

test-unit:
	$(SWIFT) test --skip-build --filter '$(UNIT)' --skip '$(TIMING)' --experimental-maximum-parallelization-width $(TEST_PARALLELISM)

test-media:
	$(SWIFT) test --skip-build --filter '$(MEDIA)' --skip '$(TIMING)' --experimental-maximum-parallelization-width $(TEST_PARALLELISM)

test-integration:
	scripts/test-postgres.sh run scripts/test-s3.sh run $(SWIFT) test --skip-build --filter '$(INTEGRATION)' --skip '$(TIMING)' --experimental-maximum-parallelization-width $(TEST_PARALLELISM)

test-timing:
	scripts/test-postgres.sh run scripts/test-s3.sh run $(SWIFT) test --skip-build --filter '$(TIMING)' --experimental-maximum-parallelization-width 1

# schemathesis against a running `jobctl serve`, on SQLite and on PostgreSQL (scripts/fuzz-api.sh).
test-fuzz:
	scripts/fuzz-api.sh
	scripts/test-postgres.sh run bash -c 'scripts/fuzz-api.sh "$$JOBCTL_TEST_POSTGRES"'

# The style of swift-nio (.swift-format: 120 columns, one argument per line when a call wraps).
# `make format` rewrites the tree; `make lint` (part of `make test`) fails on any difference.
SOURCES = Sources Tests migrations Package.swift
format:
	$(SWIFT) format --in-place --parallel --recursive $(SOURCES)

lint:
	$(SWIFT) format lint --strict --parallel --recursive $(SOURCES)
	python3 scripts/lint-rules.py


# Benchmarks (docs/benchmarks.md): jobctl export, thumbnails, storyboard and waveform vs the ffmpeg CLI,
# the queue on SQLite, and on PostgreSQL side by side with PgQueuer; release build in its own folder.
bench: test-deps
	@scripts/install-deps.sh $(BENCH_PACKAGES)
	$(SWIFT) build -c release --scratch-path .build-release
	python3 bench/bench.py --jobctl .build-release/release/jobctl
	python3 bench/images.py --jobctl .build-release/release/jobctl
	.build-release/release/jobctl-bench queue --concurrency 32 --jobs 10000
	bench/queue.sh
	.build-release/release/jobctl-bench webhooks --jobs 3000 --webhook-concurrency 8
	bench/api.sh

clean:
	rm -rf .build $(DEMO)
