// Notes (SPEC §3, §5, §6): create (idempotent with a client uuid), read, change, soft delete,
// restore, tenancy, permissions, If-Match, versions, lists (order, paging, cursors), data
// round-trip.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  TIMESTAMP_RE, UUID_RE, assertError, assertStatus, assertValidation, canonExact, exact, n, newUser,
  parseExact, request, sleep, startServer, stringifyExact, uuid,
} from './lib/harness.mjs';

let srv;

before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

// A user with a token for srv.
function user(opts) {
  const u = newUser(opts);
  u.tok = srv.token(u);
  return u;
}
const mate = (u, opts = {}) => user({ instance: u.instance_id, ...opts });

const NOTE_FIELDS = ['created_at', 'data', 'instance_id', 'is_pinned', 'owner_name', 'owner_uuid',
  'target_uuid', 'updated_at', 'uuid', 'version'];

const SERVICE_FIELDS = {
  owner_uuid: () => uuid(),
  owner_name: () => 'Mallory',
  instance_id: () => 'other-tenant',
  created_at: () => '2020-01-01 00:00:00.000000',
  updated_at: () => '2020-01-01 00:00:00.000000',
  version: () => 7,
  target_uuid: () => uuid(),
  deleted_at: () => null,
  created_by: () => uuid(),
  item_number: () => 1,
  completed_at: () => 1,
};

const notesPath = (t) => `/targets/${t}/notes`;
const notePath = (t, id) => `/targets/${t}/notes/${id}`;

async function create(u, t, json = { data: { text: 'hello' } }) {
  const r = await request(srv, 'POST', notesPath(t), { token: u.tok, json });
  assertStatus(r, 201);
  return r.body;
}
async function get(u, t, id) {
  return request(srv, 'GET', notePath(t, id), { token: u.tok });
}
async function patch(u, t, id, json, headers) {
  return request(srv, 'PATCH', notePath(t, id), { token: u.tok, json, headers });
}
async function del(u, t, id, headers) {
  return request(srv, 'DELETE', notePath(t, id), { token: u.tok, headers });
}
async function restore(u, t, id, headers) {
  return request(srv, 'POST', `${notePath(t, id)}/restore`, { token: u.tok, headers });
}
async function list(u, p, query = '') {
  const r = await request(srv, 'GET', `${p}${query}`, { token: u.tok });
  assertStatus(r, 200);
  assert.deepEqual(Object.keys(r.body).sort(), ['items', 'next_cursor']);
  return r.body;
}
// Every page of a list, following next_cursor; returns the pages.
async function pages(u, p, limit) {
  const out = [];
  let cursor = null;
  for (let i = 0; i < 100; i += 1) {
    const q = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const b = await list(u, p, q);
    out.push(b.items);
    if (b.next_cursor === null) return out;
    assert.equal(typeof b.next_cursor, 'string');
    assert.ok(b.next_cursor.length > 0);
    cursor = b.next_cursor;
  }
  throw new Error('list does not end');
}
const ids = (items) => items.map((x) => x.uuid);

function assertNoteShape(note) {
  assert.deepEqual(Object.keys(note).sort(), NOTE_FIELDS, `note fields: ${JSON.stringify(note)}`);
  assert.match(note.uuid, UUID_RE);
  assert.match(note.created_at, TIMESTAMP_RE);
  assert.match(note.updated_at, TIMESTAMP_RE);
  assert.equal(typeof note.is_pinned, 'boolean');
  assert.ok(Number.isInteger(note.version) && note.version >= 1);
}

// 'YYYY-MM-DD HH:MM:SS.ffffff' (naive UTC) to epoch ms
const tsMs = (s) => Date.parse(`${s.replace(' ', 'T').slice(0, 23)}Z`);

