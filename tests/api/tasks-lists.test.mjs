// Task lists (SPEC §5; issue 9): every filter (status, assignee_uuid, owner_uuid,
// created_by, target_uuid, assignee_name prefix) alone and combined, sort=created_at |
// updated_at, order=desc | asc, on GET /tasks, GET /targets/{t}/tasks and
// GET /users/{u}/tasks?role=, each paged to its end and held against a brute-force
// answer over the same tasks: the same tasks, in the same order, each once, every page
// full but the last. Around the caller's tenant: deleted tasks and another tenant's tasks
// under the same users, records and statuses. The tasks are put in with `actionstools
// import` (so every created_at and updated_at is distinct, and the order is exact).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli, startServer, uuid } from './lib/harness.mjs';
import { Client, ids } from './lib/records.mjs';

let srv;
let C;
let A; // the caller: a user of tenant A
const people = {}; // name -> user uuid
const tasks = []; // every task put in (both tenants), as plain objects

// A small deterministic random source, so a failure can be replayed.
let seed = 20261201;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const weighted = (pairs) => {
  let r = rand() * pairs.reduce((s, [, w]) => s + w, 0);
  for (const [v, w] of pairs) { r -= w; if (r < 0) return v; }
  return pairs[pairs.length - 1][0];
};

const NAMES = { U1: 'Ann Lee', U2: 'Anna Bell', U3: 'Bob Stone', U4: 'Bert Ray' };
const TARGETS = ['T1', 'T2', 'T3', 'T4', 'T5'];
let clock = 1700000000;

// A stored task (DynamoDB JSON) and its plain form.
function makeTask(instance, over = {}) {
  clock += 7;
  const assignee = over.assignee !== undefined ? over.assignee
    : weighted([['U1', 45], ['U2', 15], ['U3', 12], ['U4', 10], [null, 18]]);
  const owner = pick(['O1', 'O2', 'O3']);
  const t = {
    instance_id: instance,
    uuid: uuid(),
    title: `task ${tasks.length}`,
    status: over.status || weighted([['open', 45], ['in_progress', 15], ['blocked', 8], ['done', 25], ['cancelled', 7]]),
    priority: 'normal',
    owner_uuid: people[owner],
    owner_name: owner,
    created_by: rand() < 0.8 ? people[owner] : people[pick(['O1', 'O2', 'O3'])],
    assignee_uuid: assignee ? people[assignee] : undefined,
    assignee_name: assignee ? NAMES[assignee] : undefined,
    target_uuid: over.target !== undefined ? over.target : (rand() < 0.85 ? pick(TARGETS) : undefined),
    created_at: over.created_at || clock,
    deleted_at: over.deleted || (rand() < 0.08 ? clock + 1 : undefined),
    version: 1,
  };
  t.updated_at = t.created_at + 1 + Math.floor(rand() * 5000) * 10 + (tasks.length % 10); // distinct per task
  tasks.push(t);
  return t;
}

function stored(t) {
  const item = {};
  for (const [k, v] of Object.entries(t)) {
    if (v === undefined) continue;
    item[k] = typeof v === 'number' ? { N: String(v) } : { S: v };
  }
  return item;
}

let batch = 0;
async function importTasks(list) {
  batch += 1;
  const f = path.join(srv.storage.dir, `tasks-${batch}.jsonl`);
  fs.writeFileSync(f, list.map((t) => JSON.stringify({ Item: stored(t) })).join('\n') + '\n');
  const r = await runCli(['import', '--table', 'tasks', '--in', f], { env: srv.storage.env, cwd: srv.storage.dir, timeoutMs: 60000 });
  assert.equal(r.code, 0, r.stderr);
}

// The brute-force answer: the caller's tenant, live, every filter, in the list's order.
function expected(q, fixed = {}) {
  const p = new URLSearchParams(q);
  const f = { ...Object.fromEntries(p), ...fixed };
  const sort = f.sort || 'created_at';
  const dir = f.order === 'asc' ? 1 : -1;
  return tasks.filter((t) => t.instance_id === A.instance_id && !t.deleted_at
      && ['status', 'assignee_uuid', 'owner_uuid', 'created_by', 'target_uuid'].every((k) => !f[k] || t[k] === f[k])
      && (!f.assignee_name || (t.assignee_name || '\u0000').startsWith(f.assignee_name)))
    .sort((a, b) => dir * (a[sort] - b[sort]))
    .map((t) => t.uuid);
}

// Pages through a list with limit, checking each page (full but the last, in order).
async function listAll(p, q, limit = 25) {
  const got = await C.all(A, p, limit, q ? `&${q}` : '');
  const seen = new Set(ids(got));
  assert.equal(seen.size, got.length, `${p}?${q}: a task came twice`);
  return ids(got);
}

before(async () => {
  srv = await startServer();
  C = new Client(srv);
  for (const n of ['U1', 'U2', 'U3', 'U4', 'O1', 'O2', 'O3']) people[n] = uuid();
  A = C.user({ sub: people.O1 });
  const B = newTenantUser(A);
  const list = [];
  for (let i = 0; i < 260; i += 1) list.push(makeTask(A.instance_id));
  for (let i = 0; i < 80; i += 1) list.push(makeTask(B.instance_id)); // the same users, records, statuses
  await importTasks(list);
});
after(async () => { if (srv) await srv.stop(); });

function newTenantUser(u) {
  return C.user({ sub: u.sub });
}

