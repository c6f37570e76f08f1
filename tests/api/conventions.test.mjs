// HTTP conventions (SPEC §4): routing, 404/405, CORS, request ids, the request log,
// body size (413, keep-alive), content type (415), bad JSON, BASE_PREFIX, order of refusals.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import {
  STORAGE, VERSION, assertError, assertStatus, assertValidation, headerList,
  newUser, request, startServer, uuid, randomHex,
} from './lib/harness.mjs';

const LIMIT = 409600;

let srv;      // default server
let pre;      // BASE_PREFIX=/actionstools
let cors;     // CORS_ALLOW_ORIGINS=https://a.example
let alice;    // tenant 1
let aliceTok;

before(async () => {
  [srv, pre, cors] = await Promise.all([
    startServer(),
    startServer({ prefix: '/actionstools' }),
    startServer({ env: { CORS_ALLOW_ORIGINS: 'https://a.example' } }),
  ]);
  alice = newUser();
  aliceTok = srv.token(alice);
});

after(async () => {
  const servers = [srv, pre, cors].filter(Boolean);
  const results = await Promise.allSettled(servers.map((s) => s.stop()));
  const bad = results.filter((r) => r.status === 'rejected');
  if (bad.length) throw bad[0].reason;
});

// A body of exactly `size` bytes: {"data":"xxxx…"}
function bodyOfSize(size) {
  const head = '{"data":"';
  const tail = '"}';
  return head + 'x'.repeat(size - head.length - tail.length) + tail;
}

async function createNote(s, tok, target, json = { data: { n: 1 } }) {
  const r = await request(s, 'POST', `/targets/${target}/notes`, { token: tok, json });
  assertStatus(r, 201);
  return r.body;
}

