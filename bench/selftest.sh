#!/bin/sh
# `make bench-check`: checks the benchmark's own tools, so that a figure they print can be
# trusted. About 20 s; needs what bench/deps.sh installs and `make bench-tools`.
#   - hello answers its 200-byte JSON on a kept-alive connection;
#   - clients hold counts answers, and counts a server that accepts and closes at once
#     (a thread-per-connection server at its limit) as refusals;
#   - clients slowloris counts /health probes a server never answers (it once printed
#     "0 of 0" for them) and the probes a healthy server answers;
#   - report.py says met or MISSED on each side of every target of issue 6;
#   - the Flask twin serves its notes and tasks routes and refuses a request without a token.
# Prints one line per check and "N passed, N failed"; exits 1 when a check failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=${BENCH_TOOLS:-$ROOT/build/release/bench}
TMP=$(mktemp -d)
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0 failed=0
START=$(date +%s)
check() { # NAME COMMAND...: one check, passed when the command succeeds
    name=$1
    shift
    t=$(($(date +%s) - START))
    if "$@"; then passed=$((passed + 1)); echo "ok   ${t}s $name"; else failed=$((failed + 1)); echo "FAIL ${t}s $name"; fi
}
# kv FILE LINE-PREFIX KEY: the value of KEY on the first line of FILE that starts with the prefix.
kv() { sed -n "/^$2/{s/.* $3=\([^ ]*\).*/\1/p;q}" "$1"; }
wait_line() { # FILE PATTERN
    for _ in $(seq 1 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    return 1
}
# A server in Python on a free port that does one thing wrong: `close` accepts and
# closes at once, `silent` listens and never accepts. Sets PY_PORT (not to be called in a
# subshell, so that the cleanup knows its pid).
pyserver() {
    python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4096)
print(s.getsockname()[1], flush=True)
end = time.time() + 60
while time.time() < end:
    if sys.argv[1] == "close":
        s.settimeout(1)
        try: s.accept()[0].close()
        except socket.timeout: pass
    else:
        time.sleep(0.2)
' "$1" >"$TMP/py-$1.out" &
    PIDS="$PIDS $!"
    wait_line "$TMP/py-$1.out" '^[0-9]' || { echo "selftest: the python server did not start" >&2; exit 1; }
    PY_PORT=$(head -n1 "$TMP/py-$1.out")
}

[ -x "$TOOLS/hello" ] && [ -x "$TOOLS/clients" ] || { echo "selftest: make bench-tools first" >&2; exit 1; }

# hello
"$TOOLS/hello" 0 >"$TMP/hello.out" 2>"$TMP/hello.err" &
PIDS="$PIDS $!"
wait_line "$TMP/hello.out" '^port ' || { echo "selftest: hello did not start" >&2; exit 1; }
HP=$(sed -n 's/^port //p' "$TMP/hello.out")
curl -sv "http://127.0.0.1:$HP/" "http://127.0.0.1:$HP/" -o "$TMP/h1" -o "$TMP/h2" 2>"$TMP/curl.err"
check "hello answers 200 bytes of JSON" sh -c "[ \$(wc -c <'$TMP/h2') -eq 200 ] && python3 -m json.tool '$TMP/h2' >/dev/null"
check "hello keeps the connection alive" grep -q 'Re-using existing connection' "$TMP/curl.err"

# clients hold
"$TOOLS/clients" hold -n 300 --max-seconds 30 "$HP" >"$TMP/hold.out" &
CP=$!
wait_line "$TMP/hold.out" '^hold: ready'
kill -TERM $CP
wait $CP
check "hold: 300 opened and answered" [ "$(kv "$TMP/hold.out" 'hold: ready' answered)" = 300 ]
check "hold: none refused" [ "$(kv "$TMP/hold.out" 'hold: ready' closed)$(kv "$TMP/hold.out" 'hold: ready' refused)" = 00 ]
check "hold: a second request answered on all 300" [ "$(kv "$TMP/hold.out" 'hold: done' second_answered)" = 300 ]
pyserver close
"$TOOLS/clients" hold -n 50 --max-seconds 20 "$PY_PORT" >"$TMP/hold2.out" &
CP=$!
wait_line "$TMP/hold2.out" '^hold: ready'
kill -TERM $CP
wait $CP
check "hold: a server that accepts and closes refuses all 50" [ "$(kv "$TMP/hold2.out" 'hold: ready' closed)" = 50 ]

