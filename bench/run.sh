#!/bin/sh
# `make bench`: wrk against the real binary on a fresh embedded store. Prints
# requests/s and p99 latency per endpoint, and each as a ratio to GET /health of the
# same binary in the same run (absolute numbers are noisy on shared machines).
# Usage: bench/run.sh BINARY    (env: DURATION=5s CONNECTIONS=32 THREADS=2
#        STORAGE=dynamodb with AT_DYNAMODB_ENDPOINT set, e.g. through
#        scripts/with-dynalite.sh, to measure the dynamodb backend)
set -eu
BIN=$(realpath "${1:-build/release/actionstools}")
cd "$(dirname "$0")"
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
command -v wrk >/dev/null || { echo "bench: wrk is missing (apt-get install wrk)" >&2; exit 1; }

TMP=$(mktemp -d)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

export AUTH_JWT_SECRET="bench-$(date +%s)-secret-of-at-least-32-bytes"
export SQLITE_PATH="$TMP/bench.db" LISTEN=127.0.0.1:0 LOG_LEVEL=${LOG_LEVEL:-info}
STORAGE=${STORAGE:-sqlite}
export STORAGE
if [ "$STORAGE" = dynamodb ]; then
    [ -n "${AT_DYNAMODB_ENDPOINT:-}" ] || { echo "bench: STORAGE=dynamodb needs AT_DYNAMODB_ENDPOINT" >&2; exit 1; }
    export DYNAMODB_ENDPOINT="$AT_DYNAMODB_ENDPOINT" AWS_REGION=us-east-1 \
        AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret
    "$BIN" setup >/dev/null 2>"$TMP/setup.log" || { cat "$TMP/setup.log" >&2; exit 1; }
fi
# Request log lines go to a file, as they would to a log collector.
LOG_LEVEL=info "$BIN" serve 2>"$TMP/server.log" &
PID=$!
PORT=""
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$TMP/server.log" | head -n1)
    [ -n "$PORT" ] && break
    sleep 0.05
done
[ -n "$PORT" ] || { echo "bench: the server did not start:" >&2; cat "$TMP/server.log" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
AT_TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000beef --instance bench --name Bench)
export AT_TOKEN

# 30 notes on one record: a full page of 25 plus some.
TARGET=bench-target
for i in $(seq 1 30); do
    curl -sf -o "$TMP/last.json" -X POST "$URL/targets/$TARGET/notes" -H "Authorization: Bearer $AT_TOKEN" \
        -H 'Content-Type: application/json' -d "{\"data\": {\"text\": \"note $i\", \"n\": $i}}"
done
NOTE=$(sed -n 's/.*"uuid":"\([0-9a-f-]*\)".*/\1/p' "$TMP/last.json")

run() { # name path [script]
    name=$1 path=$2 script=${3:-auth.lua}
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$script" "$URL$path")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errs=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
    echo "$name|$rps|$p99|${errs:-0}" >> "$TMP/results"
}

run "GET /health" /health
run "GET a note" "/targets/$TARGET/notes/$NOTE"
run "GET list 25 notes" "/targets/$TARGET/notes?limit=25"
run "POST a note" "/targets/$TARGET-post/notes" post.lua

echo
echo "actionstools $("$BIN" --version | cut -d' ' -f2), $STORAGE, wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $(nproc) cores"
awk -F'|' 'NR == 1 {base = $2}
    {printf "%-20s %10.0f req/s  p99 %8s  %5.2f x /health  non-2xx %s\n", $1, $2, $3, $2 / base, $4}
    END {}' "$TMP/results"