describe('routing', () => {
  test('GET /health is public and answers status, version and storage', async () => {
    const r = await request(srv, 'GET', '/health');
    assertStatus(r, 200);
    assert.match(r.headers['content-type'], /^application\/json/);
    assert.deepEqual(r.body, { status: 'ok', version: VERSION, storage: STORAGE });
  });

  test('a query string does not change the route', async () => {
    const r = await request(srv, 'GET', '/health?probe=1');
    assertStatus(r, 200);
  });

  for (const p of ['/nope', '/', '/targets', `/targets/${uuid()}`, `/targets/${uuid()}/notes/${uuid()}/extra`,
    '/notes', `/users/${uuid()}`, `/targets/${uuid()}/notez`, '/healthz', '/health/x']) {
    test(`unknown path ${p} is 404 without a token`, async () => {
      assertError(await request(srv, 'GET', p), 404);
    });
    test(`unknown path ${p} is 404 with a token`, async () => {
      assertError(await request(srv, 'GET', p, { token: aliceTok }), 404);
    });
  }

  test('unknown path is 404 even with a broken token', async () => {
    assertError(await request(srv, 'GET', '/nope', { token: 'not.a.token' }), 404);
  });

  test('a note path whose {uuid} is not a UUID is 404', async () => {
    const t = uuid();
    for (const [m, p, json] of [
      ['GET', `/targets/${t}/notes/not-a-uuid`],
      ['PATCH', `/targets/${t}/notes/not-a-uuid`, { data: 1 }],
      ['DELETE', `/targets/${t}/notes/not-a-uuid`],
      ['POST', `/targets/${t}/notes/not-a-uuid/restore`],
      ['GET', '/notes/not-a-uuid'],
      ['GET', `/notes/${uuid()}x`],
      ['GET', `/targets/${t}/notes/${uuid().slice(0, -1)}`],
    ]) {
      const r = await request(srv, m, p, { token: aliceTok, json });
      assertError(r, 404);
    }
  });

  const methodCases = [
    ['PUT', () => `/targets/${uuid()}/notes/${uuid()}`, ['GET', 'PATCH', 'DELETE', 'OPTIONS']],
    ['POST', () => `/targets/${uuid()}/notes/${uuid()}`, ['GET', 'PATCH', 'DELETE', 'OPTIONS']],
    ['DELETE', () => `/targets/${uuid()}/notes`, ['GET', 'POST', 'OPTIONS']],
    ['PUT', () => `/targets/${uuid()}/notes`, ['GET', 'POST', 'OPTIONS']],
    ['POST', () => '/health', ['GET', 'OPTIONS']],
    ['GET', () => `/targets/${uuid()}/notes/${uuid()}/restore`, ['POST', 'OPTIONS']],
    ['POST', () => `/notes/${uuid()}`, ['GET', 'OPTIONS']],
    ['PATCH', () => `/users/${uuid()}/notes`, ['GET', 'OPTIONS']],
    ['DELETE', () => '/setup-install', ['GET', 'OPTIONS']],
  ];
  for (const [m, mk, allow] of methodCases) {
    test(`${m} on ${mk().replace(/[0-9a-f-]{36}/g, '{id}')} is 405 with Allow: ${allow.join(', ')} (no token needed)`, async () => {
      for (const tok of [undefined, aliceTok]) {
        const r = await request(srv, m, mk(), { token: tok, json: m === 'GET' || m === 'DELETE' ? undefined : { data: 1 } });
        assertError(r, 405);
        assert.deepEqual(headerList(r.headers.allow), [...allow].sort(), `Allow: ${r.headers.allow}`);
      }
    });
  }

  test('a trailing slash is forgiven', async () => {
    assertStatus(await request(srv, 'GET', '/health/'), 200);
    const t = uuid();
    const c = await request(srv, 'POST', `/targets/${t}/notes/`, { token: aliceTok, json: { data: 'slash' } });
    assertStatus(c, 201);
    const one = await request(srv, 'GET', `/targets/${t}/notes/${c.body.uuid}/`, { token: aliceTok });
    assertStatus(one, 200);
    assert.equal(one.body.uuid, c.body.uuid);
    const list = await request(srv, 'GET', `/targets/${t}/notes/`, { token: aliceTok });
    assertStatus(list, 200);
    assert.deepEqual(list.body.items.map((x) => x.uuid), [c.body.uuid]);
    assertStatus(await request(srv, 'GET', `/notes/${c.body.uuid}/`, { token: aliceTok }), 200);
  });

  test('a target that is not a UUID (e.g. account-42) is a valid target', async () => {
    const t = `account-${randomHex(4)}`;
    const c = await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, json: { data: 'x' } });
    assertStatus(c, 201);
    assert.equal(c.body.target_uuid, t);
    const list = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
    assert.deepEqual(list.body.items.map((x) => x.uuid), [c.body.uuid]);
  });

  test('JSON answers have Content-Type application/json', async () => {
    const t = uuid();
    const c = await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, json: { data: 1 } });
    assert.match(c.headers['content-type'], /^application\/json/);
    const l = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
    assert.match(l.headers['content-type'], /^application\/json/);
  });
});

