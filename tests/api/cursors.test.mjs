// List cursors (SPEC §2 CURSOR_SECRET, §4 Lists; docs/auth.md): a validly signed cursor
// whose start key is not a key of the list's query is 400, never 500; the signing key
// comes from CURSOR_SECRET, else AUTH_JWT_SECRET, else a secret generated once and kept
// in the store (never from the public key file), shared by every server of a store.
//
// The tests sign cursors themselves, as docs/auth.md describes the format, and check
// first that they reproduce the server's own cursors byte for byte.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  STORAGE, Storage, assertStatus, assertValidation, newUser, randomHex, request, rsaKeys, runCli,
  startServer, uuid, writePublicKey,
} from './lib/harness.mjs';

const LABEL = 'actionstools list cursor key v1';
const cursorKey = (secret) => crypto.createHmac('sha256', secret).update(LABEL).digest();
const lp = (s) => `${Buffer.byteLength(s)}:${s}`;
const notesScope = (u, t) => `/targets/{target_uuid}/notes|target_uuid-updated_at-index|${lp(u.instance_id)}|${lp(t)}`;
const userScope = (u, who) => `/users/{user_uuid}/notes|owner_uuid-created_at-index|${lp(u.instance_id)}|${lp(who)}`;

function sign(key, scope, text) {
  const mac = crypto.createHmac('sha256', key).update(`${scope}\n${text}`).digest().subarray(0, 16);
  return `${Buffer.from(text).toString('base64url')}.${mac.toString('base64url')}`;
}
const payloadText = (cursor) => Buffer.from(cursor.split('.')[0], 'base64url').toString('utf8');

// Asserts that key signs the server's cursor c of scope (the helpers match the server).
function assertSignedWith(key, scope, c, what) {
  assert.equal(sign(key, scope, payloadText(c)), c, `${what}: the cursor is not signed with that key and scope`);
}

async function firstCursor(srv, u, p) {
  const r = await request(srv, 'GET', `${p}?limit=1`, { token: u.tok });
  assertStatus(r, 200);
  assert.ok(r.body.next_cursor, 'no next_cursor');
  return r.body.next_cursor;
}

