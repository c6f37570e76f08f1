// Tenants sharing a target id (SPEC §4 "Lists"): another tenant's notes under the same
// target never show, and never make a list incomplete; a page that hit the store's work
// bound (about 1 MB read) is short and carries a cursor.

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { STORAGE, assertStatus, newUser, request, startServer, uuid } from './lib/harness.mjs';

const servers = [];
after(async () => { for (const s of servers) await s.stop(); });

const notesPath = (t) => `/targets/${t}/notes`;

// Follows next_cursor from the first page; returns the pages' items (uuids).
async function allPages(srv, tok, t, limit) {
  const pages = [];
  let cursor = null;
  for (let guard = 0; guard < 1000; guard += 1) {
    const q = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await request(srv, 'GET', `${notesPath(t)}${q}`, { token: tok });
    assertStatus(r, 200);
    assert.ok(r.body.items.length <= limit);
    pages.push({ uuids: r.body.items.map((n) => n.uuid), more: r.body.next_cursor !== null });
    cursor = r.body.next_cursor;
    if (!cursor) return pages;
  }
  throw new Error('the list never ends');
}

describe('tenants sharing a target', () => {
  test("1.2 MB of tenant B's notes under a target: tenant A's list of it is whole, in order, and only A's", async () => {
    const srv = await startServer();
    servers.push(srv);
    const a = newUser();
    const b = newUser();
    const ta = srv.token(a);
    const tb = srv.token(b);
    const t = `shared-${uuid()}`;
    const mk = async (tok, json) => {
      const r = await request(srv, 'POST', notesPath(t), { token: tok, json });
      assertStatus(r, 201);
      return r.body.uuid;
    };
    const older = [];
    for (let i = 0; i < 3; i += 1) older.push(await mk(ta, { data: `a old ${i}` }));
    const big = 'x'.repeat(4000);
    const bs = [];
    for (let i = 0; i < 300; i += 1) bs.push(await mk(tb, { data: { i, big } }));
    const newer = [];
    for (let i = 0; i < 4; i += 1) newer.push(await mk(ta, { data: `a new ${i}` }));
    const gone = await mk(ta, { data: 'a deleted' });
    assertStatus(await request(srv, 'DELETE', `${notesPath(t)}/${gone}`, { token: ta }), 204);

    const want = [...newer].reverse().concat([...older].reverse()); // newest first
    const pages = await allPages(srv, ta, t, 3);
    assert.deepEqual(pages.flatMap((p) => p.uuids), want);
    for (const p of pages.slice(0, -1)) assert.ok(p.more);
    if (STORAGE === 'dynamodb') {
      // DynamoDB reads B's notes and filters them out: the bound cuts a page short.
      assert.ok(pages.some((p) => p.more && p.uuids.length < 3), JSON.stringify(pages));
    } else {
      // sqlite reads A's live notes only (a tenant-scoped index): every page is full.
      assert.deepEqual(pages.map((p) => p.uuids.length), [3, 3, 1]);
    }
    const bPages = await allPages(srv, tb, t, 100);
    assert.deepEqual(new Set(bPages.flatMap((p) => p.uuids)), new Set(bs));
  });
});