# clients slowloris: probes of a server that never answers are counted
pyserver silent
"$TOOLS/clients" slowloris -n 20 --seconds 1 "$PY_PORT" >"$TMP/slow.out"
probes=$(kv "$TMP/slow.out" 'slowloris: done' probes)
check "slowloris: unanswered probes are counted" [ "${probes:-0}" -ge 2 ]
check "slowloris: none of them answered" [ "$(kv "$TMP/slow.out" 'slowloris: done' probes_answered)" = 0 ]
check "slowloris: all of them timed out" [ "$(kv "$TMP/slow.out" 'slowloris: done' probes_timed_out)" = "$probes" ]
"$TOOLS/clients" slowloris -n 100 --seconds 1.5 "$HP" >"$TMP/slow2.out"
probes=$(kv "$TMP/slow2.out" 'slowloris: done' probes)
check "slowloris: a healthy server is probed" [ "${probes:-0}" -ge 3 ]
check "slowloris: and answers every probe" [ "$(kv "$TMP/slow2.out" 'slowloris: done' probes_answered)" = "$probes" ]
check "slowloris: 100 trickling, none cut off within 1.5 s" [ "$(kv "$TMP/slow2.out" 'slowloris: done' still_open)" = 100 ]

# report.py: targets on both sides of their thresholds
report() { # MODE RESULTS-TEXT FACTS-TEXT
    printf '%s\n' "$2" >"$TMP/r"
    printf '%s\n' "$3" >"$TMP/f"
    python3 "$ROOT/bench/report.py" "$1" "$TMP/r" "$TMP/f"
}
META="meta version=0 storage=sqlite cores=2 duration=1s threads=1 connections=64"
GOOD="hello|health|100000|0.5|1|1|0|0
ours|health|90000|0.5|2|1|0|0
twin|health|6000|10|30|1|0|0
ours|get|50000|1|3|1|0|0
twin|get|5000|10|30|1|0|0
ours|list|20000|2|9|1|0|0
twin|list|3000|10|30|1|0|0
ours|post|12000|2|9|1|0|0
twin|post|3000|10|30|1|0|0"
report compare "$GOOD" "$META" >"$TMP/good.txt"
check "report: every target met" [ "$(grep -c '  met ' "$TMP/good.txt")" = 4 ]
BAD=$(printf '%s\n' "$GOOD" | sed 's/^ours|list|20000|2|9|/ours|list|20000|2|11|/; s/^ours|post|12000|/ours|post|9000|/; s/^ours|health|90000|/ours|health|79000|/')
report compare "$BAD" "$META" >"$TMP/bad.txt"
check "report: list p99 over 10 ms is a miss" grep -q 'list 25 notes  MISSED' "$TMP/bad.txt"
check "report: POST under 10,000 req/s is a miss" grep -q 'POST a note    MISSED' "$TMP/bad.txt"
check "report: /health under 0.8x hello is a miss" grep -q 'GET /health    MISSED' "$TMP/bad.txt"
report idle "ours|health|0|0|0|0|0|500
ours|get|0|0|0|0|0|500" "$META
hold: ready connections=10000 opened=10000 refused=0 closed=8976 timeout=0 answered=1024
hold: done held=1024 closed_by_server_while_idle=0 second_answered=1024 second_failed=0
ours rss_hwm_mb=60" >"$TMP/idle.txt"
check "report: refused idle connections and a wrk that got no answer are misses" \
    grep -q 'idle conns     MISSED  8976 refused (0); /health p99 none' "$TMP/idle.txt"
report attack "" "$META
slowloris: ready connections=1100 opened=1100 refused=0 closed=0 timeout=0
slowloris: done seconds=40 still_open=0 cut_off=1100 probes=80 probes_answered=80 probes_timed_out=0 probes_waiting=0
noread: ready connections=40 opened=40 refused=0 closed=0 timeout=0
noread: done seconds=10 probes=20 probes_answered=20 rss_peak_mb=390
ours rss_noread_hwm_mb=399 rss_after_noread_mb=251" >"$TMP/attack.txt"
check "report: slowloris with every probe answered is met" grep -q 'slowloris      met' "$TMP/attack.txt"
check "report: 251 MB after the non-readers is a miss" grep -q 'non-reading    MISSED' "$TMP/attack.txt"