describe('CORS', () => {
  const REQUIRED_HEADERS = ['AUTHORIZATION', 'CONTENT-TYPE', 'IF-MATCH', 'X-REQUEST-ID'];

  test('preflight on the notes list answers 204 without a token', async () => {
    const r = await request(srv, 'OPTIONS', `/targets/${uuid()}/notes`, {
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type',
      },
    });
    assertStatus(r, 204);
    assert.equal(r.text, '');
    assert.equal(r.headers['access-control-allow-origin'], '*');
    const methods = headerList(r.headers['access-control-allow-methods']);
    for (const m of ['GET', 'POST']) assert.ok(methods.includes(m), `Allow-Methods: ${r.headers['access-control-allow-methods']}`);
    const hdrs = headerList(r.headers['access-control-allow-headers']);
    for (const h of REQUIRED_HEADERS) assert.ok(hdrs.includes(h), `Allow-Headers: ${r.headers['access-control-allow-headers']}`);
    assert.equal(r.headers['access-control-max-age'], '10800');
    assert.ok(r.headers['x-request-id']);
  });

  test('preflight on one note lists its methods', async () => {
    const r = await request(srv, 'OPTIONS', `/targets/${uuid()}/notes/${uuid()}`, {
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'PATCH' },
    });
    assertStatus(r, 204);
    const methods = headerList(r.headers['access-control-allow-methods']);
    for (const m of ['GET', 'PATCH', 'DELETE']) assert.ok(methods.includes(m), `Allow-Methods: ${r.headers['access-control-allow-methods']}`);
    const hdrs = headerList(r.headers['access-control-allow-headers']);
    for (const h of REQUIRED_HEADERS) assert.ok(hdrs.includes(h));
    assert.equal(r.headers['access-control-max-age'], '10800');
  });

  test('preflight on /health and /setup-install answers 204', async () => {
    for (const p of ['/health', '/setup-install', `/notes/${uuid()}`, `/users/${uuid()}/notes`]) {
      const r = await request(srv, 'OPTIONS', p, { headers: { Origin: 'https://x.example', 'Access-Control-Request-Method': 'GET' } });
      assertStatus(r, 204);
      assert.equal(r.headers['access-control-max-age'], '10800');
    }
  });

  test('OPTIONS on an unknown path is 404', async () => {
    const r = await request(srv, 'OPTIONS', '/nope', { headers: { Origin: 'https://x.example', 'Access-Control-Request-Method': 'GET' } });
    assertError(r, 404);
  });

  test('every answer carries Access-Control-Allow-Origin: * by default', async () => {
    const t = uuid();
    const answers = [
      await request(srv, 'GET', '/health'),
      await request(srv, 'GET', '/nope'),
      await request(srv, 'GET', `/targets/${t}/notes`),
      await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, json: { data: 1 } }),
      await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok, headers: { Origin: 'https://any.example' } }),
      await request(srv, 'DELETE', '/health'),
    ];
    assert.deepEqual(answers.map((r) => r.status), [200, 404, 401, 201, 200, 405]);
    for (const r of answers) assert.equal(r.headers['access-control-allow-origin'], '*', `status ${r.status}`);
  });

  test('with CORS_ALLOW_ORIGINS only a listed origin is echoed, with Vary: Origin', async () => {
    const tok = cors.token(newUser());
    const ok = await request(cors, 'GET', `/targets/${uuid()}/notes`, { token: tok, headers: { Origin: 'https://a.example' } });
    assertStatus(ok, 200);
    assert.equal(ok.headers['access-control-allow-origin'], 'https://a.example');
    assert.ok(headerList(ok.headers.vary).includes('ORIGIN'), `Vary: ${ok.headers.vary}`);

    const pf = await request(cors, 'OPTIONS', `/targets/${uuid()}/notes`, {
      headers: { Origin: 'https://a.example', 'Access-Control-Request-Method': 'POST' },
    });
    assertStatus(pf, 204);
    assert.equal(pf.headers['access-control-allow-origin'], 'https://a.example');
    assert.ok(headerList(pf.headers.vary).includes('ORIGIN'), `Vary: ${pf.headers.vary}`);

    const other = await request(cors, 'GET', `/targets/${uuid()}/notes`, { token: tok, headers: { Origin: 'https://b.example' } });
    assertStatus(other, 200);
    assert.equal(other.headers['access-control-allow-origin'], undefined,
      `an unlisted origin got Access-Control-Allow-Origin: ${other.headers['access-control-allow-origin']}`);

    const pf2 = await request(cors, 'OPTIONS', `/targets/${uuid()}/notes`, {
      headers: { Origin: 'https://b.example', 'Access-Control-Request-Method': 'POST' },
    });
    assert.notEqual(pf2.headers['access-control-allow-origin'], 'https://b.example');
    assert.notEqual(pf2.headers['access-control-allow-origin'], '*');
  });
});

