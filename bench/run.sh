#!/bin/sh
# `make bench` (docs/performance.md): actionstools measured with wrk on a fresh store,
# beside two yardsticks started by this script in the same run on the same machine: the
# libmicrohttpd epoll hello server (build/release/bench/hello, the ceiling of our HTTP
# library) and a Flask + gunicorn twin of the same routes (bench/twin/). Every figure is
# printed with its ratio to our /health and to the twin, and the targets of issue 6 are
# checked from those ratios (absolute numbers are noisy on a shared machine).
#
#   bench/run.sh [BINARY]               compare: /health, GET a note, a list of 25, POST;
#                                       task counters, a filtered list of 25 tasks, POST a task
#   bench/run.sh --idle N [BINARY]      hold N idle keep-alive connections while wrk measures
#   bench/run.sh --attack [BINARY]      slowloris clients, then clients that never read
#
# Environment: DURATION (2s), WRK_THREADS (1), WRK_CONNECTIONS (64) for every wrk run;
# ROUNDS (3): compare mode measures every endpoint that many times over, interleaved, and
# reports each figure's median;
# CONNECTIONS=N is --idle N. STORAGE=dynamodb with AT_DYNAMODB_ENDPOINT (see
# scripts/with-dynalite.sh) measures the dynamodb backend alone, ratios to its own /health.
# --attack: SLOWLORIS (1100), SLOWLORIS_SECONDS (40), NOREAD (40), NOREAD_SECONDS (10),
# BIG_NOTES (100) notes of BIG_NOTE_KB (100) KB listed with limit=100.
# HTTP_MAX_CONNECTIONS and the server's other settings pass through from the environment.
# KEEP=1 keeps the temporary folder (wrk outputs, server logs, the raw facts).
# PROFILE=1 (compare mode) records our server with perf during each of its wrk runs and
# prints where the time went; perf costs throughput, so such a run's figures are not the
# figures of record.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=compare
IDLE=${CONNECTIONS:-}
BIN=""
usage() { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --idle) [ $# -ge 2 ] || usage; IDLE=$2; shift 2 ;;
    --attack) MODE=attack; shift ;;
    -h | --help) usage ;;
    -*) echo "bench: unknown option $1" >&2; usage ;;
    *) BIN=$1; shift ;;
    esac
done
[ -n "$IDLE" ] && [ "$MODE" = compare ] && MODE=idle
case $IDLE in *[!0-9]*) echo "bench: --idle / CONNECTIONS wants a number, not '$IDLE'" >&2; exit 2 ;; esac
BIN=$(realpath "${BIN:-$ROOT/build/release/actionstools}")
TOOLS=${BENCH_TOOLS:-$ROOT/build/release/bench}
DURATION=${DURATION:-2s}
ROUNDS=${ROUNDS:-3}
case $ROUNDS in '' | *[!0-9]* | 0) echo "bench: ROUNDS wants a number of at least 1, not '$ROUNDS'" >&2; exit 2 ;; esac
WRK_THREADS=${WRK_THREADS:-1}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-64}
STORAGE=${STORAGE:-sqlite}
export STORAGE
[ "$STORAGE" = sqlite ] || [ "$MODE" = compare ] ||
    { echo "bench: --idle and --attack run on the embedded store only" >&2; exit 2; }
[ -z "${PROFILE:-}" ] || command -v perf >/dev/null || { echo "bench: PROFILE=1 needs perf (apt-get install linux-perf)" >&2; exit 1; }
for tool in wrk curl python3; do
    command -v $tool >/dev/null || { echo "bench: $tool is missing (bench/deps.sh installs it)" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "bench: no server binary at $BIN (make build)" >&2; exit 1; }
[ -x "$TOOLS/clients" ] && [ -x "$TOOLS/hello" ] ||
    { echo "bench: $TOOLS/hello and clients are missing (make bench-tools)" >&2; exit 1; }