describe('create', () => {
  test('201 with Location, ETag "1" and the full note', async () => {
    const u = user();
    const t = uuid();
    const before_ = Date.now();
    const r = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: { text: 'hello', n: [1, 2] } } });
    assertStatus(r, 201);
    const note = r.body;
    assertNoteShape(note);
    assert.equal(r.headers.location, notePath(t, note.uuid));
    assert.equal(r.headers.etag, '"1"');
    assert.equal(note.target_uuid, t);
    assert.equal(note.instance_id, u.instance_id);
    assert.equal(note.owner_uuid, u.sub);
    assert.equal(note.owner_name, u.name);
    assert.deepEqual(note.data, { text: 'hello', n: [1, 2] });
    assert.equal(note.is_pinned, false);
    assert.equal(note.version, 1);
    assert.equal(note.created_at, note.updated_at);
    const ts = tsMs(note.created_at);
    assert.ok(ts >= before_ - 5000 && ts <= Date.now() + 5000, `created_at ${note.created_at} is not now (UTC)`);
  });

  test('is_pinned true is kept', async () => {
    const u = user();
    const note = await create(u, uuid(), { data: 'p', is_pinned: true });
    assert.equal(note.is_pinned, true);
    const note2 = await create(u, uuid(), { data: 'p', is_pinned: false });
    assert.equal(note2.is_pinned, false);
  });

  test('each create makes a new random uuid', async () => {
    const u = user();
    const t = uuid();
    const a = await create(u, t);
    const b = await create(u, t);
    assert.notEqual(a.uuid, b.uuid);
  });

  test('data is required', async () => {
    const u = user();
    const t = uuid();
    assertValidation(await request(srv, 'POST', notesPath(t), { token: u.tok, json: {} }), { data: true });
    assertValidation(await request(srv, 'POST', notesPath(t), { token: u.tok, json: { is_pinned: true } }), { data: true });
    assert.deepEqual((await list(u, notesPath(t))).items, []);
  });

  test('is_pinned must be a boolean', async () => {
    const u = user();
    const t = uuid();
    for (const v of ['yes', 1, 0, null, 'true', [], {}]) {
      assertValidation(await request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: 1, is_pinned: v } }), { is_pinned: true });
    }
    assert.deepEqual((await list(u, notesPath(t))).items, []);
  });

  test('an unknown field is 400 "unknown field"', async () => {
    const u = user();
    const t = uuid();
    const r = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: 1, colour: 'red' } });
    assert.deepEqual(r.body, { message: 'Input payload validation failed', errors: { colour: 'unknown field' } });
    assertValidation(r, { colour: 'unknown field' });
    assert.deepEqual((await list(u, notesPath(t))).items, []);
  });

  for (const [field, val] of Object.entries(SERVICE_FIELDS)) {
    test(`sending ${field} is 400 "set by the service; remove it"`, async () => {
      const u = user();
      const t = uuid();
      const r = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: 1, [field]: val() } });
      assertValidation(r, { [field]: 'set by the service; remove it' });
      assert.deepEqual((await list(u, notesPath(t))).items, []);
    });
  }

  test('a client uuid is used as the note uuid', async () => {
    const u = user();
    const t = uuid();
    const id = uuid();
    const r = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: 'mine' } });
    assertStatus(r, 201);
    assert.equal(r.body.uuid, id);
    assert.equal(r.headers.location, notePath(t, id));
    assertStatus(await get(u, t, id), 200);
  });

  test('a client uuid that is not a UUID is 400', async () => {
    const u = user();
    const t = uuid();
    for (const v of ['abc', '', 42, null, `${uuid()}x`, uuid().replace(/-/g, '')]) {
      assertValidation(await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: v, data: 1 } }), { uuid: true });
    }
    assert.deepEqual((await list(u, notesPath(t))).items, []);
  });
});

describe('idempotent create with a client uuid', () => {
  test('a retry by the same owner on the same target answers 200 with the existing note', async () => {
    const u = user();
    const t = uuid();
    const id = uuid();
    const first = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: { v: 1 }, is_pinned: true } });
    assertStatus(first, 201);
    const again = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: { v: 1 }, is_pinned: true } });
    assertStatus(again, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.etag, '"1"');
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [id]);
  });

  test('a retry answers the existing note, not the retried body', async () => {
    const u = user();
    const t = uuid();
    const id = uuid();
    const first = await create(u, t, { uuid: id, data: 'original' });
    const again = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: 'different' } });
    assertStatus(again, 200);
    assert.deepEqual(again.body, first);
    assert.equal((await get(u, t, id)).body.data, 'original');
  });

  test('a retry after the note changed answers the current note', async () => {
    const u = user();
    const t = uuid();
    const id = uuid();
    await create(u, t, { uuid: id, data: 'v1' });
    assertStatus(await patch(u, t, id, { data: 'v2' }), 200);
    const again = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: 'v1' } });
    assertStatus(again, 200);
    assert.equal(again.body.data, 'v2');
    assert.equal(again.body.version, 2);
    assert.equal(again.headers.etag, '"2"');
  });

  test('concurrent creates with one client uuid: one 201, the others 200 with the same note', async () => {
    const u = user();
    const t = uuid();
    const id = uuid();
    const results = await Promise.all(Array.from({ length: 10 }, () =>
      request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: 'race' } })));
    const codes = results.map((r) => r.status).sort();
    assert.deepEqual(codes, [200, 200, 200, 200, 200, 200, 200, 200, 200, 201], `statuses ${codes}`);
    const created = results.find((r) => r.status === 201).body;
    for (const r of results) assert.deepEqual(r.body, created);
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [id]);
  });

  test('concurrent creates without a uuid all land', async () => {
    const u = user();
    const t = uuid();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: i } })));
    for (const r of results) assertStatus(r, 201);
    const got = (await list(u, notesPath(t), '?limit=100')).items;
    assert.equal(got.length, 20);
    assert.deepEqual(got.map((x) => x.data).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i));
  });

  test('the same uuid by another user of the tenant is 409', async () => {
    const u = user();
    const other = mate(u);
    const t = uuid();
    const id = uuid();
    await create(u, t, { uuid: id, data: 'u' });
    assertError(await request(srv, 'POST', notesPath(t), { token: other.tok, json: { uuid: id, data: 'u' } }), 409);
    const g = await get(u, t, id);
    assert.equal(g.body.owner_uuid, u.sub);
    assert.equal(g.body.version, 1);
  });

  test('the same uuid by an admin who is not the owner is 409', async () => {
    const u = user();
    const admin = mate(u, { admin: true });
    const t = uuid();
    const id = uuid();
    await create(u, t, { uuid: id, data: 'u' });
    assertError(await request(srv, 'POST', notesPath(t), { token: admin.tok, json: { uuid: id, data: 'u' } }), 409);
  });

  test('the same uuid on another target of the tenant is 409', async () => {
    const u = user();
    const t = uuid();
    const t2 = uuid();
    const id = uuid();
    await create(u, t, { uuid: id, data: 'u' });
    assertError(await request(srv, 'POST', notesPath(t2), { token: u.tok, json: { uuid: id, data: 'u' } }), 409);
    assert.deepEqual((await list(u, notesPath(t2))).items, []);
    assert.equal((await request(srv, 'GET', `/notes/${id}`, { token: u.tok })).body.target_uuid, t);
  });

  test('the same uuid of a deleted note is 409', async () => {
    const u = user();
    const t = uuid();
    const id = uuid();
    await create(u, t, { uuid: id, data: 'u' });
    assertStatus(await del(u, t, id), 204);
    assertError(await request(srv, 'POST', notesPath(t), { token: u.tok, json: { uuid: id, data: 'u' } }), 409);
    assertError(await get(u, t, id), 404);
  });

  test('the same uuid and target in another tenant is 409, and the note is not revealed', async () => {
    const u = user();
    const stranger = user();
    const t = uuid();
    const id = uuid();
    await create(u, t, { uuid: id, data: 'secret of tenant 1' });
    const r = await request(srv, 'POST', notesPath(t), { token: stranger.tok, json: { uuid: id, data: 'x' } });
    assertError(r, 409);
    assert.ok(!r.text.includes('secret of tenant 1'));
    const g = await get(u, t, id);
    assert.equal(g.body.data, 'secret of tenant 1');
    assert.equal(g.body.instance_id, u.instance_id);
  });
});

