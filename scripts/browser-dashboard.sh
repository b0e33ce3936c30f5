#!/usr/bin/env bash
# Uses the dashboard in headless Chromium (scripts/browser-dashboard.py) with selenium from
# PyPI in .build-venv/browser. Needs Debian's chromium and chromium-driver (the Makefile's
# TEST_PACKAGES): without them the script fails, it never skips.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
venv="$(venv_with browser selenium==4.51.0 m3u8==6.0.0)"
exec "$venv/bin/python" scripts/browser-dashboard.py "$@"
