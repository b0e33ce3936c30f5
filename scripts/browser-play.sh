#!/usr/bin/env bash
# Plays a ladder in headless Chromium (scripts/browser-play.py) with selenium and the m3u8
# parser from PyPI in .build-venv/browser. Needs Debian's chromium and chromium-driver (the
# Makefile's TEST_PACKAGES): without them the script fails, it never skips.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
venv="$(venv_with browser selenium==4.51.0 m3u8==6.0.0)"
exec "$venv/bin/python" scripts/browser-play.py "$@"