describe('read one', () => {
  test('GET answers the note with ETag', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: { a: 1 }, is_pinned: true });
    const r = await get(u, t, note.uuid);
    assertStatus(r, 200);
    assert.deepEqual(r.body, note);
    assert.equal(r.headers.etag, '"1"');
  });

  test('any user of the tenant may read; other tenants get 404', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    const m = mate(u);
    assert.deepEqual((await get(m, t, note.uuid)).body, note);
    const stranger = user();
    assertError(await get(stranger, t, note.uuid), 404);
    const strangerAdmin = user({ admin: true });
    assertError(await get(strangerAdmin, t, note.uuid), 404);
  });

  test('an unknown uuid is 404; a note asked for under another target is 404', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertError(await get(u, t, uuid()), 404);
    assertError(await get(u, uuid(), note.uuid), 404);
  });

  test('GET /notes/{uuid} finds the note within the caller\'s tenant', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'by uuid' });
    const r = await request(srv, 'GET', `/notes/${note.uuid}`, { token: mate(u).tok });
    assertStatus(r, 200);
    assert.deepEqual(r.body, note);
    assert.equal(r.headers.etag, '"1"');
    assertError(await request(srv, 'GET', `/notes/${note.uuid}`, { token: user().tok }), 404);
    assertError(await request(srv, 'GET', `/notes/${note.uuid}`, { token: user({ admin: true }).tok }), 404);
    assertError(await request(srv, 'GET', `/notes/${uuid()}`, { token: u.tok }), 404);
  });
});

describe('change (PATCH)', () => {
  test('the owner changes data: version +1, ETag, updated_at moves, the rest stays', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: { v: 1 }, is_pinned: true });
    await sleep(5);
    const r = await patch(u, t, note.uuid, { data: { v: 2 } });
    assertStatus(r, 200);
    assertNoteShape(r.body);
    assert.equal(r.headers.etag, '"2"');
    assert.deepEqual(r.body.data, { v: 2 });
    assert.equal(r.body.version, 2);
    assert.equal(r.body.is_pinned, true);
    assert.equal(r.body.created_at, note.created_at);
    assert.ok(r.body.updated_at > note.updated_at, `updated_at ${r.body.updated_at} did not move from ${note.updated_at}`);
    for (const f of ['uuid', 'target_uuid', 'instance_id', 'owner_uuid', 'owner_name']) assert.equal(r.body[f], note[f]);
    assert.deepEqual((await get(u, t, note.uuid)).body, r.body);
  });

  test('pinning alone is a change: version +1, updated_at moves, data stays', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'd' });
    await sleep(5);
    const p = await patch(u, t, note.uuid, { is_pinned: true });
    assertStatus(p, 200);
    assert.equal(p.body.is_pinned, true);
    assert.equal(p.body.version, 2);
    assert.equal(p.body.data, 'd');
    assert.ok(p.body.updated_at > note.updated_at);
    await sleep(5);
    const q = await patch(u, t, note.uuid, { is_pinned: false });
    assert.equal(q.body.is_pinned, false);
    assert.equal(q.body.version, 3);
    assert.ok(q.body.updated_at > p.body.updated_at);
    const both = await patch(u, t, note.uuid, { is_pinned: true, data: [1] });
    assert.equal(both.body.version, 4);
    assert.deepEqual([both.body.is_pinned, both.body.data], [true, [1]]);
    assert.equal(both.headers.etag, '"4"');
  });

  test('data may be set to null, false, 0, "" and []', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    let v = 1;
    for (const d of [null, false, 0, '', [], {}]) {
      const r = await patch(u, t, note.uuid, { data: d });
      assertStatus(r, 200);
      v += 1;
      assert.equal(r.body.version, v);
      assert.deepEqual(r.body.data, d);
      assert.deepEqual((await get(u, t, note.uuid)).body.data, d);
    }
  });

  test('an empty PATCH is 400 and changes nothing', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertError(await patch(u, t, note.uuid, {}), 400);
    assert.equal((await get(u, t, note.uuid)).body.version, 1);
  });

  test('PATCH validation: is_pinned type, unknown fields, service fields, uuid', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertValidation(await patch(u, t, note.uuid, { is_pinned: 'yes' }), { is_pinned: true });
    assertValidation(await patch(u, t, note.uuid, { is_pinned: null }), { is_pinned: true });
    assertValidation(await patch(u, t, note.uuid, { data: 1, colour: 'red' }), { colour: 'unknown field' });
    for (const [field, val] of Object.entries(SERVICE_FIELDS)) {
      assertValidation(await patch(u, t, note.uuid, { data: 1, [field]: val() }), { [field]: 'set by the service; remove it' });
    }
    const r = await patch(u, t, note.uuid, { data: 1, uuid: uuid() });
    assertError(r, 400);
    assert.ok(r.body.errors && typeof r.body.errors.uuid === 'string', `errors.uuid: ${r.text}`);
    const g = await get(u, t, note.uuid);
    assert.equal(g.body.version, 1);
    assert.deepEqual(g.body.data, note.data);
  });

  test('another user of the tenant gets 403; an admin may change it and the owner stays', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'mine' });
    const m = mate(u);
    const r = await patch(m, t, note.uuid, { data: 'theirs' });
    assertError(r, 403);
    assertError(await patch(m, t, note.uuid, { is_pinned: true }), 403);
    const admin = mate(u, { admin: true });
    const a = await patch(admin, t, note.uuid, { data: 'admin' });
    assertStatus(a, 200);
    assert.equal(a.body.owner_uuid, u.sub);
    assert.equal(a.body.owner_name, u.name);
    assert.equal(a.body.data, 'admin');
    assert.equal(a.body.version, 2);
  });

  test('another tenant gets 404 (even an admin); unknown note is 404', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'mine' });
    assertError(await patch(user(), t, note.uuid, { data: 'x' }), 404);
    assertError(await patch(user({ admin: true }), t, note.uuid, { data: 'x' }), 404);
    assertError(await patch(u, t, uuid(), { data: 'x' }), 404);
    assertError(await patch(u, uuid(), note.uuid, { data: 'x' }), 404);
    assert.equal((await get(u, t, note.uuid)).body.version, 1);
  });
});

