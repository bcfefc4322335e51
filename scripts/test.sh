#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, then ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build && ctest --output-on-failure "$@"
