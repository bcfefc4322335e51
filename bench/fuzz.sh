#!/usr/bin/env bash
# bench/fuzz.sh [SECONDS_EACH]
#
# Runs the three libFuzzer harnesses (tests/fuzz/) for an hour in all: 1200 s
# each by default.  Prints, per harness, the inputs run and the corpus it
# grew; a crash or sanitizer report fails it, with the input kept in
# build/fuzz/artifacts/ (reproduce: build/fuzz/fuzz_NAME FILE, from the
# repository root).
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash tests/fuzz/run.sh "${1:-1200}" build/fuzz