describe('request ids and the request log', () => {
  test('every answer has an X-Request-Id, a fresh one per request', async () => {
    const answers = [
      await request(srv, 'GET', '/health'),
      await request(srv, 'GET', '/health'),
      await request(srv, 'GET', '/nope'),
      await request(srv, 'POST', '/health'),
      await request(srv, 'GET', `/targets/${uuid()}/notes`),
      await request(srv, 'OPTIONS', `/targets/${uuid()}/notes`, { headers: { Origin: 'https://x', 'Access-Control-Request-Method': 'GET' } }),
      await request(srv, 'POST', `/targets/${uuid()}/notes`, { token: aliceTok, json: { data: 1 } }),
    ];
    const ids = answers.map((r) => r.headers['x-request-id']);
    for (const id of ids) assert.ok(typeof id === 'string' && id.length > 0);
    assert.equal(new Set(ids).size, ids.length, 'request ids repeat');
  });

  test("the caller's X-Request-Id is echoed", async () => {
    for (const [m, p, tok] of [['GET', '/health'], ['GET', '/nope'], ['GET', `/targets/${uuid()}/notes`],
      ['GET', `/targets/${uuid()}/notes`, aliceTok], ['PUT', '/health']]) {
      const id = `caller-${randomHex(8)}`;
      const r = await request(srv, m, p, { token: tok, headers: { 'X-Request-Id': id } });
      assert.equal(r.headers['x-request-id'], id, `${m} ${p} -> ${r.status}`);
    }
  });

  test('one JSON log line per request with time, request id, method, path, status, duration, user', async () => {
    const t = uuid();
    const id = `log-${randomHex(8)}`;
    const r = await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, json: { data: 1 }, headers: { 'X-Request-Id': id } });
    assertStatus(r, 201);
    const line = await srv.requestLog(id);
    assert.ok(line, `no request log line with request_id ${id}`);
    assert.equal(line.level, 'info');
    assert.equal(line.method, 'POST');
    assert.equal(line.path, `/targets/${t}/notes`);
    assert.equal(line.status, 201);
    assert.equal(typeof line.duration_ms, 'number');
    assert.ok(line.duration_ms >= 0 && line.duration_ms < 60000);
    assert.equal(line.user, alice.sub);
    assert.equal(typeof line.time, 'string');
    assert.ok(Math.abs(Date.parse(line.time) - Date.now()) < 60000, `time ${line.time}`);
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(srv.logs().filter((l) => l.request_id === id).length, 1, 'more than one log line for one request');
  });

  test('refused and anonymous requests are logged too, user null', async () => {
    const id1 = `log-${randomHex(8)}`;
    const id2 = `log-${randomHex(8)}`;
    const id3 = `log-${randomHex(8)}`;
    await request(srv, 'GET', `/targets/${uuid()}/notes`, { headers: { 'X-Request-Id': id1 } });
    await request(srv, 'GET', '/nope', { headers: { 'X-Request-Id': id2 } });
    await request(srv, 'GET', '/health', { headers: { 'X-Request-Id': id3 } });
    const l1 = await srv.requestLog(id1);
    const l2 = await srv.requestLog(id2);
    const l3 = await srv.requestLog(id3);
    assert.ok(l1 && l2 && l3, 'missing request log lines');
    assert.deepEqual([l1.status, l1.method, l1.user], [401, 'GET', null]);
    assert.deepEqual([l2.status, l2.path, l2.user], [404, '/nope', null]);
    assert.deepEqual([l3.status, l3.path, l3.user], [200, '/health', null]);
  });

  test('a hostile X-Request-Id does not break the JSON log', async () => {
    const id = 'a"b\\c}{"level":"error';
    const r = await request(srv, 'GET', '/health', { headers: { 'X-Request-Id': id } });
    assertStatus(r, 200);
    assert.ok(r.headers['x-request-id']);
    const long = 'L'.repeat(5000);
    const r2 = await request(srv, 'GET', '/health', { headers: { 'X-Request-Id': long } });
    assertStatus(r2, 200);
    await new Promise((res) => setTimeout(res, 200));
    for (const l of srv.lines) {
      if (!l.trim()) continue;
      assert.doesNotThrow(() => JSON.parse(l), `log line is not JSON: ${l.slice(0, 300)}`);
    }
    assert.ok(!srv.logs().some((l) => l.level === 'error' && l.msg === undefined), 'a forged log field got in');
  });
});

