// The notes defects of issue 7, each with the test that would have caught it, on both
// backends: a client uuid names at most one note of a tenant under any concurrency; its
// 409 tells nothing about the note that holds it; pinned notes beyond 1,000 are listed
// (paged for real); a version at 2^63-1 is refused cleanly; Location is percent-encoded;
// a list answer stops near 1 MB and stays complete.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  Storage, assertError, assertStatus, newUser, randomHex, request, runCli, startServer, uuid,
} from './lib/harness.mjs';

let srv;
let st;

// Runs an `actionstools` command on the storage of this file.
async function cli(args) {
  const r = await runCli(args, { env: st.env, cwd: st.dir, timeoutMs: 120000 });
  assert.equal(r.code, 0, `actionstools ${args.join(' ')}: ${r.stderr}`);
  return r;
}

// Writes DynamoDB JSON lines into a table through `actionstools import` (fast seeding).
async function seed(table, items) {
  const f = path.join(st.dir, `seed-${randomHex(4)}.jsonl`);
  fs.writeFileSync(f, `${items.map((Item) => JSON.stringify({ Item })).join('\n')}\n`);
  await cli(['import', '--table', table, '--in', f]);
  fs.rmSync(f);
}

before(async () => {
  st = new Storage();
  await cli(['setup']); // import needs the tables, also on sqlite
  st.prepared = true;
  srv = await startServer({ storage: st });
});
after(async () => {
  if (srv) await srv.stop();
  if (st) st.cleanup();
});

function user(opts) {
  const u = newUser(opts);
  u.tok = srv.token(u);
  return u;
}
const mate = (u, opts = {}) => user({ instance: u.instance_id, ...opts });
const notesPath = (t) => `/targets/${encodeURIComponent(t)}/notes`;
const post = (u, t, json) => request(srv, 'POST', notesPath(t), { token: u.tok, json });

// A stored note as the service writes it (DynamoDB JSON), for seeding.
function noteItem(u, t, { id = uuid(), pinned = false, updated, deleted, version = '1', data = 'seeded' } = {}) {
  const item = {
    target_uuid: { S: t },
    uuid: { S: id },
    instance_id: { S: u.instance_id },
    owner_uuid: { S: u.sub },
    owner_name: { S: u.name },
    data: { S: data },
    is_pinned: { N: pinned ? '1' : '0' },
    version: { N: version },
    created_at: { S: updated },
    updated_at: { S: updated },
  };
  if (deleted) item.deleted_at = { S: updated };
  return item;
}

// 'YYYY-MM-DD HH:MM:SS.ffffff' of the i-th second after a fixed day, microseconds j
function ts(i, j = 0) {
  const d = new Date(Date.UTC(2023, 0, 1) + i * 1000);
  return `${d.toISOString().slice(0, 19).replace('T', ' ')}.${String(j).padStart(6, '0')}`;
}

// Every page of a list; returns {items, pages}.
async function listAll(u, p, limit) {
  const items = [];
  const pages = [];
  let cursor = null;
  for (let i = 0; i < 2000; i += 1) {
    const q = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await request(srv, 'GET', `${p}${q}`, { token: u.tok });
    assertStatus(r, 200);
    items.push(...r.body.items);
    pages.push(r);
    if (r.body.next_cursor === null) return { items, pages };
    cursor = r.body.next_cursor;
  }
  throw new Error('the list does not end');
}