describe('If-Match', () => {
  test('PATCH accepts "N", N, W/"N" and *', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 0 });
    const forms = [(v) => `"${v}"`, (v) => `${v}`, (v) => `W/"${v}"`, () => '*'];
    let v = 1;
    for (const f of forms) {
      const r = await patch(u, t, note.uuid, { data: v }, { 'If-Match': f(v) });
      assertStatus(r, 200);
      v += 1;
      assert.equal(r.body.version, v);
      assert.equal(r.headers.etag, `"${v}"`);
    }
  });

  test('a stale or wrong If-Match on PATCH is 412 and changes nothing', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'a' });
    assertStatus(await patch(u, t, note.uuid, { data: 'b' }), 200);
    for (const h of ['"1"', '1', 'W/"1"', '"3"', '"0"', '"abc"', '"-1"', '""']) {
      assertError(await patch(u, t, note.uuid, { data: 'c' }, { 'If-Match': h }), 412);
    }
    const g = await get(u, t, note.uuid);
    assert.equal(g.body.version, 2);
    assert.equal(g.body.data, 'b');
  });

  test('DELETE with a wrong If-Match is 412 and the note stays; the right one deletes', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertError(await del(u, t, note.uuid, { 'If-Match': '"2"' }), 412);
    assertStatus(await get(u, t, note.uuid), 200);
    const d = await del(u, t, note.uuid, { 'If-Match': '"1"' });
    assertStatus(d, 204);
    assertError(await get(u, t, note.uuid), 404);
  });

  test('restore with a wrong If-Match is 412; with * it restores', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertStatus(await del(u, t, note.uuid), 204);
    assertError(await restore(u, t, note.uuid, { 'If-Match': '"99"' }), 412);
    assertError(await get(u, t, note.uuid), 404);
    const r = await restore(u, t, note.uuid, { 'If-Match': '*' });
    assertStatus(r, 200);
    assertStatus(await get(u, t, note.uuid), 200);
  });

  test('concurrent PATCHes with the same If-Match: exactly one wins', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'start' });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      patch(u, t, note.uuid, { data: `w${i}` }, { 'If-Match': '"1"' })));
    const codes = results.map((r) => r.status).sort();
    assert.deepEqual(codes, [200, 412, 412, 412, 412, 412, 412, 412], `statuses ${codes}`);
    const g = await get(u, t, note.uuid);
    assert.equal(g.body.version, 2);
    assert.equal(g.body.data, results.find((r) => r.status === 200).body.data);
  });

  test('concurrent PATCHes without If-Match each get their own version', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'start' });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => patch(u, t, note.uuid, { data: i })));
    for (const r of results) assertStatus(r, 200);
    assert.deepEqual(results.map((r) => r.body.version).sort((a, b) => a - b), [2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal((await get(u, t, note.uuid)).body.version, 9);
  });
});

