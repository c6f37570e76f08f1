// Task reports (SPEC §5; issue 9): GET /reports/tasks?from=&to=&group_by=status|assignee|day
// over the tasks created in [from, to): created, completed, open, overdue and mean
// seconds to complete per group, against a brute-force answer; the sums add up; JSON and
// CSV (Accept: text/csv or ?format=csv); kept in the reports cache for a short time;
// bad parameters are 400 naming them. The tasks are put in with `actionstools import`,
// with the timestamps a report reads.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertStatus, assertValidation, runCli, startServer, uuid } from './lib/harness.mjs';
import { Client } from './lib/records.mjs';

let srv;
let C;
let A;
const tasks = [];
const DAY = 86400;
const FROM = Date.UTC(2025, 2, 1) / 1000; // 2025-03-01
const TO = Date.UTC(2025, 2, 8) / 1000; // 2025-03-08
const STATUSES = ['open', 'in_progress', 'blocked', 'done', 'cancelled'];

let seed = 777;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const people = Array.from({ length: 4 }, () => uuid());

function makeTask(instance, created) {
  const status = pick(STATUSES);
  const t = {
    instance_id: instance,
    uuid: uuid(),
    title: 'r',
    status,
    owner_uuid: people[0],
    created_by: people[0],
    created_at: created,
    updated_at: created + 5,
    version: 1,
  };
  const a = pick([...people, undefined]);
  if (a) t.assignee_uuid = a;
  if (status === 'done' && rand() < 0.9) t.completed_at = created + Math.floor(rand() * 5 * DAY);
  const due = pick([undefined, 1000, 4102444800]); // long past, far future
  if (due !== undefined) t.due_at = due;
  if (rand() < 0.07) t.deleted_at = created + 10;
  tasks.push(t);
  return t;
}

const stored = (t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, typeof v === 'number' ? { N: String(v) } : { S: v }]));

let batch = 0;
async function importTasks(list) {
  batch += 1;
  const f = path.join(srv.storage.dir, `report-${batch}.jsonl`);
  fs.writeFileSync(f, list.map((t) => JSON.stringify({ Item: stored(t) })).join('\n') + '\n');
  const r = await runCli(['import', '--table', 'tasks', '--in', f], { env: srv.storage.env, cwd: srv.storage.dir, timeoutMs: 60000 });
  assert.equal(r.code, 0, r.stderr);
}

const day = (s) => new Date(s * 1000).toISOString().slice(0, 10);

function expectedReport(from, to, by) {
  const now = Date.now() / 1000;
  const g = new Map();
  for (const t of tasks) {
    if (t.instance_id !== A.instance_id || t.deleted_at || t.created_at < from || t.created_at >= to) continue;
    const key = by === 'status' ? t.status : by === 'assignee' ? (t.assignee_uuid ?? null) : day(t.created_at);
    if (!g.has(key)) g.set(key, { created: 0, completed: 0, open: 0, overdue: 0, sum: 0, n: 0 });
    const s = g.get(key);
    s.created += 1;
    if (t.status === 'done') {
      s.completed += 1;
      if (t.completed_at !== undefined && t.completed_at >= t.created_at) { s.sum += t.completed_at - t.created_at; s.n += 1; }
    } else if (t.status !== 'cancelled') {
      s.open += 1;
      if (t.due_at !== undefined && t.due_at < now) s.overdue += 1;
    }
  }
  let keys = [...g.keys()];
  if (by === 'status') keys = STATUSES;
  else keys.sort((x, y) => (x === null) - (y === null) || (x < y ? -1 : x > y ? 1 : 0));
  const groups = keys.map((key) => {
    const s = g.get(key) || { created: 0, completed: 0, open: 0, overdue: 0, sum: 0, n: 0 };
    return {
      key, created: s.created, completed: s.completed, open: s.open, overdue: s.overdue,
      mean_seconds_to_complete: s.n ? Math.floor((s.sum + Math.floor(s.n / 2)) / s.n) : null,
    };
  });
  return { from, to, group_by: by, groups };
}

before(async () => {
  srv = await startServer();
  C = new Client(srv);
  A = C.user();
  const B = C.user();
  const list = [];
  // 300 tasks from a day before the range to a day after it, and another tenant's
  for (let i = 0; i < 300; i += 1) list.push(makeTask(A.instance_id, FROM - DAY + Math.floor(rand() * 9 * DAY)));
  list.push(makeTask(A.instance_id, FROM)); // on the first second: in
  list.push(makeTask(A.instance_id, TO)); // on the end: out
  list.push(makeTask(A.instance_id, TO - 1)); // the last second: in
  for (let i = 0; i < 60; i += 1) list.push(makeTask(B.instance_id, FROM + Math.floor(rand() * 7 * DAY)));
  await importTasks(list);
});
after(async () => { if (srv) await srv.stop(); });