TMP=$(mktemp -d)
PIDS=""
cleanup() {
    for p in $PIDS; do kill -INT "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "${KEEP:-}" ]; then echo "bench: kept $TMP (wrk outputs, server logs, facts)" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
RESULTS=$TMP/results FACTS=$TMP/facts
: >"$RESULTS"
: >"$TMP/cpu"
: >"$FACTS"
fact() { echo "$*" >>"$FACTS"; }

# Idle and attacking clients need a file descriptor each, on both sides.
need_fds() {
    hard=$(ulimit -H -n)
    if [ "$hard" != unlimited ] && [ "$hard" -lt "$1" ]; then
        echo "bench: $1 file descriptors needed, the hard limit is $hard (raise it: ulimit -H -n, limits.conf)" >&2
        exit 1
    fi
    ulimit -n "$hard"
}

export AUTH_JWT_SECRET="bench-$(date +%s)-secret-of-at-least-32-bytes"
export SQLITE_PATH="$TMP/bench.db" LISTEN=127.0.0.1:0
if [ "$STORAGE" = dynamodb ]; then
    [ -n "${AT_DYNAMODB_ENDPOINT:-}" ] || { echo "bench: STORAGE=dynamodb needs AT_DYNAMODB_ENDPOINT" >&2; exit 1; }
    export DYNAMODB_ENDPOINT="$AT_DYNAMODB_ENDPOINT" AWS_REGION=us-east-1 \
        AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret
    "$BIN" setup >/dev/null 2>"$TMP/setup.log" || { cat "$TMP/setup.log" >&2; exit 1; }
fi

# wait_for FILE SED-EXPRESSION: prints the first match of the expression in FILE, waiting
# up to 10 s for it to appear.
wait_for() {
    for _ in $(seq 1 200); do
        v=$(sed -n "$2" "$1" 2>/dev/null | head -n1)
        [ -n "$v" ] && { echo "$v"; return 0; }
        sleep 0.05
    done
    return 1
}

start_ours() {
    # Request log lines go to a file, as they would to a log collector.
    LOG_LEVEL=info "$BIN" serve 2>"$TMP/server.log" &
    OURS_PID=$!
    PIDS="$PIDS $OURS_PID"
    OURS_PORT=$(wait_for "$TMP/server.log" 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p') ||
        { echo "bench: actionstools did not start:" >&2; cat "$TMP/server.log" >&2; exit 1; }
    fact "ours max_connections=$(sed -n 's/.*"msg":"listening".*"max_connections":\([0-9]*\).*/\1/p' "$TMP/server.log" | head -n1)"
    OURS="http://127.0.0.1:$OURS_PORT"
}

start_twin() {
    command -v gunicorn >/dev/null || { echo "bench: gunicorn is missing (bench/deps.sh installs it)" >&2; exit 1; }
    TWIN_DB=$TMP/twin.db gunicorn --workers 5 --bind 127.0.0.1:0 --chdir "$ROOT/bench/twin" \
        --error-logfile "$TMP/twin.log" app:app &
    TWIN_PID=$!
    PIDS="$PIDS $TWIN_PID"
    TWIN_PORT=$(wait_for "$TMP/twin.log" 's/.*Listening at: http:\/\/127.0.0.1:\([0-9]*\).*/\1/p') ||
        { echo "bench: the twin did not start:" >&2; cat "$TMP/twin.log" >&2; exit 1; }
    TWIN="http://127.0.0.1:$TWIN_PORT"
    for _ in $(seq 1 100); do
        [ "$(grep -c 'Booting worker' "$TMP/twin.log")" -ge 5 ] && curl -sf -o /dev/null "$TWIN/health" && break
        sleep 0.1
    done
}

start_hello() {
    "$TOOLS/hello" 0 >"$TMP/hello.out" 2>"$TMP/hello.err" &
    HELLO_PID=$!
    PIDS="$PIDS $!"
    HELLO_PORT=$(wait_for "$TMP/hello.out" 's/^port \([0-9]*\)$/\1/p') ||
        { echo "bench: the hello server did not start" >&2; exit 1; }
}

# seed URL: 30 notes on one record (a full page of 25 plus some); sets NOTE to the last.
TARGET=bench-target
seed() {
    for i in $(seq 1 30); do
        curl -sf -o "$TMP/last.json" -X POST "$1/targets/$TARGET/notes" -H "Authorization: Bearer $AT_TOKEN" \
            -H 'Content-Type: application/json' -d "{\"data\": {\"text\": \"note $i\", \"n\": $i}}" ||
            { echo "bench: seeding $1 failed" >&2; exit 1; }
    done
    NOTE=$(sed -n 's/.*"uuid": *"\([0-9a-f-]*\)".*/\1/p' "$TMP/last.json")
}

# seed_tasks URL: 200 tasks of the bench tenant; the even ones open and assigned to
# ASSIGNEE (100: four full pages of the filtered list), the others in_progress or done.
ASSIGNEE=00000000-0000-4000-8000-0000000000a1
seed_tasks() {
    for i in $(seq 1 200); do
        case $((i % 4)) in 1) st=in_progress ;; 3) st=done ;; *) st=open ;; esac
        a=""
        [ $((i % 2)) = 0 ] && a=", \"assignee_uuid\": \"$ASSIGNEE\""
        curl -sf -o /dev/null -X POST "$1/tasks" -H "Authorization: Bearer $AT_TOKEN" \
            -H 'Content-Type: application/json' -d "{\"title\": \"task $i\", \"status\": \"$st\"$a}" ||
            { echo "bench: seeding tasks on $1 failed" >&2; exit 1; }
    done
}
TASK_LIST="/tasks?status=open&assignee_uuid=$ASSIGNEE&limit=25"
TASK_BODY="{\"title\": \"benchmark task\", \"status\": \"open\", \"assignee_uuid\": \"$ASSIGNEE\"}"