describe('soft delete and restore', () => {
  test('DELETE is 204 with no body; the note then is gone from every read', async () => {
    const u = user();
    const t = uuid();
    const keep = await create(u, t, { data: 'keep' });
    const note = await create(u, t, { data: 'gone' });
    const d = await del(u, t, note.uuid);
    assertStatus(d, 204);
    assert.equal(d.text, '');
    assertError(await get(u, t, note.uuid), 404);
    assertError(await request(srv, 'GET', `/notes/${note.uuid}`, { token: u.tok }), 404);
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [keep.uuid]);
    assert.deepEqual(ids((await list(u, `/users/${u.sub}/notes`)).items), [keep.uuid]);
    assertError(await del(u, t, note.uuid), 404);
    assertError(await patch(u, t, note.uuid, { data: 'x' }), 404);
  });

  test('another user gets 403 on DELETE; an admin may delete; another tenant gets 404', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertError(await del(mate(u), t, note.uuid), 403);
    assertError(await del(user(), t, note.uuid), 404);
    assertError(await del(user({ admin: true }), t, note.uuid), 404);
    assertStatus(await get(u, t, note.uuid), 200);
    assertStatus(await del(mate(u, { admin: true }), t, note.uuid), 204);
    assertError(await get(u, t, note.uuid), 404);
  });

  test('restore brings the note back with version +1; deleted_at is never shown', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: 'back', is_pinned: true });
    await sleep(5);
    assertStatus(await del(u, t, note.uuid), 204);
    await sleep(5);
    const r = await restore(u, t, note.uuid);
    assertStatus(r, 200);
    assertNoteShape(r.body);
    assert.ok(r.body.version >= 2 && r.body.version <= 3, `version after restore: ${r.body.version}`);
    assert.equal(r.headers.etag, `"${r.body.version}"`);
    assert.equal(r.body.data, 'back');
    assert.equal(r.body.is_pinned, true);
    assert.equal(r.body.created_at, note.created_at);
    assert.ok(r.body.updated_at > note.updated_at);
    assert.equal(r.body.owner_uuid, u.sub);
    const g = await get(u, t, note.uuid);
    assertStatus(g, 200);
    assert.deepEqual(g.body, r.body);
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [note.uuid]);
    assertStatus(await request(srv, 'GET', `/notes/${note.uuid}`, { token: u.tok }), 200);
    // a change after restore continues the version sequence
    const p = await patch(u, t, note.uuid, { data: 'again' });
    assert.equal(p.body.version, r.body.version + 1);
  });

  test('restoring a live note is 409; an unknown one 404', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertError(await restore(u, t, note.uuid), 409);
    assertError(await restore(u, t, uuid()), 404);
    assert.equal((await get(u, t, note.uuid)).body.version, 1);
  });

  test('restore: another user 403, an admin may, another tenant 404', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    assertStatus(await del(u, t, note.uuid), 204);
    assertError(await restore(mate(u), t, note.uuid), 403);
    assertError(await restore(user(), t, note.uuid), 404);
    assertError(await restore(user({ admin: true }), t, note.uuid), 404);
    assertError(await get(u, t, note.uuid), 404);
    const r = await restore(mate(u, { admin: true }), t, note.uuid);
    assertStatus(r, 200);
    assert.equal(r.body.owner_uuid, u.sub);
  });

  test('delete and restore twice', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t);
    let last = 1;
    for (let i = 0; i < 2; i += 1) {
      assertStatus(await del(u, t, note.uuid), 204);
      const r = await restore(u, t, note.uuid);
      assertStatus(r, 200);
      assert.ok(r.body.version > last);
      last = r.body.version;
    }
  });
});

