// Shared black-box tests of a resource attached to CRM records (/targets/{t}/<plural>),
// as notes, comments and files are (SPEC §3-§6): create with a client uuid, read, change,
// soft delete, restore, versions and If-Match, owner/admin rules, another tenant's
// items answering 404 on every route, and lists paged to completion (by record and by
// owner). Each resource's test file calls recordTests() and adds its own rules.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  TIMESTAMP_RE, UUID_RE, assertError, assertStatus, assertValidation, newUser, request, sleep,
  startServer, uuid,
} from './harness.mjs';

// A client of one server: users with tokens, and the calls every resource test makes.
export class Client {
  constructor(srv) { this.srv = srv; }

  user(opts) {
    const u = newUser(opts);
    u.tok = this.srv.token(u);
    return u;
  }

  // Another user of u's tenant.
  mate(u, opts = {}) { return this.user({ instance: u.instance_id, ...opts }); }

  req(u, method, p, opts = {}) { return request(this.srv, method, p, { token: u.tok, ...opts }); }

  // One page of a list (200 with {items, next_cursor} and nothing else).
  async list(u, p, query = '') {
    const r = await this.req(u, 'GET', `${p}${query}`);
    assertStatus(r, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['items', 'next_cursor']);
    assert.ok(Array.isArray(r.body.items));
    return r.body;
  }

