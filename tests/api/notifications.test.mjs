// The notification inbox (SPEC §5, §6): the caller's own notifications only (target_uuid
// is the recipient's user uuid; another tenant's, even under the same user uuid, are
// 404 and never listed), newest first, ?is_read= and ?include_hidden= filters, paged to
// completion; the unread count; PATCH is_read / is_hidden with versions and If-Match;
// mark-all-read and how many it changed. No route creates notifications: the worker
// does (at_notification_create, unit-tested); here they are put into the store with
// `actionstools import`, in the form that call writes.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  UUID_RE, assertError, assertStatus, assertValidation, runCli, startServer, uuid,
} from './lib/harness.mjs';
import { Client, ids } from './lib/records.mjs';

let srv;
let C;

before(async () => {
  srv = await startServer();
  C = new Client(srv);
});
after(async () => { if (srv) await srv.stop(); });

const FIELDS = ['actor_name', 'actor_uuid', 'body', 'created_at', 'data', 'instance_id', 'is_hidden', 'is_read', 'kind',
  'subject_type', 'subject_uuid', 'target_uuid', 'title', 'updated_at', 'uuid', 'version'];

// Timestamps in the service's form, one microsecond apart, increasing across the file.
let clock = Date.UTC(2026, 0, 1) * 1000;
function nextTs() {
  clock += 1000;
  const ms = Math.floor(clock / 1000);
  const d = new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
  return `${d}.${String(clock % 1000000).padStart(6, '0')}`;
}

let seq = 0;
// A notification for user u (a stored item, as at_notification_create writes it).
function note(u, { read = false, hidden = false, instance = u.instance_id, kind = 'task_assigned' } = {}) {
  seq += 1;
  const ts = nextTs();
  return {
    target_uuid: { S: u.sub },
    uuid: { S: uuid() },
    instance_id: { S: instance },
    kind: { S: kind },
    title: { S: `n${seq}` },
    body: { S: 'something happened' },
    subject_type: { S: 'task' },
    subject_uuid: { S: uuid() },
    actor_uuid: { S: uuid() },
    actor_name: { S: 'Ann' },
    data: { M: { seq: { N: String(seq) }, tags: { L: [{ S: 'a' }, { NULL: true }] } } },
    is_read: { N: read ? '1' : '0' },
    is_hidden: { N: hidden ? '1' : '0' },
    version: { N: '1' },
    created_at: { S: ts },
    updated_at: { S: ts },
  };
}

// Puts the items into the server's store; returns their uuids in the order given.
async function seed(items) {
  const f = path.join(srv.storage.dir, `seed-${seq}-${items.length}.jsonl`);
  fs.writeFileSync(f, items.map((Item) => JSON.stringify({ Item })).join('\n') + '\n');
  const r = await runCli(['import', '--table', 'notifications', '--in', f], { env: srv.storage.env, cwd: srv.storage.dir, timeoutMs: 60000 });
  assert.equal(r.code, 0, r.stderr);
  return items.map((it) => it.uuid.S);
}

const one = (id) => `/notifications/${id}`;
const newestFirst = (xs) => [...xs].reverse();
const unread = async (u) => {
  const r = await C.req(u, 'GET', '/notifications/unread-count');
  assertStatus(r, 200);
  return r.body;
};

