// Settings (SPEC §5, §6): tenant-wide, one per key; PUT creates (201) or replaces (200),
// CRM_ADMIN writes and anyone of the tenant reads; config_value any JSON stored as a
// native attribute value; key syntax; versions and If-Match; soft delete; lists by key,
// ?config_type= and ?category= (the caller's tenant only), paged to completion; another
// tenant's settings answer 404 on every route.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  TIMESTAMP_RE, assertError, assertStatus, assertValidation, randomHex, runCli, startServer,
} from './lib/harness.mjs';
import { Client, SERVICE_FIELDS } from './lib/records.mjs';

let srv;
let C;

before(async () => {
  srv = await startServer();
  C = new Client(srv);
});
after(async () => { if (srv) await srv.stop(); });

const one = (k) => `/settings/${encodeURIComponent(k)}`;
const keys = (items) => items.map((x) => x.config_key);
const KEY_RULE = 'must be 1 to 128 characters of A-Z a-z 0-9 _ . : -';

// An admin and a plain user of a new tenant.
function tenant() {
  const admin = C.user({ admin: true });
  return { admin, user: C.mate(admin) };
}

async function put(u, k, json, headers) {
  return C.req(u, 'PUT', one(k), { json, headers });
}

describe('settings: PUT, GET, DELETE', () => {
  test('PUT creates (201, Location, ETag "1"), then replaces whole (200); anyone of the tenant reads', async () => {
    const { admin, user } = tenant();
    const r = await put(admin, 'ui.theme', { config_value: { dark: true, accent: '#fff' }, config_type: 'ui', category: 'look' });
    assertStatus(r, 201);
    assert.equal(r.headers.location, '/settings/ui.theme');
    assert.equal(r.headers.etag, '"1"');
    assert.deepEqual(Object.keys(r.body).sort(), ['category', 'config_key', 'config_type', 'config_value', 'created_at',
      'instance_id', 'owner_name', 'owner_uuid', 'updated_at', 'version']);
    assert.equal(r.body.config_key, 'ui.theme');
    assert.equal(r.body.instance_id, admin.instance_id);
    assert.equal(r.body.owner_uuid, admin.sub);
    assert.deepEqual(r.body.config_value, { dark: true, accent: '#fff' });
    assert.match(r.body.created_at, TIMESTAMP_RE);
    const g = await C.req(user, 'GET', one('ui.theme'));
    assertStatus(g, 200);
    assert.deepEqual(g.body, r.body);
    assert.equal(g.headers.etag, '"1"');

    const admin2 = C.mate(admin, { admin: true });
    const r2 = await put(admin2, 'ui.theme', { config_value: 'plain' });
    assertStatus(r2, 200);
    assert.equal(r2.headers.location, undefined);
    assert.equal(r2.headers.etag, '"2"');
    assert.equal(r2.body.version, 2);
    assert.equal(r2.body.config_value, 'plain');
    assert.equal(r2.body.config_type, undefined); // not sent: gone
    assert.equal(r2.body.category, undefined);
    assert.equal(r2.body.created_at, r.body.created_at);
    assert.equal(r2.body.owner_uuid, admin.sub); // who created it
    assert.ok(r2.body.updated_at >= r.body.updated_at);
  });

  test('config_value is any JSON, stored as a native attribute value', async () => {
    const { admin } = tenant();
    const values = {
      s: 'text', i: 42, neg: -7, f: 1.5, big: 9007199254740991, t: true, fl: false, z: null, l: [1, 'two', null, [], {}],
      m: { a: { b: [{ c: 'd' }] } }, e: '', u: '日本😀',
    };
    for (const [k, v] of Object.entries(values)) {
      const r = await put(admin, `v.${k}`, { config_value: v });
      assertStatus(r, 201);
      assert.deepEqual(r.body.config_value, v, k);
      assert.deepEqual((await C.req(admin, 'GET', one(`v.${k}`))).body.config_value, v, k);
    }
    // as the store holds them: DynamoDB JSON, a map stays a map (export reads the store)
    const x = await runCli(['export', '--table', 'settings'], { env: srv.storage.env, cwd: srv.storage.dir });
    assert.equal(x.code, 0, x.stderr);
    const items = x.stdout.trim().split('\n').map((l) => JSON.parse(l).Item)
      .filter((it) => it.instance_id.S === admin.instance_id);
    const byKey = Object.fromEntries(items.map((it) => [it.config_key.S, it.config_value]));
    assert.deepEqual(byKey['v.m'], { M: { a: { M: { b: { L: [{ M: { c: { S: 'd' } } }] } } } } });
    assert.deepEqual(byKey['v.i'], { N: '42' });
    assert.deepEqual(byKey['v.t'], { BOOL: true });
    assert.deepEqual(byKey['v.z'], { NULL: true });
    assert.deepEqual(byKey['v.s'], { S: 'text' });
  });

  test('CRM_ADMIN writes: others get 403 on PUT (before validation) and DELETE', async () => {
    const { admin, user } = tenant();
    assertError(await put(user, 'a.key', { config_value: 1 }), 403);
    assertError(await put(user, 'a.key', { bogus: 1 }), 403);
    assertError(await C.req(user, 'GET', one('a.key')), 404); // nothing was made
    assertStatus(await put(admin, 'a.key', { config_value: 1 }), 201);
    assertError(await put(user, 'a.key', { config_value: 2 }), 403);
    assertError(await C.req(user, 'DELETE', one('a.key')), 403, { message: 'only a CRM_ADMIN may change a setting' });
    assertError(await C.req(user, 'DELETE', one('no.such.key')), 404, { message: 'setting not found' });
    assert.equal((await C.req(user, 'GET', one('a.key'))).body.config_value, 1);
  });

  test('bad bodies are 400 naming the field', async () => {
    const { admin } = tenant();
    assertValidation(await put(admin, 'k', {}), { config_value: 'required' });
    assertValidation(await put(admin, 'k', { config_value: 1, colour: 1 }), { colour: 'unknown field' });
    assertValidation(await put(admin, 'k', { config_value: 1, config_key: 'x' }), { config_key: 'set by the service; remove it' });
    assertValidation(await put(admin, 'k', { config_value: 1, uuid: 'x' }), { uuid: 'unknown field' });
    for (const [field, val] of Object.entries(SERVICE_FIELDS)) {
      if (field === 'target_uuid') continue; // not a setting's field at all
      assertValidation(await put(admin, 'k', { config_value: 1, [field]: val() }), { [field]: 'set by the service; remove it' });
    }
    assertValidation(await put(admin, 'k', { config_value: 1, target_uuid: 'x' }), { target_uuid: 'unknown field' });
    for (const f of ['config_type', 'category']) {
      for (const v of ['', 'x'.repeat(129), 5, ['a']]) {
        assertValidation(await put(admin, 'k', { config_value: 1, [f]: v }), { [f]: true });
      }
      const ok = await put(admin, 'k', { config_value: 1, [f]: 'x'.repeat(128) });
      assert.ok(ok.status === 201 || ok.status === 200);
      const nul = await put(admin, 'k', { config_value: 1, [f]: null });
      assertStatus(nul, 200);
      assert.equal(nul.body[f], undefined);
    }
    assertValidation(await put(admin, 'k', { config_value: 1e200 }), { config_value: true });
    assertError(await C.req(admin, 'PUT', one('k'), { body: 'x', headers: { 'Content-Type': 'text/plain' } }), 415);
    assertError(await C.req(admin, 'PUT', one('k'), { body: '[', headers: { 'Content-Type': 'application/json' } }), 400);
  });

  test('the key: 1 to 128 of A-Z a-z 0-9 _ . : -', async () => {
    const { admin } = tenant();
    for (const k of ['a', 'Z9', 'crm:deals.stage_order-v2', 'x'.repeat(128), '...', '-:_']) {
      assertStatus(await put(admin, k, { config_value: k }), 201);
      assert.equal((await C.req(admin, 'GET', one(k))).body.config_key, k);
    }
    for (const k of ['has space', 'x'.repeat(129), 'é', 'a+b', 'a@b', 'a,b', 'a~b', "a'b"]) {
      assertValidation(await put(admin, k, { config_value: 1 }), { config_key: KEY_RULE });
      assertError(await C.req(admin, 'GET', one(k)), 404);
      assertError(await C.req(admin, 'DELETE', one(k)), 404);
    }
    assertValidation(await put(admin, 'x'.repeat(300), { config_value: 1 }), { config_key: true });
    assertError(await C.req(admin, 'PUT', '/settings/', { json: { config_value: 1 } }), 405);
  });

  test('versions and If-Match', async () => {
    const { admin } = tenant();
    assertError(await put(admin, 'im', { config_value: 1 }, { 'If-Match': '*' }), 412); // nothing to match
    assertError(await put(admin, 'im', { config_value: 1 }, { 'If-Match': '"1"' }), 412);
    assertStatus(await put(admin, 'im', { config_value: 1 }), 201);
    assertError(await put(admin, 'im', { config_value: 2 }, { 'If-Match': '"2"' }), 412);
    const r = await put(admin, 'im', { config_value: 2 }, { 'If-Match': '"1"' });
    assertStatus(r, 200);
    assert.equal(r.body.version, 2);
    assertStatus(await put(admin, 'im', { config_value: 3 }, { 'If-Match': '*' }), 200);
    assertError(await C.req(admin, 'DELETE', one('im'), { headers: { 'If-Match': '"2"' } }), 412);
    assertStatus(await C.req(admin, 'DELETE', one('im'), { headers: { 'If-Match': '"3"' } }), 204);
  });

  test('DELETE is soft: gone from reads and lists; a PUT makes it anew (201), its version going on', async () => {
    const { admin, user } = tenant();
    assertStatus(await put(admin, 'gone', { config_value: 'old', config_type: 't' }), 201);
    assertStatus(await put(admin, 'gone', { config_value: 'older', config_type: 't' }), 200);
    const d = await C.req(admin, 'DELETE', one('gone'));
    assertStatus(d, 204);
    assert.equal(d.text, '');
    assertError(await C.req(user, 'GET', one('gone')), 404);
    assertError(await C.req(admin, 'DELETE', one('gone')), 404);
    assert.deepEqual((await C.list(user, '/settings')).items, []);
    assert.deepEqual((await C.list(user, '/settings', '?config_type=t')).items, []);
    assertError(await put(admin, 'gone', { config_value: 'new' }, { 'If-Match': '"2"' }), 412); // the old one matches nothing
    const again = await put(admin, 'gone', { config_value: 'new' });
    assertStatus(again, 201);
    assert.equal(again.body.version, 4);
    assert.equal(again.headers.etag, '"4"');
    assert.equal(again.body.config_type, undefined);
    assertError(await C.req(admin, 'POST', `${one('gone')}/restore`), 404); // settings have no restore
  });

  test('another tenant\'s settings are 404 on every route; the same key is theirs alone', async () => {
    const a = tenant();
    const b = tenant();
    assertStatus(await put(a.admin, 'shared.name', { config_value: 'A', category: 'c1', config_type: 't1' }), 201);
    assertError(await C.req(b.admin, 'GET', one('shared.name')), 404);
    assertError(await C.req(b.admin, 'DELETE', one('shared.name')), 404);
    assertError(await put(b.admin, 'shared.name', { config_value: 'B' }, { 'If-Match': '"1"' }), 412);
    assert.deepEqual((await C.list(b.user, '/settings')).items, []);
    assert.deepEqual((await C.list(b.user, '/settings', '?category=c1')).items, []);
    assert.deepEqual((await C.list(b.user, '/settings', '?config_type=t1')).items, []);
    const mine = await put(b.admin, 'shared.name', { config_value: 'B', category: 'c1' });
    assertStatus(mine, 201);
    assert.equal(mine.body.version, 1);
    assert.equal((await C.req(a.user, 'GET', one('shared.name'))).body.config_value, 'A');
    assert.deepEqual((await C.list(a.user, '/settings', '?category=c1')).items.map((x) => x.config_value), ['A']);
    assert.deepEqual((await C.list(b.user, '/settings', '?category=c1')).items.map((x) => x.config_value), ['B']);
  });
});