# measure_posts SERVER URL: POST a task with wrk as a user of another tenant (its
# counters are never read, so each create is the create alone: number, task, change count).
measure_posts() {
    saved=$AT_TOKEN
    AT_TOKEN=$POST_TOKEN
    measure "$1" task_post "$2" POST "$TASK_BODY"
    AT_TOKEN=$saved
}

# server_pids SERVER: the processes of a server (the twin's master and its workers).
server_pids() {
    case $1 in
    ours) echo "$OURS_PID" ;;
    hello) echo "$HELLO_PID" ;;
    twin) echo "$TWIN_PID $(sed -n 's/.*Booting worker with pid: \([0-9]*\).*/\1/p' "$TMP/twin.log")" ;;
    esac
}
# cpu_ticks PID...: user + system CPU time the processes used so far, in clock ticks.
cpu_ticks() {
    for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0; done |
        awk '{s += $1} END {print s + 0}'
}

# measure SERVER ENDPOINT URL [METHOD BODY]: one wrk run, one line in $RESULTS, and a
# fact with the CPU time the server used meanwhile (a busy machine moves req/s much more
# than the CPU a request costs).
POST_BODY='{"data": {"text": "benchmark note", "n": 42, "tags": ["a", "b"]}}'
measure() {
    printf '  wrk %-6s %-7s %s\n' "$1" "$2" "$3" >&2
    perf_pid=""
    if [ -n "${PROFILE:-}" ] && [ "$1" = ours ]; then
        # System-wide, filtered by our pid when reported: `perf record -p` would miss the
        # threads made after it attached (a thread per connection, in today's server).
        # It starts disabled and is enabled through its control fifo, which acknowledges once
        # it records, so the whole wrk run is in the profile.
        rm -f "$TMP/perf.ctl" "$TMP/perf.ack"
        mkfifo "$TMP/perf.ctl" "$TMP/perf.ack"
        perf record -a -F 499 -g -D -1 --control "fifo:$TMP/perf.ctl,$TMP/perf.ack" \
            -o "$TMP/perf-$2.data" >"$TMP/perf-$2.log" 2>&1 &
        perf_pid=$!
        timeout 30 sh -c 'echo enable >"$1" && head -c 3 "$2" >/dev/null' _ "$TMP/perf.ctl" "$TMP/perf.ack" ||
            { echo "bench: perf did not start:" >&2; cat "$TMP/perf-$2.log" >&2; exit 1; }
    fi
    pids=$(server_pids "$1")
    # shellcheck disable=SC2086 # a list of pids
    ticks0=$(cpu_ticks $pids)
    BENCH_LABEL="$1|$2" BENCH_OUT=$RESULTS BENCH_METHOD=${4:-GET} BENCH_BODY=${5:-} \
        wrk -t"$WRK_THREADS" -c"$WRK_CONNECTIONS" -d"$DURATION" --latency -s "$ROOT/bench/wrk.lua" "$3" \
        >"$TMP/wrk-$1-$2.txt" 2>&1 || { cat "$TMP/wrk-$1-$2.txt" >&2; exit 1; }
    # shellcheck disable=SC2086
    echo "$1|$2|$(($(cpu_ticks $pids) - ticks0))|$(getconf CLK_TCK)" >>"$TMP/cpu"
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"
        wait "$perf_pid" || true
        PROFILED="${PROFILED:-} $2"
    fi
}

# Where our server's time went during each profiled run: the symbols with the most
# samples of their own (the kernel's included), as perf report lists them.
print_profiles() {
    for e in ${PROFILED:-}; do
        echo
        echo "profile of actionstools during wrk $e (perf: share of the server's samples spent in each function itself, top 15):"
        perf report -i "$TMP/perf-$e.data" --pid "$OURS_PID" --percentage relative --stdio --no-children \
            -g none --sort dso,symbol 2>/dev/null | grep -v '^#' | grep '%' | sed 's/ *- *- *$//' | head -n 15
    done
}