describe('notifications: the inbox', () => {
  // u's inbox: 9 notifications (read: n2, n5; hidden: n3, n7), and around it other
  // users', another tenant's for the same user uuid, and a mate's.
  let u;
  let twin; // u's user uuid in another tenant
  let made; // [uuid, {read, hidden}] oldest first
  before(async () => {
    u = C.user();
    twin = C.user({ sub: u.sub });
    const flags = [{}, {}, { read: true }, { hidden: true }, {}, { read: true }, {}, { hidden: true, read: true }, {}];
    const items = [];
    made = [];
    for (const f of flags) {
      const it = note(u, f);
      items.push(it);
      made.push([it.uuid.S, f]);
      items.push(note(C.mate(u)));
      items.push(note(twin)); // the same user uuid in another tenant
    }
    await seed(items);
  });
  const pick = (pred) => made.filter(([, f]) => pred(f)).map(([id]) => id);

  test('GET /notifications: the caller\'s, newest first, hidden ones left out; every page size', async () => {
    const want = newestFirst(pick((f) => !f.hidden));
    const first = await C.list(u, '/notifications');
    assert.deepEqual(ids(first.items), want);
    const it = first.items[0];
    assert.deepEqual(Object.keys(it).sort(), FIELDS);
    assert.match(it.uuid, UUID_RE);
    assert.equal(it.target_uuid, u.sub);
    assert.equal(it.instance_id, u.instance_id);
    assert.equal(it.is_read, false);
    assert.equal(it.is_hidden, false);
    assert.deepEqual(it.data.tags, ['a', null]);
    for (const limit of [1, 2, 3, 4, 7, 100]) {
      assert.deepEqual(ids(await C.all(u, '/notifications', limit)), want, `limit ${limit}`);
    }
  });

  test('?include_hidden=true shows the hidden ones; ?is_read=true|false', async () => {
    assert.deepEqual(ids(await C.all(u, '/notifications', 2, '&include_hidden=true')), newestFirst(pick(() => true)));
    assert.deepEqual(ids(await C.all(u, '/notifications', 2, '&include_hidden=false')), newestFirst(pick((f) => !f.hidden)));
    assert.deepEqual(ids(await C.all(u, '/notifications', 1, '&is_read=false')), newestFirst(pick((f) => !f.read && !f.hidden)));
    assert.deepEqual(ids(await C.all(u, '/notifications', 1, '&is_read=true')), newestFirst(pick((f) => f.read && !f.hidden)));
    assert.deepEqual(ids(await C.all(u, '/notifications', 2, '&is_read=false&include_hidden=true')),
      newestFirst(pick((f) => !f.read)));
    assert.deepEqual(ids(await C.all(u, '/notifications', 3, '&is_read=true&include_hidden=true')),
      newestFirst(pick((f) => f.read)));
  });

  test('bad parameters are 400 naming them; a cursor is good only for its own list', async () => {
    assertValidation(await C.req(u, 'GET', '/notifications?is_read=maybe'), { is_read: 'must be true or false' });
    assertValidation(await C.req(u, 'GET', '/notifications?include_hidden=1'), { include_hidden: 'must be true or false' });
    assertValidation(await C.req(u, 'GET', '/notifications?limit=101'), { limit: true });
    assertValidation(await C.req(u, 'GET', '/notifications?cursor=abc'), { cursor: true });
    for (const [from, to] of [['&is_read=false', '&is_read=true'], ['&include_hidden=true', ''], ['', '&is_read=false']]) {
      const p = await C.list(u, '/notifications', `?limit=1${from}`);
      const r = await C.req(u, 'GET', `/notifications?cursor=${encodeURIComponent(p.next_cursor)}${to}`);
      assertValidation(r, { cursor: true });
      const mate = await C.req(C.mate(u), 'GET', `/notifications?cursor=${encodeURIComponent(p.next_cursor)}${from}`);
      assertValidation(mate, { cursor: true });
    }
  });

  test('nobody else sees them: other users, and the same user uuid in another tenant', async () => {
    assert.equal((await C.list(twin, '/notifications', '?include_hidden=true')).items.length, 9); // its own
    for (const x of [C.mate(u), C.user(), twin, C.mate(u, { admin: true })]) {
      const theirs = ids(await C.all(x, '/notifications', 50, '&include_hidden=true'));
      for (const [id] of made) {
        assert.ok(!theirs.includes(id));
        assertError(await C.req(x, 'GET', one(id)), 404, { message: 'notification not found' });
        assertError(await C.req(x, 'PATCH', one(id), { json: { is_read: true } }), 404);
        assertError(await C.req(x, 'PATCH', one(id), { json: { bogus: 1 } }), 404);
      }
    }
  });

  test('the unread count: unread and not hidden, the caller\'s only', async () => {
    assert.deepEqual(await unread(u), { unread: pick((f) => !f.read && !f.hidden).length });
    assert.deepEqual(await unread(twin), { unread: 9 }); // its own, in its tenant
    assert.deepEqual(await unread(C.user()), { unread: 0 });
  });
});

