# jobctl — the two commands of the README are `make demo` and `make test`.

# SPEC §1: the system libraries jobctl builds against.
PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev \
            libavfilter-dev libsqlite3-dev libcurl4-openssl-dev
# The tests also use the ffmpeg/ffprobe CLI as an independent oracle, and PostgreSQL.
TEST_PACKAGES := ffmpeg postgresql

SWIFT ?= swift
JOBCTL := .build/debug/jobctl
DEMO := demo

.PHONY: all deps test-deps build release demo test bench clean

all: build

deps:
	@scripts/install-deps.sh $(PACKAGES)

test-deps:
	@scripts/install-deps.sh $(PACKAGES) $(TEST_PACKAGES)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# The main job on the embedded default: make a sample clip with our own writer, submit
# `--preset low --range 1s+3s` to a fresh job database, run a worker until the queue is empty,
# and show the finished job and what it produced.
demo: build
	@mkdir -p $(DEMO) && rm -f $(DEMO)/jobs.sqlite* $(DEMO)/clip.mp4
	@echo "== jobctl sample $(DEMO)/talk.mp4"
	@$(JOBCTL) sample $(DEMO)/talk.mp4
	@echo "== jobctl submit $(DEMO)/talk.mp4 --preset low --range 1s+3s -o $(DEMO)/clip.mp4"
	@id=$$($(JOBCTL) submit $(DEMO)/talk.mp4 --db $(DEMO)/jobs.sqlite --preset low --range 1s+3s -o $(DEMO)/clip.mp4) && echo "$$id" && \
	echo "== jobctl worker --once" && \
	$(JOBCTL) worker --db $(DEMO)/jobs.sqlite --once && \
	echo "== jobctl show $$id" && \
	$(JOBCTL) show "$$id" --db $(DEMO)/jobs.sqlite && \
	echo "== jobctl probe $(DEMO)/clip.mp4" && \
	$(JOBCTL) probe $(DEMO)/clip.mp4

# The whole test suite (Swift Testing, real FFmpeg, ffprobe as the oracle).
test: test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

# Benchmarks (docs/benchmarks.md): jobctl export vs the ffmpeg CLI, release build in its own folder.
bench: test-deps
	$(SWIFT) build -c release --scratch-path .build-release
	python3 bench/bench.py --jobctl .build-release/release/jobctl
	.build-release/release/jobctl bench queue --concurrency 32 --jobs 20000
	.build-release/release/jobctl bench queue --concurrency 8 --jobs 10000 --samples 50

clean:
	rm -rf .build $(DEMO)
