#!/bin/sh
# Starts and stops dynalite, the local DynamoDB-compatible server the tests use
# (installed by `make deps` from package-lock.json; needs Node.js >= 20).
#
#   scripts/dynalite.sh start DIR [OWNER_PID]
#       Starts an in-memory dynalite on 127.0.0.1 on a free port, waits until it
#       answers, and prints the port (alone) on stdout. DIR receives dynalite.pid,
#       dynalite.port and dynalite.log. With OWNER_PID, dynalite is also stopped when
#       that process ends (so a crashed test leaves nothing running).
#   scripts/dynalite.sh stop DIR
#       Stops the dynalite started with DIR.
#   scripts/dynalite.sh endpoint DIR
#       Prints http://127.0.0.1:PORT for the dynalite started with DIR.
#
# Example: dir=$(mktemp -d); port=$(scripts/dynalite.sh start "$dir")
#          AT_DYNAMODB_ENDPOINT=http://127.0.0.1:$port ./build/asan/tests/unit/store/test_store_dynamodb
#          scripts/dynalite.sh stop "$dir"
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
cli="$root/node_modules/dynalite/cli.js"

usage() {
    echo "usage: $0 start DIR [OWNER_PID] | stop DIR | endpoint DIR" >&2
    exit 2
}

free_port() {
    node -e 'const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });'
}

answers() {
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/" 2>/dev/null
}

start() {
    dir=$1
    owner=${2:-}
    if ! command -v node >/dev/null 2>&1; then
        echo "dynalite.sh: node is not installed; run 'make deps'" >&2
        exit 3
    fi
    if [ ! -f "$cli" ]; then
        echo "dynalite.sh: $cli is missing; run 'make deps' (npm ci)" >&2
        exit 3
    fi
    mkdir -p "$dir"
    tries=0
    while [ $tries -lt 5 ]; do
        tries=$((tries + 1))
        port=$(free_port)
        node "$cli" --host 127.0.0.1 --port "$port" --createTableMs 0 --deleteTableMs 0 \
            --updateTableMs 0 </dev/null >"$dir/dynalite.log" 2>&1 &
        pid=$!
        waited=0
        while [ $waited -lt 150 ]; do # 15 s
            if ! kill -0 "$pid" 2>/dev/null; then
                break # exited: the port was taken meanwhile, or a real failure
            fi
            if answers "$port"; then
                echo "$pid" >"$dir/dynalite.pid"
                echo "$port" >"$dir/dynalite.port"
                if [ -n "$owner" ]; then
                    # Watchdog: stop dynalite when the owner process is gone.
                    (
                        while kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do
                            sleep 1
                        done
                        kill "$pid" 2>/dev/null || true
                    ) </dev/null >/dev/null 2>&1 &
                fi
                echo "$port"
                return 0
            fi
            sleep 0.1
            waited=$((waited + 1))
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    echo "dynalite.sh: dynalite did not start; its log:" >&2
    cat "$dir/dynalite.log" >&2 || true
    exit 1
}

stop() {
    dir=$1
    [ -f "$dir/dynalite.pid" ] || return 0
    pid=$(cat "$dir/dynalite.pid")
    if kill "$pid" 2>/dev/null; then
        n=0
        while kill -0 "$pid" 2>/dev/null && [ $n -lt 50 ]; do
            sleep 0.1
            n=$((n + 1))
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/dynalite.pid" "$dir/dynalite.port"
}

[ $# -ge 2 ] || usage
case "$1" in
start) start "$2" "${3:-}" ;;
stop) stop "$2" ;;
endpoint) echo "http://127.0.0.1:$(cat "$2/dynalite.port")" ;;
*) usage ;;
esac