describe('a client uuid names at most one note of a tenant', () => {
  test('30 concurrent creates with one uuid on 30 targets: exactly one 201, every round', async () => {
    const u = user();
    for (let round = 0; round < 25; round += 1) {
      const id = uuid();
      const targets = Array.from({ length: 30 }, () => `r${round}-${randomHex(4)}`);
      const rs = await Promise.all(targets.map((t) => post(u, t, { uuid: id, data: t })));
      const created = rs.filter((r) => r.status === 201);
      assert.equal(created.length, 1, `round ${round}: ${rs.map((r) => r.status).join(',')}`);
      for (const r of rs) if (r.status !== 201) assertError(r, 409);
      const g = await request(srv, 'GET', `/notes/${id}`, { token: u.tok });
      assertStatus(g, 200);
      assert.equal(g.body.target_uuid, created[0].body.target_uuid);
    }
  });

  test('concurrent creates by several users of a tenant on one target: one 201, the rest 409', async () => {
    const u = user();
    const users = [u, ...Array.from({ length: 9 }, () => mate(u))];
    for (let round = 0; round < 10; round += 1) {
      const id = uuid();
      const t = `s${round}-${randomHex(4)}`;
      const rs = await Promise.all(users.map((x) => post(x, t, { uuid: id, data: x.sub })));
      assert.equal(rs.filter((r) => r.status === 201).length, 1, rs.map((r) => r.status).join(','));
      assert.equal(rs.filter((r) => r.status === 409).length, 9);
    }
  });

  test('sequential retries: the same target answers 200, any other target 409, many times', async () => {
    const u = user();
    const id = uuid();
    const t = `seq-${randomHex(4)}`;
    assertStatus(await post(u, t, { uuid: id, data: 1 }), 201);
    for (let i = 0; i < 10; i += 1) {
      assertStatus(await post(u, t, { uuid: id, data: 1 }), 200);
      assertError(await post(u, `${t}-${i}`, { uuid: id, data: 1 }), 409);
    }
    const mine = await request(srv, 'GET', `/users/${u.sub}/notes?limit=100`, { token: u.tok });
    assert.deepEqual(mine.body.items.map((x) => x.uuid), [id]);
  });

  test('a create whose claim was written but not its note (a crash in between) is finished by its retry', async () => {
    const u = user();
    const id = uuid();
    const t = `half-${randomHex(4)}`;
    await seed('counters', [{
      counter_seq_key: { S: `uuid#notes#${u.instance_id}#${id}` },
      resource: { S: 'notes' },
      instance_id: { S: u.instance_id },
      uuid: { S: id },
      partition: { S: t },
      owner_uuid: { S: u.sub },
      created_at: { S: ts(0) },
    }]);
    assertError(await post(mate(u), t, { uuid: id, data: 'not the owner' }), 409);
    assertError(await post(u, `${t}-other`, { uuid: id, data: 'another target' }), 409);
    const r = await post(u, t, { uuid: id, data: 'finished' });
    assertStatus(r, 201);
    assert.equal(r.body.uuid, id);
    assertStatus(await post(u, t, { uuid: id, data: 'again' }), 200);
  });

  test('a note written without a claim (by the original service) still holds its uuid', async () => {
    const u = user();
    const id = uuid();
    const t = `legacy-${randomHex(4)}`;
    await seed('notes', [noteItem(u, t, { id, updated: ts(5) })]);
    for (let i = 0; i < 3; i += 1) assertError(await post(u, `${t}-x`, { uuid: id, data: 1 }), 409);
    const again = await post(u, t, { uuid: id, data: 1 });
    assertStatus(again, 200);
    assert.equal(again.body.data, 'seeded');
    assertError(await request(srv, 'GET', `${notesPath(`${t}-x`)}/${id}`, { token: u.tok }), 404);
  });

  test('the same uuid in another tenant is its own', async () => {
    const u = user();
    const stranger = user();
    const id = uuid();
    assertStatus(await post(u, 'shared-a', { uuid: id, data: 1 }), 201);
    assertStatus(await post(stranger, 'shared-b', { uuid: id, data: 2 }), 201);
    assert.equal((await request(srv, 'GET', `/notes/${id}`, { token: stranger.tok })).body.data, 2);
    assert.equal((await request(srv, 'GET', `/notes/${id}`, { token: u.tok })).body.data, 1);
  });
});

