#!/bin/sh
# Runs unit test binaries one after the other; stops at the first failure.
# The tests find fixtures relative to the repository root.
set -u
cd "$(dirname "$0")/.."
export AT_FIXTURES="${AT_FIXTURES:-$(pwd)/tests/fixtures}"
export AT_SHARED_FIXTURES="${AT_SHARED_FIXTURES:-$(pwd)/../shared/fixtures}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
for t in "$@"; do
    echo "== $t"
    if ! "$t"; then
        echo "FAILED: $t" >&2
        failed=1
        break
    fi
done
exit $failed
