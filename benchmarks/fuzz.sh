#!/usr/bin/env bash
# The long budget of the fuzzing harness (tests/test_fuzz.py): N random examples per test
# (default 2000) instead of the normal suite's small fixed budget. One process, one core.
#   bash benchmarks/fuzz.sh [N] [pytest -k expression]
set -euo pipefail
if [[ -n "${1:-}" && ! "${1}" =~ ^0*[1-9][0-9]*$ ]]; then
    # pytest took a word for a number as a collection error, and 0 as the normal budget
    echo "fuzz.sh: error: N must be a whole number of at least 1, not '$1'" \
        "(bash benchmarks/fuzz.sh [N] [pytest -k expression])" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
export SEQLAB_FUZZ_EXAMPLES="${1:-2000}"
exec python -m pytest -q -n 0 tests/test_fuzz.py ${2:+-k "$2"} --hypothesis-show-statistics
