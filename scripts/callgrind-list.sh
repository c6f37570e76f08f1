#!/bin/sh
# Counts the instructions the server spends per list request, with valgrind's callgrind
# (instruction counts repeat from run to run, even on a busy machine, unlike timings).
# Seeds NOTES notes (default 30: a full page of 25 plus some) on one record, then turns
# counting on for REQUESTS list requests (default 200) of LIMIT notes (default 25), and
# prints the instructions per request and the functions that cost the most (inclusive).
# KEEP_OUT=FILE keeps the callgrind profile for callgrind_annotate. OTHER=N then seeds
# N newer notes of another tenant under the same target (the list must not pay for them).
# ENDPOINT=get, post or health counts that request instead of the list (one note; a new
# note on another record each time; GET /health).
# Usage: scripts/callgrind-list.sh [BINARY]   (a release build: build/release/actionstools)
set -eu
BIN=$(realpath "${1:-build/release/actionstools}")
NOTES=${NOTES:-30}
REQUESTS=${REQUESTS:-200}
LIMIT=${LIMIT:-25}
ENDPOINT=${ENDPOINT:-list}
command -v valgrind >/dev/null || { echo "callgrind-list: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }

TMP=$(mktemp -d)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

export AUTH_JWT_SECRET="callgrind-$(date +%s)-secret-of-at-least-32-bytes"
export SQLITE_PATH="$TMP/cg.db" LISTEN=127.0.0.1:0 LOG_LEVEL=info STORAGE=sqlite
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.out" \
    "$BIN" serve 2>"$TMP/server.log" &
PID=$!
PORT=""
for _ in $(seq 1 600); do
    PORT=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$TMP/server.log" | head -n1)
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || { echo "callgrind-list: the server did not start:" >&2; cat "$TMP/server.log" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000beef --instance bench --name Bench)
for i in $(seq 1 "$NOTES"); do
    curl -sf -o /dev/null -X POST "$URL/targets/cg-target/notes" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' -d "{\"data\": {\"text\": \"note $i\", \"n\": $i}}"
done
if [ "${OTHER:-0}" -gt 0 ]; then
    OTOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000cafe --instance other --name Other)
    seq 1 "$OTHER" | xargs -P 4 -I{} curl -sf -o /dev/null -X POST "$URL/targets/cg-target/notes" \
        -H "Authorization: Bearer $OTOKEN" -H 'Content-Type: application/json' \
        -d '{"data": {"text": "another tenant'"'"'s note {}"}}'
fi
NOTE=$(curl -sf "$URL/targets/cg-target/notes?limit=1" -H "Authorization: Bearer $TOKEN" |
    sed -n 's/.*"uuid": *"\([0-9a-f-]*\)".*/\1/p')
case $ENDPOINT in
list) set -- "$URL/targets/cg-target/notes?limit=$LIMIT" ;;
get) set -- "$URL/targets/cg-target/notes/$NOTE" ;;
health) set -- "$URL/health" ;;
post) set -- -X POST "$URL/targets/cg-post/notes" -H 'Content-Type: application/json' \
    -d '{"data": {"text": "benchmark note", "n": 42, "tags": ["a", "b"]}}' ;;
*) echo "callgrind-list: ENDPOINT is list, get, health or post, not '$ENDPOINT'" >&2; exit 2 ;;
esac
# One request outside the count warms the caches (statements, connections, the token's).
curl -sf -o "$TMP/page.json" -H "Authorization: Bearer $TOKEN" "$@"
callgrind_control -i on "$PID" >/dev/null
for _ in $(seq 1 "$REQUESTS"); do
    curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" "$@"
done
callgrind_control -i off "$PID" >/dev/null
kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
PID=""
[ -z "${KEEP_OUT:-}" ] || cp "$TMP/cg.out" "$KEEP_OUT"
TOTAL=$(callgrind_annotate "$TMP/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
[ "$ENDPOINT" = list ] && what="list requests of $LIMIT notes" || what="$ENDPOINT requests"
echo "callgrind: $REQUESTS $what: $TOTAL instructions, $((TOTAL / REQUESTS)) per request"
echo "answer bytes: $(wc -c < "$TMP/page.json")"
echo "top functions, inclusive:"
callgrind_annotate --inclusive=yes "$TMP/cg.out" 2>/dev/null | sed -n '/file:function/,$p' |
    grep -v -e '^-' -e 'file:function' -e "'2" -e '???:0x' -e '^ *[0-9,]* *([0-9.]*%) *src/' | sed -n '1,25p'
