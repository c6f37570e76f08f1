#!/bin/sh
# How task reports and counters scale with a tenant's size (docs/tasks.md): puts N tasks
# of one tenant into a fresh store with `actionstools import` (created over the last 365
# days, random statuses, assignees and due dates), then times, with curl, against the
# release binary:
#   - a report of the whole year, group_by=status, computed (every 202 until the 200)
#     and then served from the cache;
#   - GET /tasks/counters computed (a miss) and served (a hit), and one assignee's;
#   - a PATCH of a task while the counters are cached (it recalculates its assignee's;
#     the tenant's, over 5,000 tasks, are left to the next read), and that read.
#
#   bench/tasks-scale.sh [N]          N tasks (default 100000)
# Environment: STORAGE=dynamodb with AT_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh)
# measures the dynamodb backend. KEEP=1 keeps the temporary folder.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-100000}
BIN=${BIN:-$ROOT/build/release/actionstools}
STORAGE=${STORAGE:-sqlite}
[ -x "$BIN" ] || { echo "tasks-scale: no binary at $BIN (make build)" >&2; exit 1; }
TMP=$(mktemp -d)
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    if [ -n "${KEEP:-}" ]; then echo "tasks-scale: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
export STORAGE AUTH_JWT_SECRET="scale-$(date +%s)-secret-of-at-least-32-bytes" SQLITE_PATH="$TMP/scale.db" \
    LISTEN=127.0.0.1:0 LOG_LEVEL=info
if [ "$STORAGE" = dynamodb ]; then
    [ -n "${AT_DYNAMODB_ENDPOINT:-}" ] || { echo "tasks-scale: STORAGE=dynamodb needs AT_DYNAMODB_ENDPOINT" >&2; exit 1; }
    export DYNAMODB_ENDPOINT="$AT_DYNAMODB_ENDPOINT" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=scale \
        AWS_SECRET_ACCESS_KEY=scale-secret
fi
"$BIN" setup >/dev/null

python3 - "$N" >"$TMP/tasks.jsonl" <<'EOF'
import json, random, sys, time, uuid
n = int(sys.argv[1]); now = int(time.time()); random.seed(7)
people = [str(uuid.UUID(int=random.getrandbits(128), version=4)) for _ in range(20)]
for i in range(n):
    created = now - random.randrange(365 * 86400)
    status = random.choices(['open', 'in_progress', 'blocked', 'done', 'cancelled'], [30, 10, 5, 45, 10])[0]
    it = {'instance_id': {'S': 'scale'}, 'uuid': {'S': str(uuid.uuid4())}, 'item_number': {'N': str(i + 1)},
          'title': {'S': f'task {i}'}, 'description': {'S': 'x' * random.randrange(40, 400)},
          'status': {'S': status}, 'priority': {'S': 'normal'}, 'owner_uuid': {'S': people[i % 7]},
          'created_by': {'S': people[i % 7]}, 'owner_name': {'S': 'Owner'}, 'version': {'N': '1'},
          'created_at': {'N': str(created)}, 'updated_at': {'N': str(created + random.randrange(86400))}}
    if random.random() < 0.8:
        it['assignee_uuid'] = {'S': people[random.randrange(20)]}
        it['assignee_name'] = {'S': 'Someone'}
    if random.random() < 0.6:
        it['due_at'] = {'N': str(created + random.randrange(-30, 60) * 86400)}
    if status == 'done':
        it['completed_at'] = {'N': str(created + random.randrange(14 * 86400))}
    print(json.dumps({'Item': it}))
EOF
t0=$(date +%s.%N)
"$BIN" import --table tasks --in "$TMP/tasks.jsonl" >/dev/null
t1=$(date +%s.%N)
echo "imported $N tasks in $(echo "$t1 - $t0" | bc) s ($STORAGE)"

"$BIN" serve 2>"$TMP/server.log" &
PID=$!
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$TMP/server.log" | head -n1)
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || { cat "$TMP/server.log" >&2; exit 1; }
U=http://127.0.0.1:$PORT
TOKEN=$("$BIN" token --user 00000000-0000-4000-8000-0000000000aa --instance scale --name Scale --admin)
H="Authorization: Bearer $TOKEN"

# timed LABEL URL [curl args]: prints the status and seconds of one request.
timed() {
    label=$1; url=$2; shift 2
    curl -s -o "$TMP/out" -w "%{http_code} %{time_total}\n" -H "$H" "$@" "$url" >"$TMP/t"
    read -r code secs <"$TMP/t"
    printf '  %-44s %s %8.3f s\n' "$label" "$code" "$secs"
}

FROM=$(( $(date +%s) - 366 * 86400 ))
echo "report of a year ($N tasks), group_by=status:"
total=0; requests=0
while :; do
    timed "request $((requests + 1))" "$U/reports/tasks?from=$FROM&group_by=status"
    requests=$((requests + 1)); total=$(echo "$total + $secs" | bc)
    [ "$code" = 202 ] || break
done
echo "  computed in $requests requests, $total s in all"
timed "again (cached)" "$U/reports/tasks?from=$FROM&group_by=status"
echo "counters:"
timed "GET /tasks/counters (computed)" "$U/tasks/counters"
timed "GET /tasks/counters (cached)" "$U/tasks/counters"
A=$(sed -n 's/.*"assignee_uuid": {"S": "\([0-9a-f-]*\)"}.*/\1/p' "$TMP/tasks.jsonl" | head -n1)
timed "one assignee's (computed)" "$U/tasks/counters?assignee_uuid=$A"
ID=$(sed -n 's/.*"uuid": {"S": "\([0-9a-f-]*\)"}.*/\1/p' "$TMP/tasks.jsonl" | head -n1)
timed "PATCH a task (see above)" "$U/tasks/$ID" -X PATCH -H 'Content-Type: application/json' \
    -d '{"status": "in_progress"}'
timed "GET /tasks/counters (after it: computed)" "$U/tasks/counters"
timed "GET /tasks/counters (cached)" "$U/tasks/counters"
timed "GET /tasks?status=blocked (a page)" "$U/tasks?status=blocked"