describe('signed cursors with a bad start key are 400, never 500', () => {
  let srv;
  let u;
  const t = `c-${randomHex(4)}`;
  let key;
  before(async () => {
    srv = await startServer();
    key = cursorKey(srv.secret);
    u = newUser();
    u.tok = srv.token(u);
    for (let i = 0; i < 3; i += 1) {
      for (const pinned of [true, false]) {
        const r = await request(srv, 'POST', `/targets/${t}/notes`, { token: u.tok, json: { data: i, is_pinned: pinned } });
        assertStatus(r, 201);
      }
    }
  });
  after(async () => { if (srv) await srv.stop(); });

  test('the helpers reproduce the server\'s cursors (self-check)', async () => {
    assertSignedWith(key, notesScope(u, t), await firstCursor(srv, u, `/targets/${t}/notes`), 'record list');
    assertSignedWith(key, userScope(u, u.sub), await firstCursor(srv, u, `/users/${u.sub}/notes`), 'user list');
  });

  test('the record\'s list: wrong types, missing or extra attributes, bad phases', async () => {
    const genuine = JSON.parse(payloadText(await firstCursor(srv, u, `/targets/${t}/notes`)));
    assert.equal(genuine.p, 0);
    const k = genuine.k;
    const bad = [
      { p: 1, k: { ...k, uuid: { N: '5' } } },
      { p: 0, k: { ...k, updated_at: { N: '1700000000' } } },
      { p: 1, k: { ...k, target_uuid: { N: '1' } } },
      { p: 1, k: { ...k, uuid: { S: 5 } } },
      { p: 1, k: { ...k, uuid: { S: '' } } },
      { p: 1, k: { ...k, uuid: { S: 'x', N: '1' } } },
      { p: 1, k: { ...k, updated_at: { N: 'abc' } } },
      { p: 1, k: { target_uuid: k.target_uuid, uuid: k.uuid } },
      { p: 1, k: { ...k, extra: { S: 'x' } } },
      { p: 1, k: { ...k, target_uuid: { S: 'another-record' } } },
      { p: 1, k: [] },
      { p: 1, k: 'x' },
      { p: 1, k: {} },
      { p: 2, k },
      { p: -1, k },
      { p: '1', k },
      { p: 1.5, k },
      { k },
      { p: null },
    ];
    for (const b of bad) {
      const c = sign(key, notesScope(u, t), JSON.stringify(b));
      const r = await request(srv, 'GET', `/targets/${t}/notes?cursor=${encodeURIComponent(c)}`, { token: u.tok });
      assertValidation(r, { cursor: true });
    }
    // the controls: the same hand-made way, a good key in either phase works
    for (const good of [{ p: 0, k }, { p: 1 }, { p: 1, k: { ...k, updated_at: { S: '9999-01-01 00:00:00.000000' } } }]) {
      const c = sign(key, notesScope(u, t), JSON.stringify(good));
      assertStatus(await request(srv, 'GET', `/targets/${t}/notes?cursor=${encodeURIComponent(c)}`, { token: u.tok }), 200);
    }
  });

  test('the user\'s list: a number where created_at\'s string belongs', async () => {
    const genuine = JSON.parse(payloadText(await firstCursor(srv, u, `/users/${u.sub}/notes`)));
    const scope = userScope(u, u.sub);
    for (const b of [{ p: 0, k: { ...genuine.k, created_at: { N: '1' } } }, { p: 0, k: { ...genuine.k, owner_uuid: { S: uuid() } } }]) {
      const r = await request(srv, 'GET', `/users/${u.sub}/notes?cursor=${encodeURIComponent(sign(key, scope, JSON.stringify(b)))}`, { token: u.tok });
      assertValidation(r, { cursor: true });
    }
    assertStatus(await request(srv, 'GET', `/users/${u.sub}/notes?cursor=${encodeURIComponent(sign(key, scope, JSON.stringify(genuine)))}`, { token: u.tok }), 200);
  });
});

