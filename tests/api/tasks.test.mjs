// Tasks (SPEC §3, §5, §6; issue 9): create / read / change / delete / restore, integer
// epoch timestamps, item_number from the counters table (64 concurrent creates give 64
// distinct, contiguous numbers), status and priority values, completed_at, owner /
// assignee / admin permissions, versions and If-Match, client uuids, bad input (400
// naming the field), another tenant's tasks answering 404 on every route.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  UUID_RE, assertError, assertStatus, assertValidation, startServer, uuid,
} from './lib/harness.mjs';
import { Client, SERVICE_FIELDS } from './lib/records.mjs';

let srv;
let C;

before(async () => {
  srv = await startServer();
  C = new Client(srv);
});
after(async () => { if (srv) await srv.stop(); });

const one = (id) => `/tasks/${id}`;
const nowS = () => Math.floor(Date.now() / 1000);

async function create(u, json) {
  const r = await C.req(u, 'POST', '/tasks', { json });
  assertStatus(r, 201);
  return r.body;
}

describe('tasks: create and read', () => {
  test('201 with Location, ETag "1", epoch timestamps, item_number, defaults, owner and created_by from the token', async () => {
    const u = C.user();
    const t0 = nowS();
    const r = await C.req(u, 'POST', '/tasks', { json: { title: 'Call back' } });
    assertStatus(r, 201);
    const it = r.body;
    assert.deepEqual(Object.keys(it).sort(), ['created_at', 'created_by', 'instance_id', 'item_number', 'owner_name',
      'owner_uuid', 'priority', 'status', 'title', 'updated_at', 'uuid', 'version']);
    assert.match(it.uuid, UUID_RE);
    assert.equal(r.headers.location, `/tasks/${it.uuid}`);
    assert.equal(r.headers.etag, '"1"');
    assert.equal(it.item_number, 1); // a new tenant's first task
    assert.equal(it.status, 'open');
    assert.equal(it.priority, 'normal');
    assert.equal(it.owner_uuid, u.sub);
    assert.equal(it.created_by, u.sub);
    assert.equal(it.owner_name, u.name);
    assert.equal(it.instance_id, u.instance_id);
    assert.equal(it.version, 1);
    assert.ok(Number.isInteger(it.created_at) && it.created_at >= t0 - 1 && it.created_at <= nowS() + 1);
    assert.equal(it.updated_at, it.created_at);
    const g = await C.req(C.mate(u), 'GET', one(it.uuid));
    assertStatus(g, 200);
    assert.deepEqual(g.body, it);
    assert.equal(g.headers.etag, '"1"');
  });

  test('every field a client sends is kept; null removes a nullable one', async () => {
    const u = C.user();
    const a = uuid();
    const body = {
      title: 't', description: 'more', status: 'in_progress', priority: 'urgent', assignee_uuid: a.toUpperCase(),
      assignee_name: 'Ann Lee', assignee_email: 'ann@example.com', target_uuid: 'account 42/ü', due_at: 1893456000,
      remind_at: 1893452400, data: { tags: ['x'], n: 1, deep: { ok: true } },
    };
    const it = await create(u, body);
    for (const [k, v] of Object.entries(body)) assert.deepEqual(it[k], k === 'assignee_uuid' ? a : v, k);
    const p = await C.req(u, 'PATCH', one(it.uuid), { json: { due_at: null, description: null, assignee_uuid: null } });
    assertStatus(p, 200);
    assert.equal(p.body.due_at, undefined);
    assert.equal(p.body.description, undefined);
    assert.equal(p.body.assignee_uuid, undefined);
    assert.equal(p.body.version, 2);
    assert.equal(p.headers.etag, '"2"');
    assert.ok(p.body.updated_at >= it.updated_at);
  });

  test('a client uuid makes a retried create safe (200, same task, no new number); another owner gets 409', async () => {
    const u = C.user();
    const id = uuid();
    const first = await C.req(u, 'POST', '/tasks', { json: { uuid: id, title: 'once' } });
    assertStatus(first, 201);
    const again = await C.req(u, 'POST', '/tasks', { json: { uuid: id, title: 'once' } });
    assertStatus(again, 200);
    assert.deepEqual(again.body, first.body);
    assertError(await C.req(C.mate(u), 'POST', '/tasks', { json: { uuid: id, title: 'mine?' } }), 409);
    // of the same record too (SPEC §3): the same uuid for another record is 409
    assertError(await C.req(u, 'POST', '/tasks', { json: { uuid: id, title: 'once', target_uuid: 'other' } }), 409,
      { message: `the uuid ${id} cannot be used for a new task; send a new uuid or none` });
    const onRecord = uuid();
    assertStatus(await C.req(u, 'POST', '/tasks', { json: { uuid: onRecord, title: 'r', target_uuid: 'acc-7' } }), 201);
    assertStatus(await C.req(u, 'POST', '/tasks', { json: { uuid: onRecord, title: 'r', target_uuid: 'acc-7' } }), 200);
    assertError(await C.req(u, 'POST', '/tasks', { json: { uuid: onRecord, title: 'r' } }), 409);
    const next = await create(u, { title: 'next' });
    assert.equal(next.item_number, first.body.item_number + 2, 'the retries took no number (one task between)');
  });
});