# the twin
if command -v gunicorn >/dev/null; then
    export AUTH_JWT_SECRET=selftest-secret-of-at-least-32-bytes
    TWIN_DB=$TMP/twin.db gunicorn --workers 2 --bind 127.0.0.1:0 --chdir "$ROOT/bench/twin" \
        --error-logfile "$TMP/twin.log" app:app &
    PIDS="$PIDS $!"
    wait_line "$TMP/twin.log" 'Booting worker'
    TP=$(sed -n 's/.*Listening at: http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/twin.log")
    T=$(/usr/bin/python3 -c 'import jwt, os, time; print(jwt.encode({"sub": "u1", "name": "U", "instance_id": "i1",
        "exp": int(time.time()) + 600}, os.environ["AUTH_JWT_SECRET"], algorithm="HS256"))')
    U="http://127.0.0.1:$TP"
    for i in 1 2 3; do
        curl -sf -o "$TMP/n$i.json" -X POST "$U/targets/t/notes" -H "Authorization: Bearer $T" \
            -H 'Content-Type: application/json' -d "{\"data\": {\"n\": $i}, \"is_pinned\": $([ $i = 1 ] && echo true || echo false)}"
    done
    N=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["uuid"])' "$TMP/n2.json")
    check "twin: /health" sh -c "curl -sf '$U/health' | grep -q '\"status\":\"ok\"'"
    check "twin: GET a note" sh -c "curl -sf '$U/targets/t/notes/$N' -H 'Authorization: Bearer $T' | grep -q '\"n\":2'"
    check "twin: list pinned first, then newest, paged" sh -c "
        curl -sf '$U/targets/t/notes?limit=2' -H 'Authorization: Bearer $T' >'$TMP/p1.json' &&
        python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); assert [i[\"data\"][\"n\"] for i in p[\"items\"]] == [1, 3] and p[\"next_cursor\"]' '$TMP/p1.json' &&
        C=\$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[\"next_cursor\"])' '$TMP/p1.json') &&
        curl -sf \"$U/targets/t/notes?limit=2&cursor=\$C\" -H 'Authorization: Bearer $T' |
        python3 -c 'import json, sys; p = json.load(sys.stdin); assert [i[\"data\"][\"n\"] for i in p[\"items\"]] == [2] and p[\"next_cursor\"] is None'"
    check "twin: 401 without a token" [ "$(curl -s -o /dev/null -w '%{http_code}' "$U/targets/t/notes")" = 401 ]
    for st in open done open open; do
        curl -sf -o "$TMP/task.json" -X POST "$U/tasks" -H "Authorization: Bearer $T" \
            -H 'Content-Type: application/json' -d "{\"title\": \"t\", \"status\": \"$st\", \"assignee_uuid\": \"a1\", \"due_at\": 1}"
    done
    check "twin: tasks numbered 1, 2, 3, 4" grep -q '"item_number":4' "$TMP/task.json"
    check "twin: task counters" sh -c "curl -sf '$U/tasks/counters' -H 'Authorization: Bearer $T' |
        python3 -c 'import json, sys; c = json.load(sys.stdin); assert c[\"by_status\"][\"open\"] == 3 and c[\"overdue\"] == 3 and c[\"total\"] == 4'"
    check "twin: tasks filtered, paged" sh -c "
        curl -sf '$U/tasks?status=open&assignee_uuid=a1&limit=2' -H 'Authorization: Bearer $T' >'$TMP/t1.json' &&
        C=\$(python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); assert len(p[\"items\"]) == 2; print(p[\"next_cursor\"])' '$TMP/t1.json') &&
        curl -sf \"$U/tasks?status=open&assignee_uuid=a1&limit=2&cursor=\$C\" -H 'Authorization: Bearer $T' >'$TMP/t2.json' &&
        python3 -c 'import json, sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); assert sorted(i[\"item_number\"] for i in a[\"items\"] + b[\"items\"]) == [1, 3, 4] and b[\"next_cursor\"] is None' '$TMP/t1.json' '$TMP/t2.json'"
else
    echo "skip twin (gunicorn is missing: bench/deps.sh)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
