// The request engine under many clients (SPEC §9 "Many clients"; docs/http-server.md):
// a slow store does not stall other requests, slowloris connections are cut while
// /health answers, 10,000 connections are held and served, and clients that never
// read their answers pin bounded memory that is returned when they leave.
//
// Timing bounds are wide on purpose: the suite runs the sanitizer build on a shared
// 2-core machine. The memory and 10,000-connection tests run the release build
// (build/release/actionstools, made by `make test` too): AddressSanitizer's quarantine
// and shadow memory would measure the sanitizer, not the server.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  REPO, STORAGE, Storage, assertError, assertStatus, newUser, request, sleep, startServer, uuid,
} from './lib/harness.mjs';
import { runConns } from './lib/conns.mjs';

const RELEASE_BIN = path.join(REPO, 'build', 'release', 'actionstools');
const NO_RELEASE = fs.existsSync(RELEASE_BIN) ? false
  : `needs the release build for a memory figure without the sanitizer (${RELEASE_BIN}: make build)`;
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

// A DynamoDB-compatible endpoint that answers every call after delayMs: GetItem finds
// nothing, Query finds nothing. Enough for GET of a note (404 after one GetItem).
class SlowDynamo {
  constructor(delayMs) { this.delayMs = delayMs; this.calls = 0; }

  start() {
    this.server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.calls += 1;
        const op = String(req.headers['x-amz-target'] || '').split('.').pop();
        const body = op === 'Query' ? { Items: [], Count: 0, ScannedCount: 0 } : {};
        setTimeout(() => {
          res.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.0' });
          res.end(JSON.stringify(body));
        }, this.delayMs);
      });
    });
    return new Promise((r) => this.server.listen(0, '127.0.0.1', () => { this.port = this.server.address().port; r(); }));
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  stop() {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(r));
  }
}

describe('no stall: requests waiting on a slow store do not delay others', () => {
  const DELAY = 500;
  const skip = STORAGE === 'dynamodb' ? false
    : 'a DynamoDB-mode test (its slow endpoint is its own): runs in the dynamodb pass';
  let slow;
  let srv;
  let st;
  before(async () => {
    if (skip) return;
    slow = new SlowDynamo(DELAY);
    await slow.start();
    st = new Storage({ kind: 'dynamodb', endpoint: slow.url });
    st.prepared = true; // the slow endpoint has every table
    srv = await startServer({ storage: st });
  });
  after(async () => {
    if (srv) await srv.stop();
    if (st) st.cleanup();
    if (slow) await slow.stop();
  });

  test('20 concurrent GETs of 500 ms each: /health meanwhile answers within 200 ms (a few ms normally)', { skip }, async (t) => {
    const tok = srv.token(newUser());
    const t0 = Date.now();
    const gets = Array.from({ length: 20 }, () => request(srv, 'GET', `/targets/t/notes/${uuid()}`, { token: tok, timeoutMs: 20000 })
      .then((r) => ({ r, ms: Date.now() - t0 })));
    await sleep(100); // the GETs are waiting on the store now
    const health = [];
    for (let i = 0; i < 10; i += 1) {
      const h0 = Date.now();
      const h = await request(srv, 'GET', '/health');
      health.push(Date.now() - h0);
      assertStatus(h, 200);
      await sleep(20);
    }
    const done = await Promise.all(gets);
    for (const { r } of done) assertError(r, 404);
    const slowest = Math.max(...done.map((x) => x.ms));
    t.diagnostic(`/health ms: ${health.join(' ')}; slowest GET ${slowest} ms`);
    assert.ok(Math.max(...health) < 200, `/health latencies (ms) while 20 GETs waited: ${health.join(' ')}`);
    // Side by side, not one after the other (that would take 20 x 500 ms).
    assert.ok(slowest < DELAY + 1500, `the slowest of 20 concurrent GETs took ${slowest} ms`);
    assert.ok(slow.calls >= 20);
  });
});

describe('slowloris: 1,100 connections trickling headers (HTTP_REQUEST_TIMEOUT=2)', () => {
  let srv;
  before(async () => { srv = await startServer({ env: { HTTP_REQUEST_TIMEOUT: '2' } }); });
  after(() => srv && srv.stop());

  test('/health answers throughout; every trickling connection gets 408 and is closed', async (t) => {
    const r = await runConns(['slowloris', srv.port, 1100, 500, 4000], { fds: 4096 });
    t.diagnostic(JSON.stringify(r));
    assert.equal(r.opened, 1100, JSON.stringify(r));
    assert.ok(r.probes.length >= 5 && r.probes.every((s) => s === '200'), `probes: ${r.probes.join(' ')}`);
    assert.ok(Math.max(...r.probeMs) < 1000, `probe latencies (ms): ${r.probeMs.join(' ')}`);
    assert.equal(r.closed, 1100, `only ${r.closed} trickling connections were closed: ${JSON.stringify(r)}`);
    assert.ok(r.cut408 >= 1000, `only ${r.cut408} of 1100 saw the 408: ${JSON.stringify(r)}`);
    // cut at 2 s after their request began (+ the sweeper's period and a wide margin)
    assert.ok(r.firstCloseMs >= 1900 && r.lastCloseMs < r.openedMs + 4000, JSON.stringify(r));
    const line = await srv.waitForLog((l) => l.msg === 'connections cut or shed' && l.cut_408 > 0);
    assert.ok(line, 'no log line counting the cut connections');
  });
});