describe('list of a target', () => {
  test('an empty target lists nothing', async () => {
    const u = user();
    assert.deepEqual(await list(u, notesPath(uuid())), { items: [], next_cursor: null });
  });

  test('items have the note shape and equal what GET answers', async () => {
    const u = user();
    const t = uuid();
    const note = await create(u, t, { data: { deep: { x: [1, { y: null }] } }, is_pinned: true });
    const b = await list(u, notesPath(t));
    assert.equal(b.items.length, 1);
    assertNoteShape(b.items[0]);
    assert.deepEqual(b.items[0], note);
  });

  test('newest updated_at first; a change moves a note to the front', async () => {
    const u = user();
    const t = uuid();
    const a = await create(u, t, { data: 'a' });
    await sleep(3);
    const b = await create(u, t, { data: 'b' });
    await sleep(3);
    const c = await create(u, t, { data: 'c' });
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [c.uuid, b.uuid, a.uuid]);
    await sleep(3);
    assertStatus(await patch(u, t, a.uuid, { data: 'a2' }), 200);
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [a.uuid, c.uuid, b.uuid]);
  });

  test('pinned first (newest updated first among them), then the rest newest first', async () => {
    const u = user();
    const t = uuid();
    const mk = async (d, pin = false) => { const x = await create(u, t, { data: d, is_pinned: pin }); await sleep(3); return x; };
    const a = await mk('a', true);
    const b = await mk('b');
    const c = await mk('c', true);
    const d = await mk('d');
    const e = await mk('e');
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [c.uuid, a.uuid, e.uuid, d.uuid, b.uuid]);
    // pinning b: it becomes the newest pinned
    assertStatus(await patch(u, t, b.uuid, { is_pinned: true }), 200);
    await sleep(3);
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [b.uuid, c.uuid, a.uuid, e.uuid, d.uuid]);
    // changing a pinned note moves it to the front of the pinned ones
    assertStatus(await patch(u, t, a.uuid, { data: 'a2' }), 200);
    await sleep(3);
    assert.deepEqual(ids((await list(u, notesPath(t))).items), [a.uuid, b.uuid, c.uuid, e.uuid, d.uuid]);
    // unpinning c: it is now the newest unpinned
    assertStatus(await patch(u, t, c.uuid, { is_pinned: false }), 200);
    const items = (await list(u, notesPath(t))).items;
    assert.deepEqual(ids(items), [a.uuid, b.uuid, c.uuid, e.uuid, d.uuid]);
    assert.deepEqual(items.map((x) => x.is_pinned), [true, true, false, false, false]);
  });

  test('only the caller\'s tenant is listed, and pages stay full', async () => {
    const u = user();
    const stranger = user();
    const t = uuid();
    const mine = [];
    for (let i = 0; i < 4; i += 1) {
      mine.push(await create(u, t, { data: `mine ${i}` }));
      await create(stranger, t, { data: `theirs ${i}` });
      await create(stranger, t, { data: `theirs ${i}b`, is_pinned: true });
    }
    const all = (await list(u, notesPath(t))).items;
    assert.deepEqual(ids(all), ids(mine).reverse());
    for (const x of all) assert.equal(x.instance_id, u.instance_id);
    const ps = await pages(u, notesPath(t), 3);
    assert.deepEqual(ps.map((p) => p.length), [3, 1]);
    assert.deepEqual(ids(ps.flat()), ids(mine).reverse());
    const theirs = (await list(stranger, notesPath(t))).items;
    assert.equal(theirs.length, 8);
    for (const x of theirs) assert.equal(x.instance_id, stranger.instance_id);
  });

  test('paging: limit splits the list, every note exactly once, in list order', async () => {
    const u = user();
    const t = uuid();
    const made = [];
    for (let i = 0; i < 7; i += 1) {
      made.push(await create(u, t, { data: i, is_pinned: i % 3 === 0 }));
      await sleep(2);
    }
    const full = ids((await list(u, notesPath(t), '?limit=100')).items);
    assert.equal(full.length, 7);
    for (const [limit, sizes] of [[1, [1, 1, 1, 1, 1, 1, 1]], [2, [2, 2, 2, 1]], [3, [3, 3, 1]], [5, [5, 2]], [7, [7]], [25, [7]]]) {
      const ps = await pages(u, notesPath(t), limit);
      assert.deepEqual(ps.map((p) => p.length), sizes, `page sizes with limit=${limit}`);
      assert.deepEqual(ids(ps.flat()), full, `order with limit=${limit}`);
    }
  });

  test('the default page size is 25', async () => {
    const u = user();
    const t = uuid();
    await Promise.all(Array.from({ length: 27 }, (_, i) => create(u, t, { data: i })));
    const first = await list(u, notesPath(t));
    assert.equal(first.items.length, 25);
    assert.equal(typeof first.next_cursor, 'string');
    const second = await list(u, notesPath(t), `?cursor=${encodeURIComponent(first.next_cursor)}`);
    assert.equal(second.items.length, 2);
    assert.equal(second.next_cursor, null);
    assert.equal(new Set([...ids(first.items), ...ids(second.items)]).size, 27);
  });

  test('next_cursor is null on the last page, also when it is exactly full', async () => {
    const u = user();
    const t = uuid();
    for (let i = 0; i < 4; i += 1) await create(u, t, { data: i, is_pinned: i === 0 });
    const p1 = await list(u, notesPath(t), '?limit=2');
    assert.equal(p1.items.length, 2);
    assert.notEqual(p1.next_cursor, null);
    const p2 = await list(u, notesPath(t), `?limit=2&cursor=${encodeURIComponent(p1.next_cursor)}`);
    assert.equal(p2.items.length, 2);
    assert.equal(p2.next_cursor, null, 'a cursor to an empty page');
    const all = await list(u, notesPath(t), '?limit=4');
    assert.equal(all.items.length, 4);
    assert.equal(all.next_cursor, null);
  });

  test('pages across the pinned/unpinned boundary', async () => {
    const u = user();
    const t = uuid();
    const p = [];
    const q = [];
    for (let i = 0; i < 3; i += 1) { p.push(await create(u, t, { data: `p${i}`, is_pinned: true })); await sleep(2); }
    for (let i = 0; i < 3; i += 1) { q.push(await create(u, t, { data: `u${i}` })); await sleep(2); }
    const expect = [...ids(p).reverse(), ...ids(q).reverse()];
    for (const limit of [2, 3, 4]) {
      const ps = await pages(u, notesPath(t), limit);
      assert.deepEqual(ids(ps.flat()), expect, `limit=${limit}`);
    }
  });

  test('soft-deleted notes do not shorten a page', async () => {
    const u = user();
    const t = uuid();
    const made = [];
    for (let i = 0; i < 10; i += 1) { made.push(await create(u, t, { data: i, is_pinned: i >= 8 })); await sleep(2); }
    // list order: 9, 8 (pinned), 7, 6, … 0 ; delete the newest pinned, and a run in the middle
    for (const i of [9, 6, 5, 4, 1]) assertStatus(await del(u, t, made[i].uuid), 204);
    const expect = [8, 7, 3, 2, 0].map((i) => made[i].uuid);
    const ps = await pages(u, notesPath(t), 2);
    assert.deepEqual(ps.map((x) => x.length), [2, 2, 1]);
    assert.deepEqual(ids(ps.flat()), expect);
    const one = await pages(u, notesPath(t), 1);
    assert.deepEqual(one.map((x) => x.length), [1, 1, 1, 1, 1]);
  });

  test('a list where every note is deleted is empty', async () => {
    const u = user();
    const t = uuid();
    for (let i = 0; i < 3; i += 1) {
      const x = await create(u, t, { data: i });
      assertStatus(await del(u, t, x.uuid), 204);
    }
    assert.deepEqual(await list(u, notesPath(t), '?limit=2'), { items: [], next_cursor: null });
  });

  test('limit must be 1–100', async () => {
    const u = user();
    const t = uuid();
    await create(u, t);
    for (const bad of ['0', '101', '-1', 'abc', '1.5', '10x', '', '1e1', '99999999999999999999']) {
      const r = await request(srv, 'GET', `${notesPath(t)}?limit=${bad}`, { token: u.tok });
      assertValidation(r, { limit: true });
    }
    for (const good of ['1', '100', '50']) {
      assertStatus(await request(srv, 'GET', `${notesPath(t)}?limit=${good}`, { token: u.tok }), 200);
    }
  });

  test('a tampered, garbage or foreign cursor is 400 errors.cursor', async () => {
    const u = user();
    const t = uuid();
    const t2 = uuid();
    for (let i = 0; i < 3; i += 1) { await create(u, t, { data: i }); await create(u, t2, { data: i }); }
    const c = (await list(u, notesPath(t), '?limit=1')).next_cursor;
    const c2 = (await list(u, notesPath(t2), '?limit=1')).next_cursor;
    const cu = (await list(u, `/users/${u.sub}/notes`, '?limit=1')).next_cursor;
    assert.ok(c && c2 && cu);
    const flip = (s, i) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    const bad = [
      'abc', '!!!!', 'null', '{}', '%00', 'A'.repeat(5000),
      flip(c, 0), flip(c, Math.floor(c.length / 2)), flip(c, c.length - 1),
      c.slice(0, -2), `${c}AA`,
      Buffer.from('{"target_uuid":"x"}').toString('base64url'),
      c2, // another target's list
      cu, // the user list's cursor
    ];
    for (const b of bad) {
      const r = await request(srv, 'GET', `${notesPath(t)}?cursor=${encodeURIComponent(b)}`, { token: u.tok });
      assertValidation(r, { cursor: true });
    }
    // a list cursor on the user list
    const r = await request(srv, 'GET', `/users/${u.sub}/notes?cursor=${encodeURIComponent(c)}`, { token: u.tok });
    assertValidation(r, { cursor: true });
    // the genuine cursor still works
    assertStatus(await request(srv, 'GET', `${notesPath(t)}?cursor=${encodeURIComponent(c)}`, { token: u.tok }), 200);
  });

  test('another tenant cannot use a cursor to read a tenant\'s list', async () => {
    const u = user();
    const stranger = user();
    const t = uuid();
    for (let i = 0; i < 3; i += 1) await create(u, t, { data: `private ${i}` });
    const c = (await list(u, notesPath(t), '?limit=1')).next_cursor;
    const r = await request(srv, 'GET', `${notesPath(t)}?cursor=${encodeURIComponent(c)}`, { token: stranger.tok });
    if (r.status === 200) {
      assert.deepEqual(r.body.items, [], 'another tenant read notes through a cursor');
    } else {
      assertValidation(r, { cursor: true });
    }
  });
});