describe('notifications: one at a time', () => {
  test('GET one; PATCH is_read / is_hidden: versions, ETag, If-Match; the list and the count follow', async () => {
    const u = C.user();
    const [a, b] = await seed([note(u), note(u)]);
    const g = await C.req(u, 'GET', one(a));
    assertStatus(g, 200);
    assert.equal(g.headers.etag, '"1"');
    assert.deepEqual(await unread(u), { unread: 2 });
    assertError(await C.req(u, 'PATCH', one(a), { json: { is_read: true }, headers: { 'If-Match': '"2"' } }), 412);
    const r = await C.req(u, 'PATCH', one(a), { json: { is_read: true }, headers: { 'If-Match': '"1"' } });
    assertStatus(r, 200);
    assert.equal(r.body.is_read, true);
    assert.equal(r.body.version, 2);
    assert.equal(r.headers.etag, '"2"');
    assert.ok(r.body.updated_at > g.body.updated_at);
    assert.equal(r.body.created_at, g.body.created_at);
    assert.deepEqual(await unread(u), { unread: 1 });
    assert.deepEqual(ids((await C.list(u, '/notifications', '?is_read=false')).items), [b]);
    const h = await C.req(u, 'PATCH', one(b), { json: { is_hidden: true } });
    assertStatus(h, 200);
    assert.equal(h.body.is_hidden, true);
    assert.deepEqual(await unread(u), { unread: 0 }); // hidden: not counted
    assert.deepEqual(ids((await C.list(u, '/notifications')).items), [a]);
    assert.deepEqual(ids((await C.list(u, '/notifications', '?include_hidden=true')).items), [b, a]);
    const back = await C.req(u, 'PATCH', one(b), { json: { is_hidden: false, is_read: false } });
    assertStatus(back, 200);
    assert.equal(back.body.version, 3);
    assert.deepEqual(await unread(u), { unread: 1 });
    assertStatus(await C.req(u, 'PATCH', one(a), { json: { is_read: false } }), 200);
    assert.deepEqual(await unread(u), { unread: 2 });
  });

  test('PATCH refusals: 400 naming the field; a path that names no notification is 404', async () => {
    const u = C.user();
    const [a] = await seed([note(u)]);
    assertValidation(await C.req(u, 'PATCH', one(a), { json: {} }), { is_read: 'send is_read and/or is_hidden to change' });
    for (const v of ['yes', 1, null, 'true']) {
      assertValidation(await C.req(u, 'PATCH', one(a), { json: { is_read: v } }), { is_read: 'must be true or false' });
      assertValidation(await C.req(u, 'PATCH', one(a), { json: { is_hidden: v } }), { is_hidden: 'must be true or false' });
    }
    for (const f of ['kind', 'title', 'body', 'data', 'target_uuid', 'actor_uuid', 'owner_uuid', 'version', 'created_at']) {
      assertValidation(await C.req(u, 'PATCH', one(a), { json: { [f]: 'x' } }), { [f]: 'set by the service; remove it' });
    }
    assertValidation(await C.req(u, 'PATCH', one(a), { json: { colour: 1 } }), { colour: 'unknown field' });
    assertValidation(await C.req(u, 'PATCH', one(a), { json: { uuid: uuid(), is_read: true } }), { uuid: true });
    assertError(await C.req(u, 'PATCH', one(a), { body: 'x', headers: { 'Content-Type': 'text/plain' } }), 415);
    assertError(await C.req(u, 'PATCH', one('not-a-uuid'), { json: { is_read: true } }), 404);
    assertError(await C.req(u, 'GET', one(uuid())), 404);
    assert.equal((await C.req(u, 'GET', one(a))).body.version, 1);
  });

  test('no route creates or deletes notifications', async () => {
    const u = C.user();
    const [a] = await seed([note(u)]);
    assertError(await C.req(u, 'POST', '/notifications', { json: { kind: 'mentioned' } }), 405);
    assertError(await C.req(u, 'PUT', one(a), { json: { is_read: true } }), 405);
    assertError(await C.req(u, 'DELETE', one(a)), 405);
    assertError(await C.req(u, 'POST', one(a), { json: {} }), 405);
    assertError(await C.req(u, 'PATCH', '/notifications/unread-count', { json: {} }), 405);
    assertError(await C.req(u, 'GET', '/notifications/mark-all-read'), 405);
    assertError(await C.req(u, 'GET', '/notifications/unread-count'.replace('unread', 'un')), 404);
  });
});