  // Every page of a list with limit, following next_cursor to the end; returns the pages.
  async pages(u, p, limit, extra = '') {
    const out = [];
    let cursor = null;
    for (let i = 0; i < 500; i += 1) {
      const q = `?limit=${limit}${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const b = await this.list(u, p, q);
      out.push(b.items);
      if (b.next_cursor === null) return out;
      assert.equal(typeof b.next_cursor, 'string');
      assert.ok(b.next_cursor.length > 0);
      cursor = b.next_cursor;
    }
    throw new Error(`${p}: the list does not end`);
  }

  // Every item of a list, paged with limit; checks every page but the last is full.
  async all(u, p, limit, extra = '') {
    const pages = await this.pages(u, p, limit, extra);
    pages.slice(0, -1).forEach((pg, i) => assert.equal(pg.length, limit, `page ${i} of ${p} is short`));
    return pages.flat();
  }
}

export const ids = (items) => items.map((x) => x.uuid);

// 'YYYY-MM-DD HH:MM:SS.ffffff' (naive UTC) to epoch ms
export const tsMs = (s) => Date.parse(`${s.replace(' ', 'T').slice(0, 23)}Z`);

// The fields SPEC §5 says the service sets: sending one on create or PATCH is 400.
export const SERVICE_FIELDS = {
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

// Runs the tests every record resource passes. spec:
//   plural     'comments'
//   name       'comment' (in messages: "<name> not found")
//   body()     a valid create body (a new object each call)
//   patch      a valid PATCH body, and check(item) that it was applied
//   fields     the exact sorted field names of an item created from body()
//   order      'oldest' | 'newest': the record's list order (by created_at)
//   orderParam true when ?order=asc|desc turns it
export function recordTests(spec) {
  const { plural, name } = spec;
  const coll = (t) => `/targets/${encodeURIComponent(t)}/${plural}`;
  const one = (t, id) => `${coll(t)}/${id}`;
  let srv;
  let C;

  before(async () => {
    srv = await startServer();
    C = new Client(srv);
  });
  after(async () => { if (srv) await srv.stop(); });

  async function create(u, t, json = spec.body()) {
    const r = await C.req(u, 'POST', coll(t), { json });
    assertStatus(r, 201);
    return r.body;
  }

  describe(`${plural}: create`, () => {
    test('201 with Location, ETag "1" and the whole item', async () => {
      const u = C.user();
      const t = `acc ${uuid()} ü`;
      const t0 = Date.now();
      const body = spec.body();
      const r = await C.req(u, 'POST', coll(t), { json: body });
      assertStatus(r, 201);
      const it = r.body;
      assert.deepEqual(Object.keys(it).sort(), spec.fields);
      assert.match(it.uuid, UUID_RE);
      assert.equal(r.headers.location, one(t, it.uuid));
      assert.equal(r.headers.etag, '"1"');
      assert.equal(it.target_uuid, t);
      assert.equal(it.instance_id, u.instance_id);
      assert.equal(it.owner_uuid, u.sub);
      assert.equal(it.owner_name, u.name);
      assert.equal(it.version, 1);
      assert.match(it.created_at, TIMESTAMP_RE);
      assert.equal(it.created_at, it.updated_at);
      const ts = tsMs(it.created_at);
      assert.ok(ts >= t0 - 5000 && ts <= Date.now() + 5000, `created_at ${it.created_at} is not now (UTC)`);
      for (const [k, v] of Object.entries(body)) assert.deepEqual(it[k], v, k);
      const got = await C.req(u, 'GET', one(t, it.uuid));
      assertStatus(got, 200);
      assert.deepEqual(got.body, it);
      assert.equal(got.headers.etag, '"1"');
    });

    test('an unknown field is 400 naming it', async () => {
      const u = C.user();
      const t = uuid();
      assertValidation(await C.req(u, 'POST', coll(t), { json: { ...spec.body(), colour: 'red' } }),
        { colour: 'unknown field' });
      assert.deepEqual((await C.list(u, coll(t))).items, []);
    });

    for (const [field, val] of Object.entries(SERVICE_FIELDS)) {
      test(`sending ${field} is 400 "set by the service; remove it"`, async () => {
        const u = C.user();
        const t = uuid();
        assertValidation(await C.req(u, 'POST', coll(t), { json: { ...spec.body(), [field]: val() } }),
          { [field]: 'set by the service; remove it' });
        assert.deepEqual((await C.list(u, coll(t))).items, []);
      });
    }

    test('a body that is not a JSON object is 400; no body is 400', async () => {
      const u = C.user();
      const t = uuid();
      assertError(await C.req(u, 'POST', coll(t), { json: [1] }), 400);
      assertError(await C.req(u, 'POST', coll(t), { body: '{"a":', headers: { 'Content-Type': 'application/json' } }), 400);
      assertError(await C.req(u, 'POST', coll(t)), 400);
      assertError(await C.req(u, 'POST', coll(t), { body: 'x=1', headers: { 'Content-Type': 'text/plain' } }), 415);
    });

    test('a client uuid: used; a retry answers 200 with the item; any other use is 409', async () => {
      const u = C.user();
      const t = uuid();
      const id = uuid();
      const body = { ...spec.body(), uuid: id.toUpperCase() };
      const first = await C.req(u, 'POST', coll(t), { json: body });
      assertStatus(first, 201);
      assert.equal(first.body.uuid, id);
      const again = await C.req(u, 'POST', coll(t), { json: body });
      assertStatus(again, 200);
      assert.deepEqual(again.body, first.body);
      assertError(await C.req(C.mate(u), 'POST', coll(t), { json: body }), 409);
      assertError(await C.req(u, 'POST', coll(uuid()), { json: body }), 409);
      assertError(await C.req(C.user(), 'POST', coll(t), { json: body }), 409);
      assert.deepEqual(ids((await C.list(u, coll(t))).items), [id]);
      assertValidation(await C.req(u, 'POST', coll(t), { json: { ...spec.body(), uuid: 'nope' } }), { uuid: true });
    });

    test('an unusable record id is 404', async () => {
      const u = C.user();
      assertError(await C.req(u, 'POST', coll('x'.repeat(257)), { json: spec.body() }), 404);
      assertError(await C.req(u, 'POST', coll('a\u0001b'), { json: spec.body() }), 404);
    });
  });

  describe(`${plural}: read, change, delete, restore`, () => {
    test('PATCH: the owner changes it; version, updated_at and ETag move; If-Match', async () => {
      const u = C.user();
      const t = uuid();
      const it = await create(u, t);
      await sleep(5);
      assertError(await C.req(u, 'PATCH', one(t, it.uuid), { json: spec.patch.body, headers: { 'If-Match': '"2"' } }), 412);
      const r = await C.req(u, 'PATCH', one(t, it.uuid), { json: spec.patch.body, headers: { 'If-Match': '"1"' } });
      assertStatus(r, 200);
      assert.equal(r.body.version, 2);
      assert.equal(r.headers.etag, '"2"');
      assert.equal(r.body.created_at, it.created_at);
      assert.ok(r.body.updated_at > it.updated_at);
      spec.patch.check(r.body);
      const got = await C.req(u, 'GET', one(t, it.uuid));
      assert.deepEqual(got.body, r.body);
      const w = await C.req(u, 'PATCH', one(t, it.uuid), { json: spec.patch.body, headers: { 'If-Match': 'W/"2"' } });
      assertStatus(w, 200);
      assert.equal(w.body.version, 3);
    });

    test('PATCH refusals: {} is 400, a service field is 400, the uuid cannot change', async () => {
      const u = C.user();
      const t = uuid();
      const it = await create(u, t);
      const empty = await C.req(u, 'PATCH', one(t, it.uuid), { json: {} });
      assertError(empty, 400);
      assert.ok(Object.keys(empty.body.errors).length === 1);
      assertValidation(await C.req(u, 'PATCH', one(t, it.uuid), { json: { ...spec.patch.body, owner_uuid: uuid() } }),
        { owner_uuid: 'set by the service; remove it' });
      assertValidation(await C.req(u, 'PATCH', one(t, it.uuid), { json: { ...spec.patch.body, uuid: uuid() } }),
        { uuid: true });
      assertValidation(await C.req(u, 'PATCH', one(t, it.uuid), { json: { ...spec.patch.body, nope: 1 } }),
        { nope: 'unknown field' });
      assert.equal((await C.req(u, 'GET', one(t, it.uuid))).body.version, 1);
    });

    test('owner or CRM_ADMIN: another user of the tenant reads it, gets 403 on changes', async () => {
      const u = C.user();
      const t = uuid();
      const it = await create(u, t);
      const m = C.mate(u);
      assertStatus(await C.req(m, 'GET', one(t, it.uuid)), 200);
      const f = await C.req(m, 'PATCH', one(t, it.uuid), { json: { bogus: 1 } }); // 403 before 400
      assertError(f, 403, { message: `only the ${name}'s owner or a CRM_ADMIN may change it` });
      assertError(await C.req(m, 'DELETE', one(t, it.uuid)), 403);
      const admin = C.mate(u, { admin: true });
      assertStatus(await C.req(admin, 'PATCH', one(t, it.uuid), { json: spec.patch.body }), 200);
      assertStatus(await C.req(admin, 'DELETE', one(t, it.uuid)), 204);
      assertError(await C.req(m, 'POST', `${one(t, it.uuid)}/restore`), 403);
      const back = await C.req(admin, 'POST', `${one(t, it.uuid)}/restore`);
      assertStatus(back, 200);
      assert.equal(back.body.owner_uuid, u.sub); // the owner stays
    });