describe('request bodies', () => {
  test(`a body of exactly ${LIMIT} bytes is accepted (small note, padded with whitespace)`, async () => {
    const t = uuid();
    const head = '{"data":"pad"}';
    const body = head + ' '.repeat(LIMIT - head.length);
    assert.equal(Buffer.byteLength(body), LIMIT);
    const r = await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, body, headers: { 'Content-Type': 'application/json' } });
    assertStatus(r, 201);
    assert.equal(r.body.data, 'pad');
  });

  test('a 300 KB note is stored and read back whole', async () => {
    const t = uuid();
    const data = 'y'.repeat(300 * 1024);
    const r = await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, json: { data } });
    assertStatus(r, 201);
    const g = await request(srv, 'GET', `/targets/${t}/notes/${r.body.uuid}`, { token: aliceTok });
    assertStatus(g, 200);
    assert.equal(g.body.data, data);
  });

  test('a body under the limit whose note would not fit in 400 KB is 413 and nothing is written', async () => {
    // SPEC §3: the whole item must fit DynamoDB's 400 KB limit.
    const t = uuid();
    const r = await request(srv, 'POST', `/targets/${t}/notes`, {
      token: aliceTok, body: bodyOfSize(LIMIT), headers: { 'Content-Type': 'application/json' },
    });
    assertError(r, 413);
    const list = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
    assert.deepEqual(list.body.items, []);
  });

  test(`a body over ${LIMIT} bytes is 413 and nothing is written`, async () => {
    const t = uuid();
    const r = await request(srv, 'POST', `/targets/${t}/notes`, {
      token: aliceTok, body: bodyOfSize(LIMIT + 1), headers: { 'Content-Type': 'application/json' },
    });
    assertError(r, 413);
    const list = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
    assert.deepEqual(list.body.items, []);
  });

  test('an oversized chunked body (no Content-Length) is 413 too', async () => {
    const t = uuid();
    const r = await request(srv, 'POST', `/targets/${t}/notes`, {
      token: aliceTok, body: bodyOfSize(LIMIT + 5000), chunked: true, headers: { 'Content-Type': 'application/json' },
    });
    assertError(r, 413);
    const list = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
    assert.deepEqual(list.body.items, []);
  });

  test('a small chunked body is accepted', async () => {
    const r = await request(srv, 'POST', `/targets/${uuid()}/notes`, {
      token: aliceTok, body: '{"data":"chunked"}', chunked: true, headers: { 'Content-Type': 'application/json' },
    });
    assertStatus(r, 201);
    assert.equal(r.body.data, 'chunked');
  });

  test('after a 413 the same keep-alive connection serves the next requests', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const t = uuid();
      const first = await request(srv, 'GET', '/health', { agent });
      assertStatus(first, 200);
      const sock = first.socket;
      for (const size of [LIMIT + 1, 2 * 1024 * 1024]) {
        const big = await request(srv, 'POST', `/targets/${t}/notes`, {
          agent, token: aliceTok, body: bodyOfSize(size), headers: { 'Content-Type': 'application/json' },
        });
        assertError(big, 413);
        assert.equal(big.reusedSocket, true, 'the 413 request did not reuse the connection');
        assert.equal(big.socket, sock);
        assert.notEqual(String(big.headers.connection).toLowerCase(), 'close', 'the server closes the connection after 413');
        const next = await request(srv, 'POST', `/targets/${t}/notes`, { agent, token: aliceTok, json: { data: size } });
        assertStatus(next, 201);
        assert.equal(next.reusedSocket, true, 'the connection was not reused after 413');
        assert.equal(next.socket, sock, 'a new connection was opened after 413');
      }
      const list = await request(srv, 'GET', `/targets/${t}/notes`, { agent, token: aliceTok });
      assertStatus(list, 200);
      assert.equal(list.socket, sock);
      assert.deepEqual(list.body.items.map((x) => x.data).sort(), [LIMIT + 1, 2 * 1024 * 1024].sort());
    } finally {
      agent.destroy();
    }
  });

  test('POST and PATCH with a body that is not JSON by Content-Type are 415', async () => {
    const t = uuid();
    const note = await createNote(srv, aliceTok, t);
    const cases = [
      ['POST', `/targets/${t}/notes`, { 'Content-Type': 'text/plain' }],
      ['POST', `/targets/${t}/notes`, { 'Content-Type': 'application/x-www-form-urlencoded' }],
      ['POST', `/targets/${t}/notes`, {}],
      ['PATCH', `/targets/${t}/notes/${note.uuid}`, { 'Content-Type': 'text/plain' }],
      ['PATCH', `/targets/${t}/notes/${note.uuid}`, { 'Content-Type': 'application/xml' }],
    ];
    for (const [m, p, h] of cases) {
      const r = await request(srv, m, p, { token: aliceTok, body: '{"data":{"x":2}}', headers: h });
      assertError(r, 415);
    }
    const list = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
    assert.equal(list.body.items.length, 1);
    assert.deepEqual(list.body.items[0].data, { n: 1 });
    assert.equal(list.body.items[0].version, 1);
  });

  test('application/json with a charset is accepted', async () => {
    const r = await request(srv, 'POST', `/targets/${uuid()}/notes`, {
      token: aliceTok, body: '{"data":"é"}', headers: { 'Content-Type': 'application/json; charset=utf-8' },
    });
    assertStatus(r, 201);
    assert.equal(r.body.data, 'é');
  });

  const badBodies = [
    ['truncated JSON', '{"data":'],
    ['duplicate keys', '{"data":1,"data":2}'],
    ['duplicate nested keys', '{"data":{"a":1,"a":2}}'],
    ['trailing garbage', '{"data":1} x'],
    ['NaN', '{"data":NaN}'],
    ['single quotes', "{'data':1}"],
    ['a JSON array, not an object', '[{"data":1}]'],
    ['a JSON string, not an object', '"data"'],
    ['null', 'null'],
    ['an empty body', ''],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x64, 0x61, 0x74, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ['a lone surrogate escape', '{"data":"\\ud800"}'],
    ['nesting 10000 deep', `{"data":${'['.repeat(10000)}${']'.repeat(10000)}}`],
  ];
  for (const [what, body] of badBodies) {
    test(`malformed body (${what}) is 400 and writes nothing`, async () => {
      const t = uuid();
      const r = await request(srv, 'POST', `/targets/${t}/notes`, { token: aliceTok, body, headers: { 'Content-Type': 'application/json' } });
      assertError(r, 400);
      const list = await request(srv, 'GET', `/targets/${t}/notes`, { token: aliceTok });
      assert.deepEqual(list.body.items, []);
    });
  }

  test('malformed PATCH bodies are 400 and change nothing', async () => {
    const t = uuid();
    const note = await createNote(srv, aliceTok, t);
    for (const body of ['{"data":', '{"data":1,"data":2}', '[]', '']) {
      const r = await request(srv, 'PATCH', `/targets/${t}/notes/${note.uuid}`, { token: aliceTok, body, headers: { 'Content-Type': 'application/json' } });
      assertError(r, 400);
    }
    const g = await request(srv, 'GET', `/targets/${t}/notes/${note.uuid}`, { token: aliceTok });
    assert.equal(g.body.version, 1);
  });

  test('the server is still healthy after the bad bodies', async () => {
    assertStatus(await request(srv, 'GET', '/health'), 200);
  });
});

