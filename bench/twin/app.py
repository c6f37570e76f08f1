"""A twin of actionstools' notes routes (and POST /tasks, a filtered GET /tasks and
GET /tasks/counters) on the original's stack (Flask, run by gunicorn
with 5 sync workers), over SQLite in WAL mode with synchronous=NORMAL as ours, with the
same HS256 bearer-token check. `make bench` measures it beside the C service; it is a
yardstick, not a product. Environment: AUTH_JWT_SECRET, TWIN_DB (the database file)."""
import base64, datetime, json, os, sqlite3, uuid

import jwt
from flask import Flask, abort, jsonify, request
from werkzeug.exceptions import HTTPException

app = Flask(__name__)
SECRET = os.environ["AUTH_JWT_SECRET"]
COLUMNS = "uuid, target_uuid, instance_id, owner_uuid, owner_name, created_at, data, is_pinned, updated_at, version"
_db = None
TASK_COLUMNS = ("uuid, instance_id, item_number, owner_uuid, owner_name, created_by, title, status, priority, "
                "assignee_uuid, due_at, created_at, updated_at, version")
STATUSES = ("open", "in_progress", "blocked", "done", "cancelled")


def db():  # one connection per worker process (sync workers serve one request at a time)
    global _db
    if _db is None:
        _db = sqlite3.connect(os.environ.get("TWIN_DB", "twin.db"), timeout=5, isolation_level=None)
        _db.execute("PRAGMA journal_mode=WAL")
        _db.execute("PRAGMA synchronous=NORMAL")
        _db.execute(f"CREATE TABLE IF NOT EXISTS notes ({COLUMNS}, deleted_at, PRIMARY KEY (target_uuid, uuid))")
        _db.execute("CREATE INDEX IF NOT EXISTS notes_list ON notes (target_uuid, is_pinned, updated_at, uuid)")
        _db.execute(f"CREATE TABLE IF NOT EXISTS tasks ({TASK_COLUMNS}, deleted_at, PRIMARY KEY (instance_id, uuid))")
        _db.execute("CREATE INDEX IF NOT EXISTS tasks_assignee ON tasks (assignee_uuid, instance_id, created_at, uuid)")
        _db.execute("CREATE INDEX IF NOT EXISTS tasks_status ON tasks (instance_id, status, created_at, uuid)")
        _db.execute("CREATE TABLE IF NOT EXISTS counters (counter_seq_key PRIMARY KEY, seq)")
    return _db


def view(row):
    note = dict(zip([c.strip() for c in COLUMNS.split(",")], row))
    note["data"], note["is_pinned"] = json.loads(note["data"]), bool(note["is_pinned"])
    return note


def identity():
    auth = request.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        abort(401, "send Authorization: Bearer <token>")
    try:
        return jwt.decode(auth[7:], SECRET, algorithms=["HS256"], options={"require": ["exp"]})
    except jwt.PyJWTError as e:
        abort(401, f"token refused: {e}")


@app.errorhandler(HTTPException)
def error(e):
    return jsonify(message=e.description), e.code


@app.get("/health")
def health():
    return jsonify(status="ok", version="twin", storage="sqlite")


@app.get("/targets/<target>/notes/<note>")
def get_note(target, note):
    who = identity()
    row = db().execute(f"SELECT {COLUMNS} FROM notes WHERE target_uuid = ? AND uuid = ? AND instance_id = ? "
                       "AND deleted_at IS NULL", (target, note, who["instance_id"])).fetchone()
    if row is None:
        abort(404, "no such note")
    return jsonify(view(row)), 200, {"ETag": f'"{row[-1]}"'}


@app.get("/targets/<target>/notes")
def list_notes(target):  # pinned first, then newest updated_at; a cursor is the last row's sort key
    who, limit, cursor = identity(), request.args.get("limit", 25, type=int), request.args.get("cursor")
    if not 1 <= limit <= 100:
        abort(400, "limit must be 1 to 100")
    after, args = "", [target, who["instance_id"]]
    if cursor:
        try:
            key = json.loads(base64.urlsafe_b64decode(cursor))
            after, args = "AND (is_pinned, updated_at, uuid) < (?, ?, ?)", args + [int(key[0]), str(key[1]), str(key[2])]
        except (ValueError, TypeError, IndexError):
            abort(400, "bad cursor")
    rows = db().execute(f"SELECT {COLUMNS} FROM notes WHERE target_uuid = ? AND instance_id = ? AND deleted_at IS NULL "
                        f"{after} ORDER BY is_pinned DESC, updated_at DESC, uuid DESC LIMIT ?", args + [limit + 1]).fetchall()
    last = rows[limit - 1] if len(rows) > limit else None
    next_cursor = base64.urlsafe_b64encode(json.dumps([last[7], last[8], last[0]]).encode()).decode() if last else None
    return jsonify(items=[view(r) for r in rows[:limit]], next_cursor=next_cursor)