describe('list of a user', () => {
  test('GET /users/{u}/notes: the owner\'s notes across targets, newest created first, tenant only', async () => {
    const u = user();
    const m = mate(u);
    const t1 = uuid();
    const t2 = uuid();
    const a = await create(u, t1, { data: 'a' });
    await sleep(3);
    const b = await create(u, t2, { data: 'b', is_pinned: true });
    await sleep(3);
    await create(m, t1, { data: 'mate' });
    const c = await create(u, t1, { data: 'c' });
    await sleep(3);
    // the same user uuid in another tenant
    const twin = newUser({ sub: u.sub });
    twin.tok = srv.token(twin);
    await create(twin, t1, { data: 'twin' });
    // a change does not reorder a created-first list
    assertStatus(await patch(u, t1, a.uuid, { data: 'a2' }), 200);
    const items = (await list(m, `/users/${u.sub}/notes`)).items;
    assert.deepEqual(ids(items), [c.uuid, b.uuid, a.uuid]);
    for (const x of items) { assertNoteShape(x); assert.equal(x.owner_uuid, u.sub); assert.equal(x.instance_id, u.instance_id); }
    assert.equal(items[2].data, 'a2');
    const twinItems = (await list(twin, `/users/${u.sub}/notes`)).items;
    assert.deepEqual(twinItems.map((x) => x.data), ['twin']);
    assert.deepEqual(await list(user(), `/users/${u.sub}/notes`), { items: [], next_cursor: null });
  });

  test('user list paging and deleted notes', async () => {
    const u = user();
    const made = [];
    for (let i = 0; i < 7; i += 1) { made.push(await create(u, uuid(), { data: i })); await sleep(2); }
    assertStatus(await del(u, made[5].target_uuid, made[5].uuid), 204);
    assertStatus(await del(u, made[2].target_uuid, made[2].uuid), 204);
    const expect = [6, 4, 3, 1, 0].map((i) => made[i].uuid);
    const ps = await pages(u, `/users/${u.sub}/notes`, 2);
    assert.deepEqual(ps.map((p) => p.length), [2, 2, 1]);
    assert.deepEqual(ids(ps.flat()), expect);
    assertValidation(await request(srv, 'GET', `/users/${u.sub}/notes?limit=0`, { token: u.tok }), { limit: true });
  });
});

