// The request engine (SPEC §2 HTTP_*, §4 "Paths and framing"; docs/http-server.md):
// paths routed raw and decoded once per segment, ambiguous framing refused, the HTTP
// library's own refusals, the request and idle timeouts, shedding at the connection
// limit. Runs the same on both backends (the storage only holds the notes).
// The many-connection tests are in engine-load.test.mjs.

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  assertError, assertStatus, newUser, request, sleep, startServer, uuid,
} from './lib/harness.mjs';

// Sends raw bytes on a fresh connection; resolves with everything the server sent
// until it closed the connection (closed: true) or waitMs passed (closed: false).
function raw(srv, bytes, { waitMs = 3000, chunks = [] } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ text, closed, responses: (text.match(/HTTP\/1\.1 \d{3}/g) || []).map((x) => Number(x.slice(9))) });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    s.on('data', (d) => { text += d.toString('latin1'); });
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
    s.write(bytes);
    for (const [at, more] of chunks) setTimeout(() => { if (!done) s.write(more); }, at);
  });
}

// Parses the first response of raw text: {status, headers (lower-case), body (JSON or text)}.
function firstResponse(text) {
  const end = text.indexOf('\r\n\r\n');
  const head = text.slice(0, end).split('\r\n');
  const headers = {};
  for (const l of head.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const len = Number(headers['content-length'] || 0);
  const bodyText = text.slice(end + 4, end + 4 + len);
  let body;
  try { body = JSON.parse(bodyText); } catch { body = bodyText; }
  return { status: Number(head[0].slice(9, 12)), headers, body };
}

function assertJsonError(resp, status) {
  assert.equal(resp.status, status, JSON.stringify(resp));
  assert.match(resp.headers['content-type'] || '', /^application\/json/);
  assert.ok(resp.headers['x-request-id'], 'no X-Request-Id');
  assert.equal(typeof resp.body.message, 'string');
  assert.ok(resp.body.message.length > 0);
}

const notesPath = (t) => `/targets/${t}/notes`;

describe('paths: routed raw, each segment decoded once (SPEC §4)', () => {
  let srv;
  let tok;
  let u;
  before(async () => {
    srv = await startServer();
    u = newUser();
    tok = srv.token(u);
  });
  after(() => srv && srv.stop());

  test('a target id with an encoded "/" is one segment, reachable for create, list and get', async () => {
    const t = `acc/${uuid()}/x`;
    const enc = encodeURIComponent(t);
    const c = await request(srv, 'POST', notesPath(enc), { token: tok, json: { data: 'slash' } });
    assertStatus(c, 201);
    assert.equal(c.body.target_uuid, t);
    const l = await request(srv, 'GET', notesPath(enc), { token: tok });
    assertStatus(l, 200);
    assert.deepEqual(l.body.items.map((x) => x.uuid), [c.body.uuid]);
    const g = await request(srv, 'GET', `${notesPath(enc)}/${c.body.uuid}`, { token: tok });
    assertStatus(g, 200);
    assert.equal(g.body.target_uuid, t);
    // the same id unencoded is another path: no such route
    assertError(await request(srv, 'GET', notesPath(t), { token: tok }), 404);
  });

  test('segments are decoded once: %2541 is the id "%41"', async () => {
    const c = await request(srv, 'POST', notesPath('%2541'), { token: tok, json: { data: 1 } });
    assertStatus(c, 201);
    assert.equal(c.body.target_uuid, '%41');
    const l = await request(srv, 'GET', notesPath('A'), { token: tok });
    assert.deepEqual(l.body.items, []);
  });

  test('/notes/<uuid>%00junk names no note (404) while /notes/<uuid> serves it', async () => {
    const c = await request(srv, 'POST', notesPath(uuid()), { token: tok, json: { data: 'nul' } });
    assertStatus(c, 201);
    assertStatus(await request(srv, 'GET', `/notes/${c.body.uuid}`, { token: tok }), 200);
    for (const p of [`/notes/${c.body.uuid}%00junk`, `/notes/${c.body.uuid}%00`,
      `${notesPath(c.body.target_uuid)}/${c.body.uuid}%00x`]) {
      assertError(await request(srv, 'GET', p, { token: tok }), 404);
    }
  });

  test('invalid UTF-8, a NUL or a malformed escape in a target is 404 with a complete log line', async () => {
    for (const t of ['%ff%fe', '%c0%af', '%ed%a0%80', 'ab%00', '%zz', 'ab%4']) {
      const rid = `rid-${uuid()}`;
      const r = await request(srv, 'GET', notesPath(t), { token: tok, headers: { 'X-Request-Id': rid } });
      assertError(r, 404);
      const line = await srv.requestLog(rid);
      assert.ok(line, `no log line for ${t}`);
      assert.equal(line.status, 404);
      assert.equal(line.method, 'GET');
      assert.equal(line.path, notesPath(t));
      assert.equal(line.user, u.sub);
      assert.equal(typeof line.duration_ms, 'number');
      assert.ok(line.time);
    }
    // POST too (the body is not looked at)
    assertError(await request(srv, 'POST', notesPath('%ff'), { token: tok, json: { data: 1 } }), 404);
  });

  test('raw bytes that are not UTF-8 in a path: 404, logged with the bytes percent-encoded', async () => {
    const rid = `rid-${uuid()}`;
    const r = await raw(srv, Buffer.concat([Buffer.from('GET /targets/'), Buffer.from([0xff, 0xfe]),
      Buffer.from(`/notes HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${tok}\r\nX-Request-Id: ${rid}\r\nConnection: close\r\n\r\n`)]));
    assertJsonError(firstResponse(r.text), 404);
    const line = await srv.requestLog(rid);
    assert.ok(line, 'no log line');
    assert.equal(line.path, '/targets/%FF%FE/notes');
  });

  test('order of refusals holds: a bad id without a token is 401, with a wrong method 405', async () => {
    assertError(await request(srv, 'GET', notesPath('%ff')), 401);
    assertError(await request(srv, 'PUT', notesPath('%ff'), { token: tok }), 405);
  });
});

describe('framing: ambiguous requests are 400 and the connection closes (RFC 9112)', () => {
  let srv;
  let tok;
  let t;
  before(async () => {
    srv = await startServer();
    tok = srv.token(newUser());
    t = uuid();
  });
  after(() => srv && srv.stop());

  const head = (extra) => `POST /targets/${t}/notes HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${tok}\r\nContent-Type: application/json\r\n${extra}\r\n`;
  const body = '{"data": "smuggled?"}';
  const smuggled = 'GET /health HTTP/1.1\r\nHost: t\r\n\r\n';

  async function assertRefused(bytes, what) {
    const rid = `rid-${uuid()}`;
    const r = await raw(srv, bytes.replace('Host: t\r\n', `Host: t\r\nX-Request-Id: ${rid}\r\n`));
    assert.ok(r.closed, `${what}: the connection stayed open`);
    assert.deepEqual(r.responses, [400], `${what}: ${r.text}`);
    const resp = firstResponse(r.text);
    assertJsonError(resp, 400);
    assert.equal(resp.headers.connection, 'close');
    assert.equal(resp.headers['x-request-id'], rid);
    const line = await srv.requestLog(rid);
    assert.ok(line && line.status === 400, `${what}: no log line`);
    return resp;
  }

  test('Content-Length and Transfer-Encoding together: 400, and the smuggled request is not served', async () => {
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    await assertRefused(head(`Content-Length: ${chunked.length}\r\nTransfer-Encoding: chunked\r\n`) + chunked + smuggled, 'CL+TE');
    await assertRefused(head(`Transfer-Encoding: chunked\r\nContent-Length: 4\r\n`) + '0\r\n\r\n' + smuggled, 'TE+CL');
  });

  test('two different Content-Length values: 400', async () => {
    await assertRefused(head(`Content-Length: ${body.length}\r\nContent-Length: ${body.length + 5}\r\n`) + body + smuggled, 'two CL');
  });

  test('whitespace before a header colon: 400', async () => {
    await assertRefused(head('Transfer-Encoding : chunked\r\n') + '0\r\n\r\n' + smuggled, 'TE space colon');
    await assertRefused(head(`Content-Length\t: ${body.length}\r\n`) + body, 'CL tab colon');
  });

  test('a transfer coding that does not end in chunked: 400', async () => {
    await assertRefused(head('Transfer-Encoding: gzip\r\n') + body, 'TE gzip');
  });

  test('none of the refused requests wrote a note', async () => {
    const l = await request(srv, 'GET', `/targets/${t}/notes`, { token: tok });
    assertStatus(l, 200);
    assert.deepEqual(l.body.items, []);
  });

  test('the same Content-Length twice is not ambiguous; keep-alive still works', async () => {
    const r = await raw(srv, head(`Content-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n`) + body + smuggled, { waitMs: 1500 });
    assert.deepEqual(r.responses, [201, 200], r.text);
  });
});

describe("the HTTP library's own refusals", () => {
  let srv;
  let tok;
  before(async () => {
    srv = await startServer();
    tok = srv.token(newUser());
  });
  after(() => srv && srv.stop());

  test('a request head of about 11 KB is taken (a long bearer token answers 401, not 431)', async () => {
    const r = await request(srv, 'GET', notesPath(uuid()), { token: 'A'.repeat(10500) });
    assertError(r, 401);
  });

  test('a 20 KB header: 431 from the library, with a log line; the server stays healthy', async () => {
    const before = srv.logs().length;
    const r = await raw(srv, `GET /health HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${'A'.repeat(20000)}\r\n\r\n`);
    assert.deepEqual(r.responses, [431], r.text.slice(0, 300));
    assert.ok(r.closed);
    const line = await srv.waitForLog((l, i) => l.msg === 'libmicrohttpd refused a request' && l.status === 431);
    assert.ok(line, 'no log line for the 431');
    const reqLine = await srv.waitForLog((l) => l.msg === 'request' && l.status === 431 && l.answered_by === 'libmicrohttpd');
    assert.ok(reqLine, 'no request line for the 431');
    assert.equal(reqLine.path, '/health');
    assert.ok(srv.logs().length > before);
    assertStatus(await request(srv, 'GET', '/health'), 200);
  });

  test('a 20 KB request line: 414 from the library, with a log line', async () => {
    const r = await raw(srv, `GET /${'a'.repeat(20000)} HTTP/1.1\r\nHost: t\r\n\r\n`);
    assert.deepEqual(r.responses, [414], r.text.slice(0, 300));
    const line = await srv.waitForLog((l) => l.msg === 'libmicrohttpd refused a request' && l.status === 414);
    assert.ok(line, 'no log line for the 414');
  });

  test('more than 64 query parameters: our 414 JSON at once (800+ used to hang the connection)', async () => {
    for (const n of [65, 900]) {
      const q = Array.from({ length: n }, (_, i) => `p${i}=${i}`).join('&');
      const rid = `rid-${uuid()}`;
      const t0 = Date.now();
      const r = await raw(srv, `GET /health?${q} HTTP/1.1\r\nHost: t\r\nX-Request-Id: ${rid}\r\n\r\n`);
      assert.ok(Date.now() - t0 < 2000, `${n} parameters took ${Date.now() - t0} ms`);
      assert.ok(r.closed);
      assert.deepEqual(r.responses, [414], r.text.slice(0, 300));
      const resp = firstResponse(r.text);
      assertJsonError(resp, 414);
      assert.match(resp.body.message, /at most 64/);
      const line = await srv.waitForLog((l) => l.msg === 'request' && l.status === 414 && l.path === '/health');
      assert.ok(line, 'no request log line for the 414');
    }
    const q = Array.from({ length: 64 }, (_, i) => `p${i}=${i}`).join('&');
    assertStatus(await request(srv, 'GET', `/targets/x/notes?${q}`, { token: tok }), 200);
  });
});

describe('request and idle timeouts (HTTP_REQUEST_TIMEOUT=2, HTTP_IDLE_TIMEOUT=3)', { concurrency: true }, () => {
  let srv;
  let tok;
  before(async () => {
    srv = await startServer({ env: { HTTP_REQUEST_TIMEOUT: '2', HTTP_IDLE_TIMEOUT: '3' } });
    tok = srv.token(newUser());
  });
  after(() => srv && srv.stop());

  const assertCut = async (r, what, t0) => {
    const ms = Date.now() - t0;
    assert.ok(r.closed, `${what}: not closed`);
    assert.deepEqual(r.responses, [408], `${what}: ${r.text}`);
    assertJsonError(firstResponse(r.text), 408);
    // 2 s, plus the sweeper's period (a quarter of a second at 2 s), plus a wide
    // margin for a shared machine running the sanitizer build.
    assert.ok(ms >= 1900 && ms < 5000, `${what}: cut after ${ms} ms`);
  };

  test('headers that trickle in: 408 and closed at the request timeout, logged', async () => {
    const t0 = Date.now();
    const chunks = [];
    for (let i = 1; i < 30; i += 1) chunks.push([i * 300, `X-Slow-${i}: ${i}\r\n`]);
    const r = await raw(srv, 'GET /health HTTP/1.1\r\nHost: t\r\n', { waitMs: 8000, chunks });
    await assertCut(r, 'trickled headers', t0);
    const line = await srv.waitForLog((l) => l.msg === 'request' && l.status === 408 && l.path === '/health');
    assert.ok(line, 'no log line for the 408');
  });

  test('a request line that trickles in (not yet complete) is cut too', async () => {
    const t0 = Date.now();
    const chunks = [];
    for (let i = 1; i < 30; i += 1) chunks.push([i * 300, 'a']);
    const r = await raw(srv, 'GET /he', { waitMs: 8000, chunks });
    await assertCut(r, 'trickled request line', t0);
  });

  test('a body that trickles in is cut, and nothing is written', async () => {
    const t = uuid();
    const t0 = Date.now();
    const chunks = [];
    for (let i = 1; i < 30; i += 1) chunks.push([i * 300, ' ']);
    const r = await raw(srv, `POST /targets/${t}/notes HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${tok}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"data": 1}`, { waitMs: 8000, chunks });
    await assertCut(r, 'trickled body', t0);
    const l = await request(srv, 'GET', `/targets/${t}/notes`, { token: tok });
    assert.deepEqual(l.body.items, []);
  });

  test('an idle keep-alive connection is not cut by the request timeout, but closes at the idle timeout', async () => {
    const t0 = Date.now();
    const r = await raw(srv, 'GET /health HTTP/1.1\r\nHost: t\r\n\r\n', { waitMs: 8000 });
    const ms = Date.now() - t0;
    assert.deepEqual(r.responses, [200]);
    assert.ok(r.closed, 'the idle connection was never closed');
    assert.ok(ms >= 2500 && ms < 7000, `closed after ${ms} ms (idle timeout 3 s)`);
  });

  test('a slow request that arrives in time is served', async () => {
    const r = await raw(srv, 'GET /hea', { waitMs: 3000, chunks: [[500, 'lth HTTP/1.1\r\n'], [1000, 'Host: t\r\n'], [1500, 'Connection: close\r\n\r\n']] });
    assert.deepEqual(r.responses, [200], r.text);
  });
});

describe('at HTTP_MAX_CONNECTIONS, idle and unfinished connections are shed for a new client', () => {
  const MAX = 6;
  let srv;
  before(async () => {
    srv = await startServer({ env: { HTTP_MAX_CONNECTIONS: String(MAX), HTTP_REQUEST_TIMEOUT: '30' } });
  });
  after(() => srv && srv.stop());

  // Opens a connection that made one request and is now idle; records its closing.
  async function idleConn() {
    const s = net.connect(srv.port, '127.0.0.1');
    const c = { s, closed: false, text: '' };
    s.on('close', () => { c.closed = true; });
    s.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    await new Promise((r) => {
      s.on('data', (d) => { c.text += d; if (c.text.includes('"status":"ok"')) r(); });
      s.write('GET /health HTTP/1.1\r\nHost: t\r\n\r\n');
    });
    return c;
  }
  // Opens a connection whose request never finishes arriving.
  async function unfinishedConn() {
    const s = net.connect(srv.port, '127.0.0.1');
    const c = { s, closed: false, text: '' };
    s.on('close', () => { c.closed = true; });
    s.on('error', () => {});
    s.on('data', (d) => { c.text += d; });
    await new Promise((r) => s.once('connect', r));
    s.write('GET /health HTTP/1.1\r\nHost: t\r\n');
    return c;
  }

  test('the oldest idle connection goes first; then the slowest unfinished one, with a 503', async () => {
    const idle = [];
    for (let i = 0; i < MAX; i += 1) { idle.push(await idleConn()); await sleep(20); }
    // one over the limit: the new client is served, the oldest idle connection is closed
    const r = await request(srv, 'GET', '/health');
    assertStatus(r, 200);
    await sleep(300);
    assert.deepEqual(idle.map((c) => c.closed), [true, false, false, false, false, false]);
    // replace the idle ones by unfinished requests
    for (const c of idle) c.s.destroy();
    await sleep(300);
    const slow = [];
    for (let i = 0; i < MAX; i += 1) { slow.push(await unfinishedConn()); await sleep(50); }
    await sleep(300);
    assertStatus(await request(srv, 'GET', '/health'), 200);
    await sleep(300);
    assert.deepEqual(slow.map((c) => c.closed), [true, false, false, false, false, false]);
    assert.match(slow[0].text, /^HTTP\/1\.1 503/);
    assertJsonError(firstResponse(slow[0].text), 503);
    for (const c of slow) c.s.destroy();
    const line = await srv.waitForLog((l) => l.msg === 'connections cut or shed' && l.shed_idle >= 1, 3000);
    assert.ok(line, 'no log line counting the shed connections');
  });
});
