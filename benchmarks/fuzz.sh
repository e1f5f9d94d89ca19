#!/usr/bin/env bash
# The long budget of the fuzzing harness (tests/test_fuzz.py): N random examples per test
# (default 2000) instead of the normal suite's small fixed budget. One process, one core.
#   bash benchmarks/fuzz.sh [N] [pytest -k expression]
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQLAB_FUZZ_EXAMPLES="${1:-2000}"
exec python -m pytest -q -n 0 tests/test_fuzz.py ${2:+-k "$2"} --hypothesis-show-statistics