describe('BASE_PREFIX', () => {
  test('routes live under the prefix and bare paths are 404', async () => {
    const tok = pre.token(newUser());
    const t = uuid();
    assertStatus(await request(pre, 'GET', '/actionstools/health'), 200);
    assertError(await request(pre, 'GET', '/health'), 404);
    assertStatus(await request(pre, 'GET', `/actionstools/targets/${t}/notes`, { token: tok }), 200);
    assertError(await request(pre, 'GET', `/targets/${t}/notes`, { token: tok }), 404);
    assertError(await request(pre, 'POST', `/targets/${t}/notes`, { token: tok, json: { data: 1 } }), 404);
    assertError(await request(pre, 'GET', '/actionstoolsx/health'), 404);
    assertError(await request(pre, 'GET', '/actionstools'), 404);
    assertError(await request(pre, 'GET', '/actionstools/actionstools/health'), 404);
  });

  test('create under the prefix answers a Location that works', async () => {
    const tok = pre.token(newUser());
    const t = uuid();
    const c = await request(pre, 'POST', `/actionstools/targets/${t}/notes`, { token: tok, json: { data: 'p' } });
    assertStatus(c, 201);
    assert.equal(c.headers.location, `/actionstools/targets/${t}/notes/${c.body.uuid}`);
    const g = await request(pre, 'GET', c.headers.location, { token: tok });
    assertStatus(g, 200);
    assert.equal(g.body.data, 'p');
  });

  test('preflight works under the prefix', async () => {
    const r = await request(pre, 'OPTIONS', `/actionstools/targets/${uuid()}/notes`, {
      headers: { Origin: 'https://x.example', 'Access-Control-Request-Method': 'POST' },
    });
    assertStatus(r, 204);
    assert.equal(r.headers['access-control-max-age'], '10800');
  });
});

