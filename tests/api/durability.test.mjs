// Durability (SPEC §9): data survives a restart; no acknowledged write is lost when the
// process is killed; SIGTERM is a clean exit (0) at any moment.

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import {
  Storage, assertError, assertStatus, newUser, request, sleep, startServer, uuid,
} from './lib/harness.mjs';

const storages = [];
function storage() {
  const s = new Storage();
  storages.push(s);
  return s;
}
after(() => { for (const s of storages) s.cleanup(); });

const notesPath = (t) => `/targets/${t}/notes`;
const notePath = (t, id) => `/targets/${t}/notes/${id}`;

describe('restart', () => {
  test('everything written before SIGTERM is there after a restart on the same database', async () => {
    const st = storage();
    const u = newUser();
    const t = uuid();
    const retryId = uuid();
    const a = await startServer({ storage: st });
    const tok = a.token(u);
    const mk = async (json) => {
      const r = await request(a, 'POST', notesPath(t), { token: tok, json });
      assertStatus(r, 201);
      return r.body;
    };
    const plain = await mk({ data: { text: 'plain', big: 1 } });
    const pinned = await mk({ data: 'pinned', is_pinned: true });
    const changed = await mk({ data: 'v1' });
    assertStatus(await request(a, 'PATCH', notePath(t, changed.uuid), { token: tok, json: { data: 'v2' } }), 200);
    assertStatus(await request(a, 'PATCH', notePath(t, changed.uuid), { token: tok, json: { is_pinned: true } }), 200);
    const gone = await mk({ data: 'gone' });
    assertStatus(await request(a, 'DELETE', notePath(t, gone.uuid), { token: tok }), 204);
    const back = await mk({ data: 'back' });
    assertStatus(await request(a, 'DELETE', notePath(t, back.uuid), { token: tok }), 204);
    assertStatus(await request(a, 'POST', `${notePath(t, back.uuid)}/restore`, { token: tok }), 200);
    await mk({ uuid: retryId, data: 'client uuid' });
    const before = {};
    for (const n of [plain, pinned, changed, back]) {
      before[n.uuid] = (await request(a, 'GET', notePath(t, n.uuid), { token: tok })).body;
    }
    const listBefore = (await request(a, 'GET', notesPath(t), { token: tok })).body;
    const userBefore = (await request(a, 'GET', `/users/${u.sub}/notes`, { token: tok })).body;
    await a.stop();

    const b = await startServer({ storage: st, secret: a.secret });
    try {
      const tok2 = b.token(u);
      for (const [id, note] of Object.entries(before)) {
        const g = await request(b, 'GET', notePath(t, id), { token: tok2 });
        assertStatus(g, 200);
        assert.deepEqual(g.body, note);
      }
      assert.equal(before[changed.uuid].version, 3);
      assertError(await request(b, 'GET', notePath(t, gone.uuid), { token: tok2 }), 404);
      assert.deepEqual((await request(b, 'GET', notesPath(t), { token: tok2 })).body, listBefore);
      assert.deepEqual((await request(b, 'GET', `/users/${u.sub}/notes`, { token: tok2 })).body, userBefore);
      // the idempotent retry still finds its note
      const again = await request(b, 'POST', notesPath(t), { token: tok2, json: { uuid: retryId, data: 'client uuid' } });
      assertStatus(again, 200);
      // and the deleted note can still be restored
      assertStatus(await request(b, 'POST', `${notePath(t, gone.uuid)}/restore`, { token: tok2 }), 200);
      // writes go on
      assertStatus(await request(b, 'POST', notesPath(t), { token: tok2, json: { data: 'after' } }), 201);
    } finally {
      await b.stop();
    }
  });

  test('two processes on one database see each other\'s writes', async () => {
    const st = storage();
    const a = await startServer({ storage: st });
    const b = await startServer({ storage: st, secret: a.secret });
    try {
      const u = newUser();
      const t = uuid();
      const c = await request(a, 'POST', notesPath(t), { token: a.token(u), json: { data: 'from a' } });
      assertStatus(c, 201);
      const g = await request(b, 'GET', notePath(t, c.body.uuid), { token: b.token(u) });
      assertStatus(g, 200);
      assert.deepEqual(g.body, c.body);
      const p = await request(b, 'PATCH', notePath(t, c.body.uuid), { token: b.token(u), json: { data: 'from b' }, headers: { 'If-Match': '"1"' } });
      assertStatus(p, 200);
      assertError(await request(a, 'PATCH', notePath(t, c.body.uuid), { token: a.token(u), json: { data: 'stale' }, headers: { 'If-Match': '"1"' } }), 412);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe('SIGKILL', () => {
  test('a note acknowledged with 201 survives a SIGKILL right after the answer', async () => {
    const st = storage();
    const u = newUser();
    const a = await startServer({ storage: st });
    const t = uuid();
    const r = await request(a, 'POST', notesPath(t), { token: a.token(u), json: { data: { n: 'kill me' } } });
    a.proc.kill('SIGKILL');
    assertStatus(r, 201);
    const ex = await a.exitPromise;
    assert.equal(ex.signal, 'SIGKILL');
    const b = await startServer({ storage: st, secret: a.secret });
    try {
      const g = await request(b, 'GET', notePath(t, r.body.uuid), { token: b.token(u) });
      assertStatus(g, 200);
      assert.deepEqual(g.body, r.body);
    } finally {
      await b.stop();
    }
  });

  test('every acknowledged create, change and delete of a burst survives a SIGKILL', async () => {
    const st = storage();
    const u = newUser();
    const t = uuid();
    const a = await startServer({ storage: st });
    const tok = a.token(u);
    // some notes to change and delete
    const base = [];
    for (let i = 0; i < 6; i += 1) {
      const r = await request(a, 'POST', notesPath(t), { token: tok, json: { data: `base ${i}` } });
      assertStatus(r, 201);
      base.push(r.body);
    }
    // a concurrent burst; SIGKILL as soon as the last answer is in
    const ops = [];
    for (let i = 0; i < 24; i += 1) ops.push(request(a, 'POST', notesPath(t), { token: tok, json: { data: `burst ${i}` } }));
    for (let i = 0; i < 3; i += 1) ops.push(request(a, 'PATCH', notePath(t, base[i].uuid), { token: tok, json: { data: `changed ${i}` } }));
    for (let i = 3; i < 6; i += 1) ops.push(request(a, 'DELETE', notePath(t, base[i].uuid), { token: tok }));
    const results = await Promise.all(ops);
    a.proc.kill('SIGKILL');
    await a.exitPromise;
    const creates = results.slice(0, 24);
    for (const r of creates) assertStatus(r, 201);
    for (const r of results.slice(24, 27)) assertStatus(r, 200);
    for (const r of results.slice(27)) assertStatus(r, 204);

    const b = await startServer({ storage: st, secret: a.secret });
    try {
      const tok2 = b.token(u);
      for (const r of creates) {
        const g = await request(b, 'GET', notePath(t, r.body.uuid), { token: tok2 });
        assertStatus(g, 200);
        assert.deepEqual(g.body, r.body);
      }
      for (let i = 0; i < 3; i += 1) {
        const g = await request(b, 'GET', notePath(t, base[i].uuid), { token: tok2 });
        assert.equal(g.body.data, `changed ${i}`);
        assert.equal(g.body.version, 2);
      }
      for (let i = 3; i < 6; i += 1) assertError(await request(b, 'GET', notePath(t, base[i].uuid), { token: tok2 }), 404);
      const all = (await request(b, 'GET', `${notesPath(t)}?limit=100`, { token: tok2 })).body.items;
      assert.equal(all.length, 27);
    } finally {
      await b.stop();
    }
  });

  test('64 concurrent writers, SIGKILL mid-run: every acknowledged create and change is there after a restart', async () => {
    const st = storage();
    const u = newUser();
    const t = uuid();
    const a = await startServer({ storage: st });
    const tok = a.token(u);
    const seeds = [];
    for (let i = 0; i < 8; i += 1) {
      const r = await request(a, 'POST', notesPath(t), { token: tok, json: { data: `seed ${i}` } });
      assertStatus(r, 201);
      seeds.push(r.body);
    }
    const created = [];
    const changed = new Map(); // seed uuid -> acknowledged answers of its PATCHes
    let killed = false;
    const writer = async (w) => {
      for (let i = 0; !killed; i += 1) {
        try {
          if (i % 4 === 3) {
            const seed = seeds[(w + i) % seeds.length];
            const r = await request(a, 'PATCH', notePath(t, seed.uuid), { token: tok, json: { data: `w${w} i${i}` } });
            if (r.status === 200) {
              if (!changed.has(seed.uuid)) changed.set(seed.uuid, []);
              changed.get(seed.uuid).push(r.body);
            } else if (!killed) {
              assert.equal(r.status, 409, r.text); // a change that lost every retry to others
            }
          } else {
            const r = await request(a, 'POST', notesPath(t), { token: tok, json: { data: { w, i } } });
            if (!killed) assertStatus(r, 201);
            if (r.status === 201) created.push(r.body);
          }
        } catch (e) {
          if (!killed) throw e;
          return; // the server is gone: this request was never acknowledged
        }
      }
    };
    const runs = [];
    for (let w = 0; w < 64; w += 1) runs.push(writer(w));
    const t0 = Date.now();
    while (created.length < 400 && Date.now() - t0 < 60000) await sleep(5);
    killed = true;
    a.proc.kill('SIGKILL'); // with requests of most writers in flight
    await Promise.all(runs);
    const ex = await a.exitPromise;
    assert.equal(ex.signal, 'SIGKILL');
    assert.ok(created.length >= 400, `only ${created.length} creates acknowledged in 60 s`);

    const b = await startServer({ storage: st, secret: a.secret });
    try {
      const tok2 = b.token(u);
      for (const note of created) {
        const g = await request(b, 'GET', notePath(t, note.uuid), { token: tok2 });
        assertStatus(g, 200);
        assert.deepEqual(g.body, note);
      }
      for (const [id, answers] of changed) {
        const g = await request(b, 'GET', notePath(t, id), { token: tok2 });
        assertStatus(g, 200);
        const newest = answers.reduce((x, y) => (y.version > x.version ? y : x));
        // a change answered later than the kill may have committed; none acknowledged is lost
        assert.ok(g.body.version >= newest.version, `${id}: version ${g.body.version} < acknowledged ${newest.version}`);
        if (g.body.version === newest.version) assert.deepEqual(g.body, newest);
      }
      // the list holds every acknowledged create (and perhaps some that committed unanswered)
      const listed = new Set();
      let cursor = null;
      do {
        const q = cursor ? `?limit=100&cursor=${encodeURIComponent(cursor)}` : '?limit=100';
        const r = await request(b, 'GET', `${notesPath(t)}${q}`, { token: tok2 });
        assertStatus(r, 200);
        for (const it of r.body.items) listed.add(it.uuid);
        cursor = r.body.next_cursor;
      } while (cursor);
      for (const note of created) assert.ok(listed.has(note.uuid), `${note.uuid} not listed`);
    } finally {
      await b.stop();
    }
  });
});

describe('SIGTERM', () => {
  test('SIGTERM right after "listening" exits 0 (40 starts)', async () => {
    for (let i = 0; i < 40; i += 1) {
      const s = await startServer();
      if (i % 2) assertStatus(await request(s, 'GET', '/health'), 200);
      await s.stop({ immediate: true }); // throws unless the exit code is 0
    }
  });

  test('SIGINT exits 0 too', async () => {
    const s = await startServer();
    const r = await s.signal('SIGINT');
    s.storage.cleanup();
    assert.deepEqual(r, { code: 0, signal: null }, s.stderr.slice(-4000));
  });

  test('SIGTERM during a burst of writes: exit 0, and every acknowledged write is kept', async () => {
    const st = storage();
    const u = newUser();
    const t = uuid();
    const a = await startServer({ storage: st });
    const tok = a.token(u);
    await sleep(200); // past start-up (the start-up window is the test above)
    const ops = [];
    for (let i = 0; i < 40; i += 1) {
      ops.push(request(a, 'POST', notesPath(t), { token: tok, json: { data: i } }).catch((e) => ({ error: e })));
    }
    await sleep(5);
    const exit = a.signal('SIGTERM', { immediate: true });
    const results = await Promise.all(ops);
    const r = await exit;
    assert.deepEqual(r, { code: 0, signal: null }, a.stderr.slice(-4000));
    const acked = results.filter((x) => x.status === 201);
    for (const x of results) {
      if (!x.error) assert.equal(x.status, 201, `a write during shutdown answered ${x.status} ${x.text}`);
    }
    const b = await startServer({ storage: st, secret: a.secret });
    try {
      const tok2 = b.token(u);
      for (const x of acked) {
        const g = await request(b, 'GET', notePath(t, x.body.uuid), { token: tok2 });
        assertStatus(g, 200);
      }
    } finally {
      await b.stop();
    }
  });

  test('restarting after a clean stop logs no error', async () => {
    const st = storage();
    const a = await startServer({ storage: st });
    await a.stop();
    const b = await startServer({ storage: st, secret: a.secret });
    await sleep(50);
    await b.stop();
    for (const l of b.logs()) assert.notEqual(l.level, 'error', JSON.stringify(l));
  });
});