describe('data round-trip', () => {
  // [name, JSON text sent as data, exact value expected back (numbers as text)]
  const cases = [
    ['nested maps and lists', '{"a":{"b":{"c":[1,[2,[3,{"d":"e"}]]]}},"l":[[],{},[{}]]}'],
    ['integers beyond 2^53', '{"a":9007199254740993,"b":-9007199254740993,"c":9223372036854775807,"d":-9223372036854775808,"e":[12345678901234567]}'],
    ['floats', '{"a":1.5,"b":-0.25,"c":3.141592653589793,"d":1e-7,"e":123456.789,"f":-2.5e-100,"h":9.5e125,"g":0.1}'],
    ['integral floats come back as integers', '{"a":2.0,"b":-3.0,"c":0.0,"d":1e2,"e":1.0E3}', '{"a":2,"b":-3,"c":0,"d":100,"e":1000}'],
    ['zero and negative integers', '[0,-1,1,-0]', '[0,-1,1,0]'],
    ['unicode', '{"fr":"héllo wörld","ja":"日本語のメモ","emoji":"😀👍🏽","rtl":"שלום","escaped":"\\u00e9\\ud83d\\ude00"}',
      '{"fr":"héllo wörld","ja":"日本語のメモ","emoji":"😀👍🏽","rtl":"שלום","escaped":"é😀"}'],
    ['control characters and quotes', '{"s":"line1\\nline2\\ttab \\"quoted\\" back\\\\slash \\u0001 \\/"}'],
    ['empty strings', '{"":"","e":"","l":[""]}'],
    ['null, true, false', '{"n":null,"t":true,"f":false,"l":[null,true,false]}'],
    ['a top-level string', '"just text"'],
    ['a top-level number', '42'],
    ['a top-level big integer', '9223372036854775807'],
    ['a top-level list', '[1,"two",{"three":3}]'],
    ['a top-level false', 'false'],
    ['null', 'null'],
    ['an empty map', '{}'],
    ['an empty list', '[]'],
    ['keys that look like DynamoDB types', '{"S":"x","N":"1","M":{"L":[{"NULL":true}]},"BOOL":false,"SS":["a"]}'],
    ['many keys', `{${Array.from({ length: 300 }, (_, i) => `"k${i}":${i}`).join(',')}}`],
    ['nesting 20 deep', `${'{"x":'.repeat(20)}1${'}'.repeat(20)}`],
    ['a string with a NUL character', '{"s":"a\\u0000b"}'],
  ];
  for (const [name, sent, back] of cases) {
    test(name, async () => {
      const u = user();
      const t = uuid();
      const expected = canonExact(parseExact(back || sent));
      const got = (text) => canonExact(parseExact(text));
      const body = `{"data":${sent}}`;
      const r = await request(srv, 'POST', notesPath(t), { token: u.tok, body, headers: { 'Content-Type': 'application/json' } });
      assertStatus(r, 201);
      assert.deepEqual(got(r.text).data, expected, `create answered ${r.text.slice(0, 400)}`);
      const g = await get(u, t, r.body.uuid);
      assert.deepEqual(got(g.text).data, expected, `GET answered ${g.text.slice(0, 400)}`);
      const l = await request(srv, 'GET', notesPath(t), { token: u.tok });
      assert.deepEqual(got(l.text).items[0].data, expected, `list answered ${l.text.slice(0, 400)}`);
      // and through a PATCH
      const p = await request(srv, 'PATCH', notePath(t, r.body.uuid), { token: u.tok, body, headers: { 'Content-Type': 'application/json' } });
      assertStatus(p, 200);
      assert.deepEqual(got(p.text).data, expected, `PATCH answered ${p.text.slice(0, 400)}`);
      assert.deepEqual(got((await get(u, t, r.body.uuid)).text).data, expected);
    });
  }

  test('integers beyond 64 bits are refused with a 400 that says what to do (docs/decisions.md)', async () => {
    // jansson, our JSON parser, holds integers in 64 bits; rather than round a bigger
    // integer silently, the service refuses it and asks for a string.
    const u = user();
    const t = uuid();
    for (const big of ['18446744073709551616', '-99999999999999999999999999999999999999', '9223372036854775808']) {
      const r = await request(srv, 'POST', notesPath(t), { token: u.tok, body: `{"data":{"a":${big}}}`, headers: { 'Content-Type': 'application/json' } });
      assertStatus(r, 400);
      assert.match(r.body.message, /64 bits/, r.text);
      assert.match(r.body.message, /string/, r.text);
    }
    const edge = '{"a":9223372036854775807,"b":-9223372036854775808}';
    const ok = await request(srv, 'POST', notesPath(t), { token: u.tok, body: `{"data":${edge}}`, headers: { 'Content-Type': 'application/json' } });
    assertStatus(ok, 201);
    assert.deepEqual(canonExact(parseExact(ok.text)).data, canonExact(parseExact(edge)), ok.text);
    assert.deepEqual(canonExact(parseExact((await get(u, t, ok.body.uuid)).text)).data, canonExact(parseExact(edge)));
  });

  test('a number outside DynamoDB\'s range is 400 errors.data, on every backend', async () => {
    // SPEC §3: data is stored as a native DynamoDB value; numbers are 1e-130..1e126 in
    // magnitude. The embedded store has DynamoDB's semantics, so it refuses them too (else
    // an export from sqlite could not be imported into DynamoDB).
    const u = user();
    const t = uuid();
    for (const num of ['1e126', '-1e126', '1e-131', '{"deep":[1e300]}']) {
      const r = await request(srv, 'POST', notesPath(t), { token: u.tok, body: `{"data":${num}}`, headers: { 'Content-Type': 'application/json' } });
      assertValidation(r, { data: true });
    }
    assert.deepEqual((await list(u, notesPath(t))).items, []);
  });

  test('the helpers compare exactly (self-check)', () => {
    assert.notDeepEqual(canonExact(parseExact('9007199254740993')), canonExact(parseExact('9007199254740992')));
    assert.notDeepEqual(canonExact(parseExact('2.0')), canonExact(parseExact('2')));
    assert.deepEqual(canonExact(parseExact('1e-7')), canonExact(parseExact('1.0000000000000000e-07')));
    assert.deepEqual(exact({ a: 1, b: [2] }), parseExact('{"b":[2],"a":1}'));
    assert.equal(stringifyExact(n('12345678901234567890')), '12345678901234567890');
  });
});