describe('order of refusals (404/405, 401, 413/415, 404 item, 403, 400, 412, 409)', () => {
  let t;
  let owner;
  let ownerTok;
  let mate;      // same tenant, not the owner, not admin
  let mateTok;
  let strangerTok; // another tenant
  let note;

  before(async () => {
    t = uuid();
    owner = newUser();
    ownerTok = srv.token(owner);
    mate = newUser({ instance: owner.instance_id });
    mateTok = srv.token(mate);
    strangerTok = srv.token(newUser());
    note = await createNote(srv, ownerTok, t);
  });

  const notePath = () => `/targets/${t}/notes/${note.uuid}`;
  const big = () => bodyOfSize(LIMIT + 10);

  test('404 route before 401', async () => {
    assertError(await request(srv, 'GET', `/targets/${t}/nothing`), 404);
    assertError(await request(srv, 'PATCH', `${notePath()}/nothing`, { json: { x: 1 } }), 404);
  });

  test('405 before 401', async () => {
    const r = await request(srv, 'PUT', notePath(), { json: { data: 1 } });
    assertError(r, 405);
  });

  test('401 before 413 and 415', async () => {
    assertError(await request(srv, 'PATCH', notePath(), { body: big(), headers: { 'Content-Type': 'application/json' } }), 401);
    assertError(await request(srv, 'POST', `/targets/${t}/notes`, { body: '{"data":1}', headers: { 'Content-Type': 'text/plain' } }), 401);
    assertError(await request(srv, 'POST', `/targets/${t}/notes`, { token: 'x.y.z', body: '{"data":1}', headers: { 'Content-Type': 'text/plain' } }), 401);
  });

  test('413 and 415 before 404 item', async () => {
    const missing = `/targets/${t}/notes/${uuid()}`;
    assertError(await request(srv, 'PATCH', missing, { token: ownerTok, body: big(), headers: { 'Content-Type': 'application/json' } }), 413);
    assertError(await request(srv, 'PATCH', missing, { token: ownerTok, body: '{"data":1}', headers: { 'Content-Type': 'text/plain' } }), 415);
  });

  test('404 item before 403: another tenant\'s note is 404 for a non-owner', async () => {
    for (const [m, p, json] of [['PATCH', notePath(), { data: 2 }], ['DELETE', notePath()],
      ['POST', `${notePath()}/restore`], ['GET', notePath()]]) {
      assertError(await request(srv, m, p, { token: strangerTok, json }), 404);
    }
  });

  test('404 item before 400 and 412', async () => {
    const missing = `/targets/${t}/notes/${uuid()}`;
    assertError(await request(srv, 'PATCH', missing, { token: ownerTok, json: { bogus: 1 } }), 404);
    assertError(await request(srv, 'PATCH', missing, { token: ownerTok, json: { data: 1 }, headers: { 'If-Match': '"99"' } }), 404);
    assertError(await request(srv, 'DELETE', missing, { token: ownerTok, headers: { 'If-Match': '"99"' } }), 404);
  });

  test('403 before 400 and 412', async () => {
    assertError(await request(srv, 'PATCH', notePath(), { token: mateTok, json: { bogus: 1 } }), 403);
    assertError(await request(srv, 'PATCH', notePath(), { token: mateTok, json: {} }), 403);
    assertError(await request(srv, 'PATCH', notePath(), { token: mateTok, json: { data: 1 }, headers: { 'If-Match': '"99"' } }), 403);
    assertError(await request(srv, 'DELETE', notePath(), { token: mateTok, headers: { 'If-Match': '"99"' } }), 403);
  });

  test('400 before 412', async () => {
    const r = await request(srv, 'PATCH', notePath(), { token: ownerTok, json: { bogus: 1 }, headers: { 'If-Match': '"99"' } });
    assertValidation(r, { bogus: 'unknown field' });
  });

  test('412 before 409: restoring a live note with a stale If-Match', async () => {
    const r = await request(srv, 'POST', `${notePath()}/restore`, { token: ownerTok, headers: { 'If-Match': '"99"' } });
    assertError(r, 412);
    const r2 = await request(srv, 'POST', `${notePath()}/restore`, { token: ownerTok });
    assertError(r2, 409);
  });

  test('400 before 409: a conflicting client uuid with an invalid body', async () => {
    const r = await request(srv, 'POST', `/targets/${uuid()}/notes`, { token: ownerTok, json: { uuid: note.uuid, data: 1, is_pinned: 'yes' } });
    assertValidation(r, { is_pinned: true });
  });

  test('the note is untouched by all the refused requests', async () => {
    const g = await request(srv, 'GET', notePath(), { token: ownerTok });
    assertStatus(g, 200);
    assert.equal(g.body.version, 1);
    assert.deepEqual(g.body.data, { n: 1 });
  });
});

describe('logs', () => {
  test('every stderr line is JSON, and no secret or token appears in the logs', async () => {
    await new Promise((res) => setTimeout(res, 200));
    for (const s of [srv, pre, cors]) {
      for (const l of s.lines) {
        if (!l.trim()) continue;
        assert.doesNotThrow(() => JSON.parse(l), `log line is not JSON: ${l.slice(0, 300)}`);
      }
      assert.ok(!s.stderr.includes(s.secret), 'the JWT secret appears in the log');
      assert.ok(s.tokens.length > 0);
      for (const tok of s.tokens) {
        const sig = tok.split('.')[2];
        assert.ok(!s.stderr.includes(sig), 'a token signature appears in the log');
        assert.ok(!s.stderr.includes(tok.split('.')[1]), 'a token payload appears in the log');
      }
    }
  });
});