describe('notifications: many', () => {
  test('more unread than are read whole at once (100): the unread list is complete, in order', async () => {
    const u = C.user();
    const items = [];
    for (let i = 0; i < 130; i += 1) items.push(note(u, { read: i % 13 === 5 }));
    const all = await seed(items);
    const unreadIds = newestFirst(all.filter((_, i) => i % 13 !== 5));
    assert.equal(unreadIds.length, 120);
    for (const limit of [7, 50, 100]) {
      assert.deepEqual(ids(await C.all(u, '/notifications', limit, '&is_read=false')), unreadIds, `limit ${limit}`);
    }
    assert.deepEqual(await unread(u), { unread: 120 });
  });

  test('mark-all-read: how many it changed, up to 100 a request ("more": true then); others untouched', async () => {
    const u = C.user();
    const m = C.mate(u);
    const twin = C.user({ sub: u.sub });
    const items = [];
    for (let i = 0; i < 130; i += 1) items.push(note(u, { read: i < 10, hidden: i === 20 }));
    items.push(note(m), note(twin));
    const all = await seed(items);
    assert.deepEqual(await unread(u), { unread: 119 }); // 120 unread, one of them hidden
    const r1 = await C.req(u, 'POST', '/notifications/mark-all-read');
    assertStatus(r1, 200);
    assert.deepEqual(r1.body, { updated: 100, more: true });
    const r2 = await C.req(u, 'POST', '/notifications/mark-all-read');
    assert.deepEqual(r2.body, { updated: 20 });
    assert.deepEqual((await C.req(u, 'POST', '/notifications/mark-all-read')).body, { updated: 0 });
    assert.deepEqual(await unread(u), { unread: 0 });
    assert.deepEqual((await C.list(u, '/notifications', '?is_read=false&include_hidden=true')).items, []);
    // each changed one moved its version; the already-read ones did not
    const changed = await C.req(u, 'GET', one(all[50]));
    assert.equal(changed.body.is_read, true);
    assert.equal(changed.body.version, 2);
    assert.equal((await C.req(u, 'GET', one(all[3]))).body.version, 1);
    const hidden = await C.req(u, 'GET', one(all[20]));
    assert.equal(hidden.body.is_read, true); // hidden ones too
    assert.equal(hidden.body.is_hidden, true);
    // the mate's and the twin's are still unread
    assert.deepEqual(await unread(m), { unread: 1 });
    assert.deepEqual(await unread(twin), { unread: 1 });
  });

  test('the unread count stops at 999 and says there are more', async () => {
    const u = C.user();
    const items = [];
    for (let i = 0; i < 1005; i += 1) items.push(note(u));
    await seed(items);
    assert.deepEqual(await unread(u), { unread: 999, more: true });
    const r = await C.req(u, 'POST', '/notifications/mark-all-read');
    assert.deepEqual(r.body, { updated: 100, more: true });
    assert.deepEqual(await unread(u), { unread: 905 });
  });
});