describe('10,000 concurrent connections (release build)', () => {
  const skip = NO_RELEASE || (STORAGE === 'dynamodb'
    ? 'the storage is not involved (GET /health): runs in the sqlite pass' : false);
  let srv;
  before(async () => {
    if (skip) return;
    srv = await startServer({ binary: RELEASE_BIN });
  });
  after(() => srv && srv.stop());

  test('held open and served, twice each, with fresh probes answered meanwhile; RSS under 200 MB', { skip }, async (t) => {
    const r = await runConns(['hold', srv.port, 10000, srv.pid], { fds: 12000 });
    t.diagnostic(JSON.stringify({ ...r, probes: undefined }));
    assert.equal(r.opened, 10000, JSON.stringify(r));
    assert.equal(r.refused, 0, JSON.stringify(r));
    assert.equal(r.served, 10000, JSON.stringify(r));
    // each probe is one connection over the limit: it sheds the oldest idle connection
    assert.ok(r.servedAgain >= 10000 - 20, JSON.stringify(r));
    assert.ok(r.probes.every((s) => s === '200'), JSON.stringify(r));
    assert.ok(r.worstProbeMs < 500, JSON.stringify(r));
    assert.ok(r.heldRssMb < 200, `RSS with 10,000 connections: ${r.heldRssMb} MB`);
  });
});

describe('clients that never read their answers (release build)', () => {
  const skip = NO_RELEASE;
  const CLIENTS = 6;
  let srv;
  let tok;
  const t = `big-${uuid()}`;
  before(async () => {
    if (skip) return;
    srv = await startServer({ binary: RELEASE_BIN });
    tok = srv.token(newUser());
    // 30 notes of 390 KB: a 12 MB list, bigger than what the kernel's socket buffers
    // take, so that the answer stays in the server's memory while a client does not read.
    const text = 'x'.repeat(390 * 1024);
    for (let i = 0; i < 30; i += 1) {
      assertStatus(await request(srv, 'POST', `/targets/${t}/notes`, { token: tok, json: { data: { text, i } } }), 201);
    }
  });
  after(() => srv && srv.stop());

  test(`${CLIENTS} clients asking for a 12 MB list: bounded memory meanwhile, returned after they leave`, { skip }, async (ctx) => {
    const listed = await request(srv, 'GET', `/targets/${t}/notes?limit=30`, { token: tok });
    assertStatus(listed, 200);
    const answerMb = listed.text.length / 1024 / 1024;
    await sleep(500);
    const base = rssMb(srv.pid);
    const socks = [];
    for (let i = 0; i < CLIENTS; i += 1) {
      const s = net.connect(srv.port, '127.0.0.1');
      s.on('error', () => {});
      s.write(`GET /targets/${t}/notes?limit=30 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${tok}\r\n\r\n`);
      s.pause();
      socks.push(s);
    }
    let peak = 0;
    let last = 0;
    for (let i = 0, stable = 0; i < 100 && stable < 5; i += 1) {
      await sleep(200);
      const v = rssMb(srv.pid);
      peak = Math.max(peak, v);
      stable = Math.abs(v - last) < 1 ? stable + 1 : 0;
      last = v;
    }
    // Each pins at most its answer (a page is capped at ~1 MB of answer); allow half as
    // much again. While it is made, a request also holds what the store read for it: up
    // to its 1 MB work bound of stored items, which on dynamodb arrives as JSON text and
    // is parsed and packed (several times its size, for a moment); and some for the heap.
    const PAGE_WORK_MB = STORAGE === 'dynamodb' ? 10 : 4;
    const bound = CLIENTS * (answerMb * 1.5 + PAGE_WORK_MB) + 40;
    assert.ok(peak - base < bound, `RSS grew by ${(peak - base).toFixed(1)} MB for ${CLIENTS} x ${answerMb.toFixed(1)} MB answers (bound ${bound.toFixed(0)})`);
    for (const s of socks) s.destroy();
    let afterMb = 0;
    for (let i = 0; i < 15; i += 1) {
      await sleep(200);
      afterMb = rssMb(srv.pid);
      if (afterMb - base < 20) break;
    }
    assert.ok(afterMb - base < 20, `RSS ${afterMb.toFixed(1)} MB after the clients left (${base.toFixed(1)} MB before, peak ${peak.toFixed(1)})`);
    ctx.diagnostic(`RSS MB: before ${base.toFixed(1)}, peak ${peak.toFixed(1)}, after ${afterMb.toFixed(1)}; answer ${answerMb.toFixed(2)} MB x ${CLIENTS}`);
    assertStatus(await request(srv, 'GET', '/health'), 200);
  });
});
