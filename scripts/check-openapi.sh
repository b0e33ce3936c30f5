#!/usr/bin/env bash
# Validates the HTTP API's OpenAPI document (Sources/JobAPI/openapi.json) with
# openapi-spec-validator from PyPI, installed into a virtualenv under .build-venv/ (git-ignored).
# The tests check that the document and the router list the same routes (APITests).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
venv=$(venv_with openapi "openapi-spec-validator==0.9.0")
"$venv/bin/openapi-spec-validator" Sources/JobAPI/openapi.json
