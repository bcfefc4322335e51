#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, then ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# as many tests at once as there are cores (on 2 cores the tests take about
# 9 minutes instead of 12: many of them wait on builds and launches)
cd build && ctest --output-on-failure -j"$(nproc)" "$@"