    test('DELETE is soft (204); the item is gone from reads and lists; restore brings it back', async () => {
      const u = C.user();
      const t = uuid();
      const it = await create(u, t);
      const keep = await create(u, t);
      assertError(await C.req(u, 'DELETE', one(t, it.uuid), { headers: { 'If-Match': '"7"' } }), 412);
      const d = await C.req(u, 'DELETE', one(t, it.uuid), { headers: { 'If-Match': '"1"' } });
      assertStatus(d, 204);
      assert.equal(d.text, '');
      assertError(await C.req(u, 'GET', one(t, it.uuid)), 404, { message: `${name} not found` });
      assertError(await C.req(u, 'PATCH', one(t, it.uuid), { json: spec.patch.body }), 404);
      assertError(await C.req(u, 'DELETE', one(t, it.uuid)), 404);
      assert.deepEqual(ids((await C.list(u, coll(t))).items), [keep.uuid]);
      assert.deepEqual(ids(await C.all(u, `/users/${u.sub}/${plural}`, 5)), [keep.uuid]);
      assertError(await C.req(u, 'POST', `${one(t, it.uuid)}/restore`, { headers: { 'If-Match': '"1"' } }), 412);
      const r = await C.req(u, 'POST', `${one(t, it.uuid)}/restore`, { headers: { 'If-Match': '"2"' } });
      assertStatus(r, 200);
      assert.equal(r.body.version, 3);
      assert.equal(r.headers.etag, '"3"');
      assert.equal(r.body.deleted_at, undefined);
      assertError(await C.req(u, 'POST', `${one(t, it.uuid)}/restore`), 409);
      assert.equal((await C.list(u, coll(t))).items.length, 2);
    });

    test('a path uuid that is not a UUID, or of no item, is 404', async () => {
      const u = C.user();
      const t = uuid();
      for (const [m, json] of [['GET'], ['PATCH', spec.patch.body], ['DELETE']]) {
        assertError(await C.req(u, m, one(t, 'not-a-uuid'), { json }), 404);
        assertError(await C.req(u, m, one(t, uuid()), { json }), 404);
      }
      assertError(await C.req(u, 'POST', `${one(t, uuid())}/restore`), 404);
    });