async function report(q, headers) {
  const r = await C.req(A, 'GET', `/reports/tasks?${q}`, { headers });
  assertStatus(r, 200);
  return r;
}

describe('reports', () => {
  test('group_by status, assignee, day against a brute-force answer; from included, to excluded', async () => {
    for (const by of ['status', 'assignee', 'day']) {
      const r = await report(`from=2025-03-01&to=2025-03-08&group_by=${by}`);
      assert.match(r.headers['content-type'], /^application\/json/);
      assert.deepEqual(r.body, expectedReport(FROM, TO, by), by);
    }
    // epoch seconds name the same range
    assert.deepEqual((await report(`from=${FROM}&to=${TO}&group_by=day`)).body, expectedReport(FROM, TO, 'day'));
  });

  test('the sums add up across groupings', async () => {
    const sums = async (by) => {
      const { body } = await report(`from=${FROM + DAY}&to=${TO - DAY}&group_by=${by}`);
      const s = { created: 0, completed: 0, open: 0, overdue: 0 };
      for (const g of body.groups) for (const k of Object.keys(s)) s[k] += g[k];
      return s;
    };
    const byStatus = await sums('status');
    assert.deepEqual(await sums('assignee'), byStatus);
    assert.deepEqual(await sums('day'), byStatus);
    const inRange = tasks.filter((t) => t.instance_id === A.instance_id && !t.deleted_at
      && t.created_at >= FROM + DAY && t.created_at < TO - DAY);
    assert.equal(byStatus.created, inRange.length);
    assert.ok(byStatus.created > 100 && byStatus.overdue > 0 && byStatus.completed > 0);
  });

  test('CSV with ?format=csv or Accept: text/csv: a header row, then the groups in order', async () => {
    const want = expectedReport(FROM, TO, 'assignee');
    const lines = [
      'key,created,completed,open,overdue,mean_seconds_to_complete',
      ...want.groups.map((g) => [g.key ?? '', g.created, g.completed, g.open, g.overdue, g.mean_seconds_to_complete ?? ''].join(',')),
    ];
    for (const [q, h] of [['&format=csv', undefined], ['', { Accept: 'text/csv' }]]) {
      const r = await report(`from=2025-03-01&to=2025-03-08&group_by=assignee${q}`, h);
      assert.match(r.headers['content-type'], /^text\/csv/);
      assert.equal(r.text, `${lines.join('\r\n')}\r\n`);
    }
    // ?format=json wins over Accept
    const j = await report('from=2025-03-01&to=2025-03-08&format=json', { Accept: 'text/csv' });
    assert.match(j.headers['content-type'], /^application\/json/);
  });

  test('kept in the reports cache for a short time: new tasks show in another range at once, in the same one later', async () => {
    const q = 'from=2025-03-02&to=2025-03-03&group_by=status';
    const first = (await report(q)).body;
    await importTasks(Array.from({ length: 5 }, () => makeTask(A.instance_id, Date.UTC(2025, 2, 2, 12) / 1000)));
    assert.deepEqual((await report(q)).body, first, 'served from the cache');
    const other = (await report('from=2025-03-02&to=2025-03-04&group_by=status')).body;
    assert.deepEqual(other, expectedReport(Date.UTC(2025, 2, 2) / 1000, Date.UTC(2025, 2, 4) / 1000, 'status'));
  });

  test('defaults: the 30 days up to the end of today, by status (all five, in order)', async () => {
    const r = await report('');
    const end = (Math.floor(Date.now() / 1000 / DAY) + 1) * DAY;
    assert.equal(r.body.to, end);
    assert.equal(r.body.from, end - 30 * DAY);
    assert.equal(r.body.group_by, 'status');
    assert.deepEqual(r.body.groups.map((g) => g.key), STATUSES);
  });

  test('bad parameters are 400 naming them', async () => {
    const bad = async (q, fields) => assertValidation(await C.req(A, 'GET', `/reports/tasks?${q}`), fields);
    await bad('from=yesterday', { from: 'must be epoch seconds or a date like 2026-01-31 (UTC)' });
    await bad('to=2025-13-01', { to: true });
    await bad('from=2025-03-08&to=2025-03-01', { to: 'must be after from' });
    await bad('from=2025-03-01&to=2025-03-01', { to: 'must be after from' });
    await bad('from=2000-01-01&to=2025-01-01', { to: 'must be at most 3660 days after from' });
    await bad('group_by=owner', { group_by: 'must be status, assignee or day' });
    await bad('format=xml', { format: 'must be json or csv' });
    await bad('from=x&group_by=y&format=z', { from: true, group_by: true, format: true });
  });
});