const FILTERS = [
  '', 'status=open', 'status=blocked', 'status=done', 'status=cancelled',
  `assignee_uuid=%U1`, `assignee_uuid=%U2`, 'owner_uuid=%O1', 'created_by=%O2', 'target_uuid=T1',
  'assignee_name=Ann', 'assignee_name=Anna', 'assignee_name=B',
  'status=open&assignee_uuid=%U2', 'status=blocked&assignee_name=B', 'target_uuid=T1&status=open',
  'owner_uuid=%O1&assignee_uuid=%U1&status=done', 'created_by=%O1&status=open', 'assignee_name=Ann&owner_uuid=%O2',
  'target_uuid=T2&assignee_name=Bo&created_by=%O3',
];
const withPeople = (q) => q.replace(/%(U\d|O\d)/g, (_, n) => people[n]);

describe('GET /tasks: every filter, alone and combined, against a brute-force answer', () => {
  test('the sample holds sets both small and large (both ways of an unsorted index are used)', () => {
    const live = tasks.filter((t) => t.instance_id === A.instance_id && !t.deleted_at);
    const n = (pred) => live.filter(pred).length;
    assert.ok(n((t) => t.status === 'open') > 100, 'open: over 100, paged through the ordered index');
    assert.ok(n((t) => t.status === 'blocked') < 100, 'blocked: a small set, read whole and sorted');
    assert.ok(n((t) => t.assignee_uuid === people.U1) > 100);
    assert.ok(n((t) => (t.assignee_name || '').startsWith('Ann')) > 100);
  });

  for (const sort of ['created_at', 'updated_at']) {
    for (const order of ['desc', 'asc']) {
      test(`sort=${sort} order=${order}`, async () => {
        for (const f of FILTERS) {
          const q = [withPeople(f), `sort=${sort}`, `order=${order}`].filter(Boolean).join('&');
          assert.deepEqual(await listAll('/tasks', q), expected(q), `/tasks?${q}`);
        }
      });
    }
  }

  test('the default order is newest created_at first; small pages and limit=100 give the same', async () => {
    assert.deepEqual(await listAll('/tasks', ''), expected(''));
    for (const f of ['status=blocked', 'assignee_name=Anna', 'status=open', `assignee_uuid=${people.U2}&sort=updated_at`]) {
      assert.deepEqual(await listAll('/tasks', f, 7), expected(f), f);
      assert.deepEqual(await listAll('/tasks', f, 100), expected(f), f);
    }
  });
});

describe('GET /targets/{t}/tasks and GET /users/{u}/tasks', () => {
  test('a record\'s tasks, with filters, both sorts', async () => {
    for (const f of ['', 'status=open', `assignee_uuid=${people.U1}`, 'sort=updated_at', 'sort=updated_at&status=done&order=asc',
      'assignee_name=B', `created_by=${people.O1}`, `owner_uuid=${people.O2}`]) {
      assert.deepEqual(await listAll('/targets/T1/tasks', f), expected(f, { target_uuid: 'T1' }), `T1 ${f}`);
    }
    assert.deepEqual(await listAll('/targets/no-such-record/tasks', ''), []);
  });

  test('a user\'s tasks: role=owner (the default) and role=assignee, with filters, both sorts', async () => {
    for (const f of ['', 'status=open', 'sort=updated_at', 'target_uuid=T2&order=asc', `assignee_uuid=${people.U3}`]) {
      assert.deepEqual(await listAll(`/users/${people.O1}/tasks`, f), expected(f, { owner_uuid: people.O1 }), `owner ${f}`);
      assert.deepEqual(await listAll(`/users/${people.O1}/tasks`, `role=owner${f ? `&${f}` : ''}`),
        expected(f, { owner_uuid: people.O1 }), `owner ${f}`);
    }
    for (const f of ['', 'status=blocked', 'sort=updated_at', 'sort=updated_at&status=open', `owner_uuid=${people.O3}`]) {
      assert.deepEqual(await listAll(`/users/${people.U1}/tasks`, `role=assignee${f ? `&${f}` : ''}`),
        expected(f, { assignee_uuid: people.U1 }), `assignee ${f}`);
    }
    // a user path that cannot be an assignee's uuid has no tasks assigned
    assert.deepEqual(await listAll('/users/not-a-uuid/tasks', 'role=assignee'), []);
  });
});

describe('a list that changes ways between two pages', () => {
  test('a small set read whole, then past 100 paged: no task is repeated or skipped', async () => {
    const q = 'status=blocked&sort=updated_at';
    const before = expected(q);
    assert.ok(before.length > 10 && before.length < 100);
    const first = await C.list(A, '/tasks', `?limit=5&${q}`);
    assert.deepEqual(ids(first.items), before.slice(0, 5));
    // 120 more blocked tasks, all updated before any of those: they come after them
    const saved = clock;
    const more = [];
    for (let i = 0; i < 120; i += 1) {
      const t = makeTask(A.instance_id, { status: 'blocked', created_at: 1500000000 + i * 3, deleted: null });
      t.deleted_at = undefined;
      t.updated_at = 1500000001 + i * 3;
      more.push(t);
    }
    clock = saved;
    await importTasks(more);
    const rest = [];
    let cursor = first.next_cursor;
    while (cursor) {
      const b = await C.list(A, '/tasks', `?limit=5&${q}&cursor=${encodeURIComponent(cursor)}`);
      rest.push(...ids(b.items));
      cursor = b.next_cursor;
    }
    assert.deepEqual([...ids(first.items), ...rest], expected(q));
  });
});