# status_mb PID FIELD: VmRSS or VmHWM of a process in MB (0 when it is gone).
status_mb() {
    awk -v f="$2:" '$1 == f {printf "%.1f", $2 / 1024; found = 1} END {if (!found) print 0}' \
        "/proc/$1/status" 2>/dev/null || echo 0
}
# Forgets a process's peak so that VmHWM reads the peak from now on (Linux clear_refs).
reset_peak() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null || true; }

fact "meta version=$("$BIN" --version | cut -d' ' -f2) storage=$STORAGE mode=$MODE cores=$(nproc) duration=$DURATION rounds=$ROUNDS \
threads=$WRK_THREADS connections=$WRK_CONNECTIONS load_before=$(cut -d' ' -f1 /proc/loadavg) \
mhd=$(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?') \
flask=$(dpkg-query -W -f='${Version}' python3-flask 2>/dev/null | cut -d- -f1) \
gunicorn=$(dpkg-query -W -f='${Version}' gunicorn 2>/dev/null | cut -d- -f1)"

case $MODE in
compare)
    start_ours
    AT_TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000beef --instance bench --name Bench)
    POST_TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000beef --instance bench-post --name Bench)
    export AT_TOKEN
    seed "$OURS"
    OURS_NOTE=$NOTE
    seed_tasks "$OURS"
    if [ "$STORAGE" = sqlite ]; then
        start_twin
        start_hello
        seed "$TWIN"
        TWIN_NOTE=$NOTE
        seed_tasks "$TWIN"
        echo "bench: wrk -t$WRK_THREADS -c$WRK_CONNECTIONS -d$DURATION, one endpoint at a time, servers interleaved" >&2
        measure hello health "http://127.0.0.1:$HELLO_PORT/"
    fi
    reset_peak "$OURS_PID"
    # Interleaved, so that a neighbour's burst on the machine hits both sides alike, and
    # ROUNDS times over: the report takes each figure's median (a shared machine moves
    # one short run by a third now and then).
    round=0
    while [ $round -lt "$ROUNDS" ]; do
    round=$((round + 1))
    echo "bench: round $round of $ROUNDS" >&2
    [ $round -gt 1 ] && [ "$STORAGE" = sqlite ] && measure hello health "http://127.0.0.1:$HELLO_PORT/"
    measure ours health "$OURS/health"
    [ "$STORAGE" = sqlite ] && measure twin health "$TWIN/health"
    measure ours get "$OURS/targets/$TARGET/notes/$OURS_NOTE"
    [ "$STORAGE" = sqlite ] && measure twin get "$TWIN/targets/$TARGET/notes/$TWIN_NOTE"
    measure ours list "$OURS/targets/$TARGET/notes?limit=25"
    [ "$STORAGE" = sqlite ] && measure twin list "$TWIN/targets/$TARGET/notes?limit=25"
    measure ours post "$OURS/targets/$TARGET-post/notes" POST "$POST_BODY"
    [ "$STORAGE" = sqlite ] && measure twin post "$TWIN/targets/$TARGET-post/notes" POST "$POST_BODY"
    # Tasks: counters (ours: from tasks_counters, computed once; the twin counts every
    # time), the open tasks of one assignee (a list of 25 filtered on two attributes),
    # a create (ours: a number, the task, the change count).
    measure ours counters "$OURS/tasks/counters"
    [ "$STORAGE" = sqlite ] && measure twin counters "$TWIN/tasks/counters"
    measure ours task_list "$OURS$TASK_LIST"
    [ "$STORAGE" = sqlite ] && measure twin task_list "$TWIN$TASK_LIST"
    measure_posts ours "$OURS/tasks"
    [ "$STORAGE" = sqlite ] && measure_posts twin "$TWIN/tasks"
    done
    fact "ours rss_hwm_mb=$(status_mb "$OURS_PID" VmHWM) rss_mb=$(status_mb "$OURS_PID" VmRSS)"
    if [ "$STORAGE" = sqlite ]; then
        twin_mb=0
        for p in $TWIN_PID $(sed -n 's/.*Booting worker with pid: \([0-9]*\).*/\1/p' "$TMP/twin.log"); do
            twin_mb=$(echo "$twin_mb $(status_mb "$p" VmHWM)" | awk '{print $1 + $2}')
        done
        fact "twin rss_hwm_mb=$twin_mb"
    fi
    ;;