describe('the 409 for an unusable uuid tells nothing about the note that holds it', () => {
  test('another tenant\'s note, another record, another owner, a deleted note: one message', async () => {
    const u = user();
    const t = `m-${randomHex(4)}`;
    const message = (id) => `the uuid ${id} cannot be used for a new note; send a new uuid or none`;
    const theirs = uuid();
    assertStatus(await post(u, t, { uuid: theirs, data: 'secret of tenant 1' }), 201);
    const cases = [];
    cases.push([theirs, await post(user(), t, { uuid: theirs, data: 'x' })]);          // another tenant
    cases.push([theirs, await post(u, `${t}-2`, { uuid: theirs, data: 'x' })]);        // another record
    cases.push([theirs, await post(mate(u), t, { uuid: theirs, data: 'x' })]);         // another owner
    const gone = uuid();
    const made = await post(u, t, { uuid: gone, data: 'x' });
    assertStatus(await request(srv, 'DELETE', `${notesPath(t)}/${made.body.uuid}`, { token: u.tok }), 204);
    cases.push([gone, await post(u, t, { uuid: gone, data: 'x' })]);                  // deleted
    for (const [id, r] of cases) {
      assertError(r, 409, { message: message(id) });
      assert.deepEqual(Object.keys(r.body), ['message']);
    }
  });
});

describe('pinned notes beyond 1,000 are listed, page by page', () => {
  // [pinned live, pinned deleted, unpinned live, other tenant's pinned] per record
  const shapes = [[1100, 20, 30, 40], [101, 3, 5, 5], [100, 0, 3, 0], [99, 1, 2, 120]];
  const made = [];
  before(async () => {
    const items = [];
    for (const [np, nd, nu, nx] of shapes) {
      const u = user();
      const stranger = user();
      const t = `pins-${np}-${randomHex(4)}`;
      const rec = { u, t, pinned: [], unpinned: [] };
      let s = 0;
      // interleave pinned and unpinned in time, and make some share a second
      for (let i = 0; i < np + nd + nu; i += 1) {
        const kind = i < np ? 'pinned' : i < np + nd ? 'deleted' : 'unpinned';
        s += i % 3 === 0 ? 0 : 1;
        const id = uuid();
        const it = noteItem(u, t, { id, pinned: kind !== 'unpinned', deleted: kind === 'deleted', updated: ts(s, i) });
        items.push(it);
        if (kind === 'pinned') rec.pinned.push([it.updated_at.S, id]);
        if (kind === 'unpinned') rec.unpinned.push([it.updated_at.S, id]);
      }
      for (let i = 0; i < nx; i += 1) items.push(noteItem(stranger, t, { pinned: true, updated: ts(i * 7, 999999) }));
      const newest = (a, b) => (a[0] === b[0] ? (a[1] < b[1] ? 1 : -1) : (a[0] < b[0] ? 1 : -1));
      rec.expect = [...rec.pinned.sort(newest), ...rec.unpinned.sort(newest)].map((x) => x[1]);
      made.push(rec);
    }
    await seed('notes', items);
  });

  for (let i = 0; i < shapes.length; i += 1) {
    test(`${shapes[i][0]} pinned notes (+${shapes[i][1]} deleted, ${shapes[i][2]} unpinned, ${shapes[i][3]} of another tenant): complete, in order`, async () => {
      const { u, t, expect } = made[i];
      for (const limit of [100, 37]) {
        const { items, pages } = await listAll(u, notesPath(t), limit);
        assert.equal(items.length, expect.length, `limit ${limit}`);
        assert.deepEqual(items.map((x) => x.uuid), expect, `order with limit ${limit}`);
        const pinnedCount = expect.length - shapes[i][2];
        assert.ok(items.slice(0, pinnedCount).every((x) => x.is_pinned === true));
        for (const p of pages.slice(0, -1)) assert.ok(p.body.items.length <= limit);
      }
    });
  }
});