describe('tasks: numbering', () => {
  test('64 concurrent creates give 64 distinct, contiguous numbers; tenants number on their own', async () => {
    const u = C.user();
    const other = C.user();
    const start = (await create(u, { title: 'before' })).item_number;
    const rs = await Promise.all(Array.from({ length: 64 }, (_, i) => C.req(u, 'POST', '/tasks', { json: { title: `n${i}` } })));
    const nums = rs.map((r) => { assertStatus(r, 201); return r.body.item_number; }).sort((x, y) => x - y);
    assert.deepEqual(nums, Array.from({ length: 64 }, (_, i) => start + 1 + i));
    assert.equal((await create(other, { title: 'theirs' })).item_number, 1);
    assert.equal((await create(u, { title: 'after' })).item_number, start + 65);
  });
});

describe('tasks: status, completed_at, priority', () => {
  test('moving to done sets completed_at; staying done keeps it; moving away clears it', async () => {
    const u = C.user();
    const it = await create(u, { title: 'x' });
    assert.equal(it.completed_at, undefined);
    const done = await C.req(u, 'PATCH', one(it.uuid), { json: { status: 'done' } });
    assertStatus(done, 200);
    assert.ok(Number.isInteger(done.body.completed_at) && done.body.completed_at >= it.created_at);
    const still = await C.req(u, 'PATCH', one(it.uuid), { json: { title: 'y', status: 'done' } });
    assert.equal(still.body.completed_at, done.body.completed_at);
    const back = await C.req(u, 'PATCH', one(it.uuid), { json: { status: 'blocked' } });
    assert.equal(back.body.completed_at, undefined);
    const born = await create(u, { title: 'born done', status: 'done' });
    assert.ok(Number.isInteger(born.completed_at));
    for (const s of ['open', 'in_progress', 'blocked', 'done', 'cancelled']) {
      assertStatus(await C.req(u, 'PATCH', one(it.uuid), { json: { status: s } }), 200);
    }
    for (const p of ['low', 'normal', 'high', 'urgent']) {
      assert.equal((await C.req(u, 'PATCH', one(it.uuid), { json: { priority: p } })).body.priority, p);
    }
  });
});