idle)
    need_fds $((IDLE + 1000))
    start_ours
    AT_TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000beef --instance bench --name Bench)
    export AT_TOKEN
    seed "$OURS"
    reset_peak "$OURS_PID"
    echo "bench: opening $IDLE idle keep-alive connections" >&2
    "$TOOLS/clients" hold -n "$IDLE" --pid "$OURS_PID" --max-seconds 600 "$OURS_PORT" >"$TMP/clients.out" &
    CLIENTS_PID=$!
    PIDS="$PIDS $CLIENTS_PID"
    for _ in $(seq 1 1200); do
        grep -q '^hold: ready' "$TMP/clients.out" && break
        kill -0 "$CLIENTS_PID" 2>/dev/null || break
        sleep 0.1
    done
    grep -q '^hold: ready' "$TMP/clients.out" || { echo "bench: the idle clients did not get ready" >&2; exit 1; }
    fact "ours rss_idle_mb=$(status_mb "$OURS_PID" VmRSS)"
    measure ours health "$OURS/health"
    measure ours get "$OURS/targets/$TARGET/notes/$NOTE"
    kill -TERM "$CLIENTS_PID"
    wait "$CLIENTS_PID" || true
    cat "$TMP/clients.out" >>"$FACTS"
    fact "ours rss_hwm_mb=$(status_mb "$OURS_PID" VmHWM) rss_mb=$(status_mb "$OURS_PID" VmRSS)"
    ;;
attack)
    SLOWLORIS=${SLOWLORIS:-1100} NOREAD=${NOREAD:-40}
    need_fds $((SLOWLORIS + NOREAD + 1000))
    start_ours
    AT_TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-00000000beef --instance bench --name Bench)
    export AT_TOKEN
    # Big notes first, while the server is free: BIG_NOTES of BIG_NOTE_KB each.
    BIG_NOTES=${BIG_NOTES:-100} BIG_NOTE_KB=${BIG_NOTE_KB:-100}
    printf '{"data": {"text": "%s"}}' "$(head -c $((BIG_NOTE_KB * 1000)) /dev/zero | tr '\0' x)" >"$TMP/big.json"
    for _ in $(seq 1 "$BIG_NOTES"); do
        curl -sf -o /dev/null -X POST "$OURS/targets/bench-big/notes" -H "Authorization: Bearer $AT_TOKEN" \
            -H 'Content-Type: application/json' --data-binary @"$TMP/big.json" ||
            { echo "bench: seeding the big notes failed" >&2; exit 1; }
    done
    BIG_PATH="/targets/bench-big/notes?limit=100"
    fact "big notes=$BIG_NOTES note_kb=$BIG_NOTE_KB answer_kb=$(curl -s -o /dev/null -w '%{size_download}' \
        -H "Authorization: Bearer $AT_TOKEN" "$OURS$BIG_PATH" | awk '{printf "%.0f", $1 / 1000}')"
    fact "ours rss_start_mb=$(status_mb "$OURS_PID" VmRSS)"

    echo "bench: $SLOWLORIS slowloris connections for ${SLOWLORIS_SECONDS:-40} s, /health probed meanwhile" >&2
    "$TOOLS/clients" slowloris -n "$SLOWLORIS" --seconds "${SLOWLORIS_SECONDS:-40}" --pid "$OURS_PID" \
        "$OURS_PORT" >>"$FACTS"
    sleep 1 # the server lets go of what the slow clients held

    echo "bench: $NOREAD clients that ask for $BIG_PATH and never read, for ${NOREAD_SECONDS:-10} s" >&2
    fact "ours rss_before_noread_mb=$(status_mb "$OURS_PID" VmRSS)"
    reset_peak "$OURS_PID"
    "$TOOLS/clients" noread -n "$NOREAD" --auth --path "$BIG_PATH" --seconds "${NOREAD_SECONDS:-10}" \
        --pid "$OURS_PID" "$OURS_PORT" >>"$FACTS"
    fact "ours rss_left_mb=$(status_mb "$OURS_PID" VmRSS)"
    sleep 5
    fact "ours rss_after_noread_mb=$(status_mb "$OURS_PID" VmRSS) rss_noread_hwm_mb=$(status_mb "$OURS_PID" VmHWM)"
    curl -sf -o /dev/null "$OURS/health" && fact "ours alive_after=1" || fact "ours alive_after=0"
    ;;
esac
fact "meta load_after=$(cut -d' ' -f1 /proc/loadavg)"
python3 "$ROOT/bench/report.py" "$MODE" "$RESULTS" "$FACTS" "$TMP/cpu"
print_profiles