@app.post("/targets/<target>/notes")
def create_note(target):
    who, body = identity(), request.get_json(silent=True)
    if not isinstance(body, dict) or "data" not in body or set(body) - {"data", "is_pinned"}:
        abort(400, "send a JSON object with data and optionally is_pinned")
    if not isinstance(body.get("is_pinned", False), bool):
        abort(400, "is_pinned must be true or false")
    now = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S.%f")
    row = (str(uuid.uuid4()), target, who["instance_id"], who["sub"], who.get("name"), now,
           json.dumps(body["data"]), int(body.get("is_pinned", False)), now, 1)
    db().execute(f"INSERT INTO notes ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    return jsonify(view(row)), 201, {"Location": f"/targets/{target}/notes/{row[0]}", "ETag": '"1"'}


def task_view(row):
    return {k: v for k, v in zip([c.strip() for c in TASK_COLUMNS.split(",")], row) if v is not None}


@app.post("/tasks")
def create_task():  # item_number from the counters table, in the same transaction as the task
    who, body = identity(), request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("title"), str) or not 1 <= len(body["title"]) <= 500 \
            or set(body) - {"title", "status", "priority", "assignee_uuid", "due_at"}:
        abort(400, "send a JSON object with title and optionally status, priority, assignee_uuid, due_at")
    if body.get("status", "open") not in STATUSES:
        abort(400, "bad status")
    now, con = int(datetime.datetime.utcnow().timestamp()), db()
    con.execute("BEGIN IMMEDIATE")
    try:
        key = f"tasks#{who['instance_id']}"
        con.execute("INSERT INTO counters VALUES (?, 1) ON CONFLICT (counter_seq_key) DO UPDATE SET seq = seq + 1", (key,))
        number = con.execute("SELECT seq FROM counters WHERE counter_seq_key = ?", (key,)).fetchone()[0]
        row = (str(uuid.uuid4()), who["instance_id"], number, who["sub"], who.get("name"), who["sub"], body["title"],
               body.get("status", "open"), body.get("priority", "normal"), body.get("assignee_uuid"), body.get("due_at"),
               now, now, 1)
        con.execute(f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return jsonify(task_view(row)), 201, {"Location": f"/tasks/{row[0]}", "ETag": '"1"'}


@app.get("/tasks")
def list_tasks():  # ?status= and ?assignee_uuid= (both or either), newest first; a cursor
    who, limit, cursor = identity(), request.args.get("limit", 25, type=int), request.args.get("cursor")
    status, assignee = request.args.get("status"), request.args.get("assignee_uuid")
    if not 1 <= limit <= 100 or (status and status not in STATUSES):
        abort(400, "bad limit or status")
    where, args = ["instance_id = ?", "deleted_at IS NULL"], [who["instance_id"]]
    if status:
        where.append("status = ?"); args.append(status)
    if assignee:
        where.append("assignee_uuid = ?"); args.append(assignee)
    if cursor:
        try:
            key = json.loads(base64.urlsafe_b64decode(cursor))
            where.append("(created_at, uuid) < (?, ?)"); args += [int(key[0]), str(key[1])]
        except (ValueError, TypeError, IndexError):
            abort(400, "bad cursor")
    rows = db().execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE {' AND '.join(where)} "
                        "ORDER BY created_at DESC, uuid DESC LIMIT ?", args + [limit + 1]).fetchall()
    last = rows[limit - 1] if len(rows) > limit else None
    next_cursor = base64.urlsafe_b64encode(json.dumps([last[11], last[0]]).encode()).decode() if last else None
    return jsonify(items=[task_view(r) for r in rows[:limit]], next_cursor=next_cursor)


@app.get("/tasks/counters")
def task_counters():  # counted on every request (the twin keeps no cache)
    who, now = identity(), int(datetime.datetime.utcnow().timestamp())
    by = dict.fromkeys(STATUSES, 0)
    overdue = 0
    for status, n, late in db().execute(
            "SELECT status, count(*), sum(due_at < ? AND status NOT IN ('done', 'cancelled')) FROM tasks "
            "WHERE instance_id = ? AND deleted_at IS NULL GROUP BY status", (now, who["instance_id"])):
        by[status] = n
        overdue += late or 0
    return jsonify(by_status=by, overdue=overdue, total=sum(by.values()))