describe('tasks: permissions (SPEC §6)', () => {
  test('change: owner, assignee or CRM_ADMIN; delete and restore: owner or CRM_ADMIN; read: anyone of the tenant', async () => {
    const owner = C.user();
    const assignee = C.mate(owner);
    const stranger = C.mate(owner);
    const admin = C.mate(owner, { admin: true });
    const it = await create(owner, { title: 'p', assignee_uuid: assignee.sub });
    assertStatus(await C.req(stranger, 'GET', one(it.uuid)), 200);
    assertError(await C.req(stranger, 'PATCH', one(it.uuid), { json: { title: 'no' } }), 403,
      { message: "only the task's owner, its assignee or a CRM_ADMIN may change it" });
    // 403 comes before validation
    assertError(await C.req(stranger, 'PATCH', one(it.uuid), { json: { bogus: 1 } }), 403);
    assertStatus(await C.req(assignee, 'PATCH', one(it.uuid), { json: { status: 'in_progress' } }), 200);
    assertStatus(await C.req(admin, 'PATCH', one(it.uuid), { json: { priority: 'high' } }), 200);
    assertError(await C.req(assignee, 'DELETE', one(it.uuid)), 403, { message: "only the task's owner or a CRM_ADMIN may change it" });
    assertError(await C.req(stranger, 'DELETE', one(it.uuid)), 403);
    assertStatus(await C.req(owner, 'DELETE', one(it.uuid)), 204);
    assertError(await C.req(owner, 'GET', one(it.uuid)), 404, { message: 'task not found' });
    assertError(await C.req(assignee, 'POST', `${one(it.uuid)}/restore`), 403);
    const back = await C.req(admin, 'POST', `${one(it.uuid)}/restore`);
    assertStatus(back, 200);
    assert.equal(back.body.version, 5);
    assertError(await C.req(owner, 'POST', `${one(it.uuid)}/restore`), 409);
    // reassigned away: the old assignee may no longer change it
    assertStatus(await C.req(owner, 'PATCH', one(it.uuid), { json: { assignee_uuid: null } }), 200);
    assertError(await C.req(assignee, 'PATCH', one(it.uuid), { json: { title: 'no' } }), 403);
  });

  test('versions: If-Match that does not match is 412 (after 403 and 400); a matching one goes through', async () => {
    const u = C.user();
    const it = await create(u, { title: 'v' });
    assertError(await C.req(u, 'PATCH', one(it.uuid), { json: { title: 'w' }, headers: { 'If-Match': '"7"' } }), 412);
    assertValidation(await C.req(u, 'PATCH', one(it.uuid), { json: { title: '' }, headers: { 'If-Match': '"7"' } }),
      { title: 'must be 1 to 500 characters long' });
    const ok = await C.req(u, 'PATCH', one(it.uuid), { json: { title: 'w' }, headers: { 'If-Match': '"1"' } });
    assertStatus(ok, 200);
    assertError(await C.req(u, 'DELETE', one(it.uuid), { headers: { 'If-Match': '"1"' } }), 412);
    assertStatus(await C.req(u, 'DELETE', one(it.uuid), { headers: { 'If-Match': '"2"' } }), 204);
  });
});

describe('tasks: tenants', () => {
  test("another tenant's task answers 404 on every route, whatever the body; lists never show it", async () => {
    const u = C.user();
    const them = C.user();
    const it = await create(u, { title: 'mine', target_uuid: 'shared-record', assignee_uuid: them.sub, status: 'blocked' });
    assertError(await C.req(them, 'GET', one(it.uuid)), 404);
    assertError(await C.req(them, 'PATCH', one(it.uuid), { json: { bogus: 1 } }), 404);
    assertError(await C.req(them, 'DELETE', one(it.uuid)), 404);
    assertError(await C.req(them, 'POST', `${one(it.uuid)}/restore`), 404);
    for (const p of ['/tasks', '/tasks?status=blocked', `/tasks?assignee_uuid=${them.sub}`, '/tasks?target_uuid=shared-record',
      `/tasks?owner_uuid=${u.sub}`, `/tasks?created_by=${u.sub}`, '/targets/shared-record/tasks',
      `/users/${them.sub}/tasks?role=assignee`, `/users/${u.sub}/tasks`]) {
      const b = await C.list(them, p);
      assert.deepEqual(b.items, [], p);
    }
    const c = await C.req(them, 'GET', '/tasks/counters');
    assert.equal(c.body.total, 0);
    const c2 = await C.req(them, 'GET', `/tasks/counters?assignee_uuid=${them.sub}`);
    assert.equal(c2.body.total, 0);
  });
});