describe('settings: lists', () => {
  let t;
  const made = []; // [key, type, category], in creation order
  before(async () => {
    t = tenant();
    const other = tenant();
    const cat = `cat-${randomHex(4)}`;
    t.cat = cat;
    for (let i = 0; i < 11; i += 1) {
      const k = `k${String((i * 7) % 11).padStart(2, '0')}`;
      const type = ['a', 'b', undefined][i % 3];
      const category = i % 2 ? cat : undefined;
      const json = { config_value: i, ...(type ? { config_type: type } : {}), ...(category ? { category } : {}) };
      assertStatus(await put(t.admin, k, json), 201);
      made.push([k, type, category]);
      // the other tenant: the same category and types
      assertStatus(await put(other.admin, k, json), 201);
    }
    assertStatus(await C.req(t.admin, 'DELETE', one(made[3][0])), 204);
    made.splice(3, 1);
  });

  test('all of the tenant\'s settings, by key, every page size', async () => {
    const want = made.map((m) => m[0]).sort();
    for (const limit of [1, 2, 3, 4, 10, 25]) {
      assert.deepEqual(keys(await C.all(t.user, '/settings', limit)), want, `limit ${limit}`);
    }
  });

  test('?config_type= lists that type\'s', async () => {
    for (const type of ['a', 'b']) {
      const want = made.filter((m) => m[1] === type).map((m) => m[0]).sort();
      assert.ok(want.length >= 3);
      for (const limit of [1, 2, 5]) {
        assert.deepEqual(keys(await C.all(t.user, '/settings', limit, `&config_type=${type}`)).sort(), want);
      }
    }
    assert.deepEqual((await C.list(t.user, '/settings', '?config_type=none')).items, []);
  });

  test('?category= lists that category\'s, oldest first, only the caller\'s tenant; with ?config_type= too', async () => {
    const want = made.filter((m) => m[2] === t.cat).map((m) => m[0]);
    assert.ok(want.length >= 4);
    for (const limit of [1, 2, 3, 25]) {
      assert.deepEqual(keys(await C.all(t.user, '/settings', limit, `&category=${t.cat}`)), want);
    }
    const both = made.filter((m) => m[2] === t.cat && m[1] === 'a').map((m) => m[0]);
    assert.deepEqual(keys(await C.all(t.user, '/settings', 1, `&category=${t.cat}&config_type=a`)), both);
  });

  test('bad list parameters are 400 naming them; a cursor is good only for its own list', async () => {
    assertValidation(await C.req(t.user, 'GET', '/settings?config_type='), { config_type: true });
    assertValidation(await C.req(t.user, 'GET', `/settings?config_type=${'x'.repeat(129)}`), { config_type: true });
    assertValidation(await C.req(t.user, 'GET', '/settings?category='), { category: true });
    assertValidation(await C.req(t.user, 'GET', '/settings?limit=0'), { limit: true });
    assertValidation(await C.req(t.user, 'GET', '/settings?cursor=xyz'), { cursor: true });
    const first = await C.list(t.user, '/settings', '?limit=1&config_type=a');
    const c = encodeURIComponent(first.next_cursor);
    assertValidation(await C.req(t.user, 'GET', `/settings?config_type=b&cursor=${c}`), { cursor: true });
    assertValidation(await C.req(t.user, 'GET', `/settings?cursor=${c}`), { cursor: true });
    assertValidation(await C.req(C.user(), 'GET', `/settings?config_type=a&cursor=${c}`), { cursor: true });
  });
});