describe('the key that signs cursors', () => {
  const dirs = [];
  after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });
  const scratch = () => { const d = fs.mkdtempSync(path.join('/tmp', 'at-cur-')); dirs.push(d); return d; };

  // A user with notes on a record of srv; returns {u, t}.
  async function withNotes(srv, tokOpts = {}) {
    const u = newUser();
    u.tok = srv.token(u, tokOpts);
    const t = `k-${randomHex(4)}`;
    for (let i = 0; i < 3; i += 1) assertStatus(await request(srv, 'POST', `/targets/${t}/notes`, { token: u.tok, json: { data: i } }), 201);
    return { u, t };
  }

  test('CURSOR_SECRET signs them; a cursor signed with AUTH_JWT_SECRET is refused', async () => {
    const cs = randomHex(32);
    const srv = await startServer({ env: { CURSOR_SECRET: cs } });
    try {
      const { u, t } = await withNotes(srv);
      const c = await firstCursor(srv, u, `/targets/${t}/notes`);
      assertSignedWith(cursorKey(cs), notesScope(u, t), c, 'CURSOR_SECRET');
      const forged = sign(cursorKey(srv.secret), notesScope(u, t), payloadText(c));
      assertValidation(await request(srv, 'GET', `/targets/${t}/notes?cursor=${encodeURIComponent(forged)}`, { token: u.tok }), { cursor: true });
    } finally {
      await srv.stop();
    }
  });

  test('a short CURSOR_SECRET stops start-up, naming it and not showing it', async () => {
    const r = await runCli(['serve'], { env: { AUTH_JWT_SECRET: randomHex(24), CURSOR_SECRET: 'tooshort-secret', LISTEN: '127.0.0.1:0', SQLITE_PATH: path.join(scratch(), 'x.db') }, timeoutMs: 15000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /CURSOR_SECRET/);
    assert.ok(!r.stderr.includes('tooshort-secret'));
  });

  test('with only a public key: a secret generated once, kept in the store, shared by every server; never the key file', async () => {
    const keys = rsaKeys();
    const pem = writePublicKey(scratch(), keys);
    const tok = { alg: 'RS256', key: keys.privateKey };
    const st = new Storage();
    try {
      const a = await startServer({ storage: st, secret: null, publicKeyFile: pem });
      let c;
      let u;
      let t;
      try {
        ({ u, t } = await withNotes(a, tok));
        c = await firstCursor(a, u, `/targets/${t}/notes`);
        // not derived from the public key file (anyone can read it)
        for (const pub of [fs.readFileSync(pem), fs.readFileSync(pem, 'utf8').trim()]) {
          const forged = sign(cursorKey(pub), notesScope(u, t), payloadText(c));
          assert.notEqual(forged, c);
          assertValidation(await request(a, 'GET', `/targets/${t}/notes?cursor=${encodeURIComponent(forged)}`, { token: u.tok }), { cursor: true });
        }
      } finally {
        await a.stop({ keepStorage: true });
      }
      // a second server of the store (started while the first is down, then both at once)
      const b = await startServer({ storage: st, secret: null, publicKeyFile: pem });
      const b2 = await startServer({ storage: st, secret: null, publicKeyFile: pem });
      try {
        for (const s of [b, b2]) {
          u.tok = s.token(u, tok);
          const r = await request(s, 'GET', `/targets/${t}/notes?limit=1&cursor=${encodeURIComponent(c)}`, { token: u.tok });
          assertStatus(r, 200);
          assert.equal(r.body.items.length, 1);
        }
      } finally {
        await b.stop({ keepStorage: true });
        await b2.stop({ keepStorage: true });
      }
      // the secret is the one kept in the counters table
      const out = path.join(scratch(), 'counters.jsonl');
      const ex = await runCli(['export', '--table', 'counters', '--out', out], { env: st.env, cwd: st.dir });
      assert.equal(ex.code, 0, ex.stderr);
      const items = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).Item);
      const kept = items.filter((it) => it.counter_seq_key.S === 'actionstools#cursor_secret');
      assert.equal(kept.length, 1);
      assert.match(kept[0].secret.S, /^[0-9a-f]{64}$/);
      assertSignedWith(cursorKey(kept[0].secret.S), notesScope(u, t), c, 'the stored secret');
    } finally {
      st.cleanup();
    }
  });

  test('with a public key and CURSOR_SECRET, CURSOR_SECRET signs them', async () => {
    const keys = rsaKeys();
    const pem = writePublicKey(scratch(), keys);
    const cs = randomHex(32);
    const srv = await startServer({ secret: null, publicKeyFile: pem, env: { CURSOR_SECRET: cs } });
    try {
      const { u, t } = await withNotes(srv, { alg: 'RS256', key: keys.privateKey });
      assertSignedWith(cursorKey(cs), notesScope(u, t), await firstCursor(srv, u, `/targets/${t}/notes`), 'CURSOR_SECRET');
    } finally {
      await srv.stop();
    }
  });

  test('with only a public key and no tables (dynamodb), start-up stops and says what to do', { skip: STORAGE !== 'dynamodb' ? 'dynamodb only: sqlite makes its tables at start' : false }, async () => {
    const keys = rsaKeys();
    const pem = writePublicKey(scratch(), keys);
    const st = new Storage();
    try {
      const r = await runCli(['serve'], { env: { ...st.env, AUTH_JWT_PUBLIC_KEY_FILE: pem, LISTEN: '127.0.0.1:0' }, cwd: st.dir, timeoutMs: 20000 });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /CURSOR_SECRET/);
      assert.match(r.stderr, /setup/);
    } finally {
      st.cleanup();
    }
  });
});