    test('another tenant\'s item is 404 on every route, whatever the body or role', async () => {
      const u = C.user();
      const t = uuid();
      const it = await create(u, t);
      for (const x of [C.user(), C.user({ admin: true }), C.user({ sub: u.sub })]) {
        assertError(await C.req(x, 'GET', one(t, it.uuid)), 404, { message: `${name} not found` });
        assertError(await C.req(x, 'PATCH', one(t, it.uuid), { json: { bogus: 1 } }), 404);
        assertError(await C.req(x, 'PATCH', one(t, it.uuid), { json: spec.patch.body, headers: { 'If-Match': '"9"' } }), 404);
        assertError(await C.req(x, 'DELETE', one(t, it.uuid)), 404);
        assertError(await C.req(x, 'POST', `${one(t, it.uuid)}/restore`), 404);
        assert.deepEqual((await C.list(x, coll(t))).items, []);
        assert.deepEqual((await C.list(x, `/users/${u.sub}/${plural}`)).items, []);
      }
      // deleted, it is still 404 for them (restore included)
      assertStatus(await C.req(u, 'DELETE', one(t, it.uuid)), 204);
      assertError(await C.req(C.user({ admin: true }), 'POST', `${one(t, it.uuid)}/restore`), 404);
      const r = await C.req(u, 'GET', one(t, it.uuid));
      assertError(r, 404);
    });
  });

  describe(`${plural}: lists`, () => {
    // 9 items on one record by two users of one tenant (3 deleted), and another tenant's
    // items on the same record id.
    let u;
    let m;
    let t;
    let made; // oldest first, live only
    let mine; // u's, oldest first, live only
    before(async () => {
      u = C.user();
      m = C.mate(u);
      t = `rec-${uuid()}`;
      made = [];
      mine = [];
      for (let i = 0; i < 9; i += 1) {
        const who = i % 3 === 2 ? m : u;
        const it = await create(who, t);
        if (i === 1 || i === 4 || i === 8) {
          assertStatus(await C.req(who, 'DELETE', one(t, it.uuid)), 204);
        } else {
          made.push(it.uuid);
          if (who === u) mine.push(it.uuid);
        }
        const other = C.user();
        await create(other, t);
        await sleep(3);
      }
    });

    test('the record\'s list is in order, and every page size gives every item once', async () => {
      const want = spec.order === 'oldest' ? made : [...made].reverse();
      assert.deepEqual(ids((await C.list(u, coll(t))).items), want);
      for (const limit of [1, 2, 3, 5, 6, 100]) {
        assert.deepEqual(ids(await C.all(u, coll(t), limit)), want, `limit ${limit}`);
      }
      const pages = await C.pages(u, coll(t), 3);
      assert.equal(pages.length, 2); // 6 live items: two full pages, the last with a null cursor
    });

    if (spec.orderParam) {
      test('?order=desc and ?order=asc', async () => {
        const desc = spec.order === 'oldest' ? [...made].reverse() : made;
        assert.deepEqual(ids(await C.all(u, coll(t), 4, '&order=desc')), desc);
        assert.deepEqual(ids(await C.all(u, coll(t), 4, '&order=asc')), [...desc].reverse());
        assertValidation(await C.req(u, 'GET', `${coll(t)}?order=up`), { order: 'must be asc or desc' });
        // a cursor of one order is not good for the other
        const first = await C.list(u, coll(t), '?limit=1&order=desc');
        const r = await C.req(u, 'GET', `${coll(t)}?order=asc&cursor=${encodeURIComponent(first.next_cursor)}`);
        assertValidation(r, { cursor: true });
      });
    }

    test('a user\'s list: theirs, newest first, within the caller\'s tenant, paged', async () => {
      const want = [...mine].reverse();
      for (const limit of [1, 2, 4, 25]) {
        assert.deepEqual(ids(await C.all(u, `/users/${u.sub}/${plural}`, limit)), want);
      }
      // read by a mate: the same; by another tenant: nothing
      assert.deepEqual(ids(await C.all(m, `/users/${u.sub}/${plural}`, 2)), want);
      const theirs = made.filter((x) => !mine.includes(x)).reverse();
      assert.equal(theirs.length, 2);
      assert.deepEqual(ids(await C.all(u, `/users/${m.sub}/${plural}`, 1)), theirs);
      assert.deepEqual((await C.list(C.user(), `/users/${u.sub}/${plural}`)).items, []);
    });

    test('bad list parameters are 400 naming them', async () => {
      for (const q of ['?limit=0', '?limit=101', '?limit=x', '?limit=1.5']) {
        assertValidation(await C.req(u, 'GET', `${coll(t)}${q}`), { limit: 'must be a whole number from 1 to 100' });
      }
      assertValidation(await C.req(u, 'GET', `${coll(t)}?cursor=garbage`), { cursor: true });
      assertValidation(await C.req(u, 'GET', `/users/${u.sub}/${plural}?cursor=garbage`), { cursor: true });
      // a cursor of one record is not good for another, nor for another tenant
      const first = await C.list(u, coll(t), '?limit=1');
      const c = encodeURIComponent(first.next_cursor);
      assertValidation(await C.req(u, 'GET', `${coll(uuid())}?cursor=${c}`), { cursor: true });
      assertValidation(await C.req(C.user(), 'GET', `${coll(t)}?cursor=${c}`), { cursor: true });
    });
  });

  return { get C() { return C; }, create, coll, one };
}