describe('tasks: bad input is 400 naming the field', () => {
  test('create and PATCH bodies', async () => {
    const u = C.user();
    assertValidation(await C.req(u, 'POST', '/tasks', { json: {} }), { title: 'required' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: '' } }), { title: 'must be 1 to 500 characters long' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 'x'.repeat(501) } }), { title: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', status: 'finished' } }),
      { status: 'must be one of: open, in_progress, blocked, done, cancelled' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', priority: 'meh' } }),
      { priority: 'must be one of: low, normal, high, urgent' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', assignee_uuid: 'bob' } }), { assignee_uuid: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', due_at: '2026-01-01' } }), { due_at: 'must be a whole number' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', due_at: 1.5 } }), { due_at: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', due_at: -1 } }), { due_at: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', remind_at: 'soon' } }), { remind_at: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', assignee_email: 'not-an-address' } }),
      { assignee_email: 'must be an e-mail address, like ann@example.com' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', target_uuid: 'a\u0001b' } }), { target_uuid: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', target_uuid: '' } }), { target_uuid: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', assignee_name: '' } }), { assignee_name: true });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', colour: 'red' } }), { colour: 'unknown field' });
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', uuid: 'nope' } }), { uuid: true });
    for (const [field, val] of Object.entries(SERVICE_FIELDS)) {
      if (field === 'target_uuid') continue; // tasks take target_uuid from clients
      assertValidation(await C.req(u, 'POST', '/tasks', { json: { title: 't', [field]: val() } }),
        { [field]: 'set by the service; remove it' });
    }
    assertValidation(await C.req(u, 'POST', '/tasks', { json: { status: 'x', priority: 'y' } }), {
      title: 'required', status: true, priority: true,
    });
    const it = await create(u, { title: 'ok' });
    assertValidation(await C.req(u, 'PATCH', one(it.uuid), { json: {} }), { title: true });
    assertValidation(await C.req(u, 'PATCH', one(it.uuid), { json: { item_number: 9 } }), { item_number: 'set by the service; remove it' });
    assertValidation(await C.req(u, 'PATCH', one(it.uuid), { json: { completed_at: 9 } }), { completed_at: 'set by the service; remove it' });
    assertValidation(await C.req(u, 'PATCH', one(it.uuid), { json: { uuid: uuid() } }), { uuid: "a task's uuid cannot change" });
    assertValidation(await C.req(u, 'PATCH', one(it.uuid), { json: { title: null } }), { title: true });
    assertError(await C.req(u, 'GET', '/tasks/not-a-uuid'), 404);
    assertError(await C.req(u, 'GET', one(uuid())), 404, { message: 'task not found' });
  });

  test('list parameters', async () => {
    const u = C.user();
    assertValidation(await C.req(u, 'GET', '/tasks?status=nope'), { status: 'must be one of: open, in_progress, blocked, done, cancelled' });
    assertValidation(await C.req(u, 'GET', '/tasks?sort=title'), { sort: 'must be created_at or updated_at' });
    assertValidation(await C.req(u, 'GET', '/tasks?order=up'), { order: 'must be asc or desc' });
    assertValidation(await C.req(u, 'GET', '/tasks?assignee_uuid=bob'), { assignee_uuid: true });
    assertValidation(await C.req(u, 'GET', '/tasks?status=&owner_uuid='), { status: 'must not be empty', owner_uuid: 'must not be empty' });
    assertValidation(await C.req(u, 'GET', '/tasks?status=x&sort=y&order=z'), { status: true, sort: true, order: true });
    assertValidation(await C.req(u, 'GET', '/tasks?limit=0'), { limit: true });
    assertValidation(await C.req(u, 'GET', '/tasks?cursor=garbage'), { cursor: true });
    assertValidation(await C.req(u, 'GET', `/users/${u.sub}/tasks?role=boss`), { role: 'must be owner or assignee' });
    assertValidation(await C.req(u, 'GET', '/targets/x/tasks?status=nope'), { status: true });
    assertValidation(await C.req(u, 'GET', '/tasks/counters?assignee_uuid=bob'), { assignee_uuid: true });
    // a cursor of one list is refused by another
    for (let i = 0; i < 3; i += 1) await create(u, { title: `c${i}`, status: 'blocked' });
    const p = await C.list(u, '/tasks', '?limit=1&status=blocked');
    assert.ok(p.next_cursor);
    assertValidation(await C.req(u, 'GET', `/tasks?limit=1&status=open&cursor=${encodeURIComponent(p.next_cursor)}`), { cursor: true });
    assertValidation(await C.req(u, 'GET', `/tasks?limit=1&status=blocked&sort=updated_at&cursor=${encodeURIComponent(p.next_cursor)}`),
      { cursor: true });
  });
});