describe('a version at 2^63-1 is refused cleanly', () => {
  test('PATCH, DELETE and restore answer 409; GET answers ETag "9223372036854775807"; nothing changes', async () => {
    const u = user();
    const t = `v-${randomHex(4)}`;
    const top = uuid();
    const below = uuid();
    const odd = uuid();
    const gone = uuid();
    await seed('notes', [
      noteItem(u, t, { id: top, version: '9223372036854775807', updated: ts(1) }),
      noteItem(u, t, { id: gone, version: '9223372036854775807', updated: ts(4), deleted: true }),
      noteItem(u, t, { id: below, version: '9223372036854775806', updated: ts(2) }),
      noteItem(u, t, { id: odd, version: '1.5', updated: ts(3) }),
    ]);
    const url = (id) => `${notesPath(t)}/${id}`;
    const g = await request(srv, 'GET', url(top), { token: u.tok });
    assertStatus(g, 200);
    assert.equal(g.headers.etag, '"9223372036854775807"');
    assert.match(g.text, /"version":9223372036854775807[,}]/);
    for (const [m, p, json] of [['PATCH', url(top), { data: 'x' }], ['DELETE', url(top)],
      ['POST', `${url(gone)}/restore`], ['PATCH', url(odd), { data: 'x' }]]) {
      const r = await request(srv, m, p, { token: u.tok, json });
      assertError(r, 409, { message: /can no longer change/ });
    }
    // If-Match is still checked first (412 before 409)
    assertError(await request(srv, 'PATCH', url(top), { token: u.tok, json: { data: 'x' }, headers: { 'If-Match': '"1"' } }), 412);
    assert.equal((await request(srv, 'GET', url(top), { token: u.tok })).body.data, 'seeded');
    // one below the top moves once, to the top, and then no more
    const p = await request(srv, 'PATCH', url(below), { token: u.tok, json: { data: 'last' } });
    assertStatus(p, 200);
    assert.equal(p.headers.etag, '"9223372036854775807"');
    assertError(await request(srv, 'PATCH', url(below), { token: u.tok, json: { data: 'more' } }), 409);
    assert.equal((await request(srv, 'GET', url(below), { token: u.tok })).body.data, 'last');
    assertStatus(await request(srv, 'GET', '/health'), 200);
  });
});

describe('Location is percent-encoded', () => {
  for (const [t, encoded] of [['a b?c#d', 'a%20b%3Fc%23d'], ['café', 'caf%C3%A9'], ['50%', '50%25'], ['x/y', 'x%2Fy']]) {
    test(`a note of target ${JSON.stringify(t)} answers Location /targets/${encoded}/notes/<uuid>`, async () => {
      const u = user();
      const r = await request(srv, 'POST', `/targets/${encoded}/notes`, { token: u.tok, json: { data: 1 } });
      assertStatus(r, 201);
      assert.equal(r.body.target_uuid, t);
      assert.equal(r.headers.location, `/targets/${encoded}/notes/${r.body.uuid}`);
      const g = await request(srv, 'GET', r.headers.location, { token: u.tok });
      assertStatus(g, 200);
      assert.equal(g.body.uuid, r.body.uuid);
    });
  }
});

describe('a list answer stops near 1 MB', () => {
  test('100 notes of ~100 KB with limit=100: pages of about 1 MB, every note once, in order', async () => {
    const u = user();
    const t = `big-${randomHex(4)}`;
    const pad = 'x'.repeat(100 * 1024);
    const ids = [];
    for (let i = 0; i < 100; i += 10) {
      const rs = await Promise.all(Array.from({ length: 10 }, (_, j) => post(u, t, { data: { i: i + j, pad } })));
      for (const r of rs) { assertStatus(r, 201); ids.push(r.body.uuid); }
    }
    const { items, pages } = await listAll(u, notesPath(t), 100);
    assert.ok(pages.length >= 9, `${pages.length} pages`);
    for (const p of pages) assert.ok(p.text.length < 1.2 * 1024 * 1024, `a page of ${p.text.length} bytes`);
    assert.ok(pages[0].body.items.length >= 9 && pages[0].body.items.length <= 11, `${pages[0].body.items.length} items`);
    assert.equal(items.length, 100);
    assert.deepEqual(new Set(items.map((x) => x.uuid)), new Set(ids));
    for (let i = 1; i < items.length; i += 1) assert.ok(items[i - 1].updated_at >= items[i].updated_at);
    // the user's list too
    const mine = await listAll(u, `/users/${u.sub}/notes`, 100);
    assert.equal(mine.items.length, 100);
    assert.ok(mine.pages.length >= 9);
  });
});
