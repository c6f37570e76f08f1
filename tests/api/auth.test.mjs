// Identity (SPEC §4, §6): bearer JWTs, HS256 / RS256 / ES256, refusals with 401,
// issuer/audience, the admin role, /setup-install.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  assertError, assertStatus, b64url, claimsFor, ecKeys, mintToken, newUser, randomHex, request,
  rsaKeys, rmDir, signJwt, startServer, tmpDir, uuid, writePublicKey,
} from './lib/harness.mjs';

let hs;        // HS256 server
let rs;        // RS256 server (public key file, no secret)
let es;        // ES256 server
let issAud;    // HS256 with AUTH_JWT_ISSUER / AUTH_JWT_AUDIENCE
let keyDir;
let rsa;
let ec;
const used = new Map(); // server -> tokens sent to it (for the log check)

function send(s, tok, p = `/targets/${uuid()}/notes`) {
  if (!used.has(s)) used.set(s, []);
  used.get(s).push(tok);
  return request(s, 'GET', p, { token: tok });
}

before(async () => {
  keyDir = tmpDir('at-keys-');
  rsa = rsaKeys();
  ec = ecKeys();
  const rsaFile = writePublicKey(keyDir, rsa, 'rsa.pem');
  const ecFile = writePublicKey(keyDir, ec, 'ec.pem');
  [hs, rs, es, issAud] = await Promise.all([
    startServer(),
    startServer({ secret: null, publicKeyFile: rsaFile }),
    startServer({ secret: null, publicKeyFile: ecFile }),
    startServer({ env: { AUTH_JWT_ISSUER: 'https://issuer.example', AUTH_JWT_AUDIENCE: 'actionstools' } }),
  ]);
  rs.pem = fs.readFileSync(rsaFile, 'utf8');
});

after(async () => {
  const results = await Promise.allSettled([hs, rs, es, issAud].filter(Boolean).map((s) => s.stop()));
  rmDir(keyDir);
  const bad = results.filter((r) => r.status === 'rejected');
  if (bad.length) throw bad[0].reason;
});

function assert401(r) {
  assertError(r, 401);
  assert.match(String(r.headers['www-authenticate']), /^Bearer\b/, `WWW-Authenticate: ${r.headers['www-authenticate']}`);
}

describe('HS256', () => {
  test('a valid token is accepted', async () => {
    const u = newUser();
    const r = await send(hs, mintToken(u, { secret: hs.secret }));
    assertStatus(r, 200);
    assert.deepEqual(r.body, { items: [], next_cursor: null });
  });

  test('no Authorization header is 401 with WWW-Authenticate: Bearer', async () => {
    assert401(await request(hs, 'GET', `/targets/${uuid()}/notes`));
    assert401(await request(hs, 'POST', `/targets/${uuid()}/notes`, { json: { data: 1 } }));
    assert401(await request(hs, 'GET', `/notes/${uuid()}`));
    assert401(await request(hs, 'GET', `/users/${uuid()}/notes`));
    assert401(await request(hs, 'GET', '/setup-install'));
  });

  test('an Authorization header that is not Bearer is 401', async () => {
    const tok = mintToken(newUser(), { secret: hs.secret });
    for (const h of [`Basic ${Buffer.from('a:b').toString('base64')}`, tok, `Token ${tok}`, 'Bearer', 'Bearer ', `Bearer  ${tok}x`]) {
      const r = await request(hs, 'GET', `/targets/${uuid()}/notes`, { headers: { Authorization: h } });
      assert401(r);
    }
  });

  test('alg none is 401', async () => {
    const u = newUser();
    for (const alg of ['none', 'None', 'NONE']) {
      assert401(await send(hs, signJwt(claimsFor(u), { alg, signAlg: 'none' })));
      // a none header with an otherwise valid HS256 signature
      assert401(await send(hs, signJwt(claimsFor(u), { alg, signAlg: 'HS256', key: hs.secret })));
    }
  });

  test('other HMAC algorithms with the right secret are 401', async () => {
    const u = newUser();
    for (const alg of ['HS384', 'HS512']) {
      assert401(await send(hs, signJwt(claimsFor(u), { alg, key: hs.secret })));
    }
    // header says HS256, signature made with HS512
    assert401(await send(hs, signJwt(claimsFor(u), { alg: 'HS256', signAlg: 'HS512', key: hs.secret })));
  });

  test('an RS256 or ES256 token is 401 on an HS256 server', async () => {
    const u = newUser();
    assert401(await send(hs, mintToken(u, { alg: 'RS256', key: rsa.privateKey })));
    assert401(await send(hs, mintToken(u, { alg: 'ES256', key: ec.privateKey })));
  });

  test('a bad signature is 401', async () => {
    const u = newUser();
    const good = mintToken(u, { secret: hs.secret });
    const [h, p, s] = good.split('.');
    const flipped = s[0] === 'A' ? `B${s.slice(1)}` : `A${s.slice(1)}`;
    assert401(await send(hs, `${h}.${p}.${flipped}`));
    assert401(await send(hs, `${h}.${p}.`));
    assert401(await send(hs, `${h}.${p}`));
    assert401(await send(hs, mintToken(u, { secret: `${hs.secret}x` })));
    assert401(await send(hs, mintToken(u, { secret: 'secret' })));
    // payload changed after signing (privilege escalation attempt)
    const forged = b64url(JSON.stringify(claimsFor({ ...u, roles: ['CRM_ADMIN'] })));
    assert401(await send(hs, `${h}.${forged}.${s}`, '/setup-install'));
  });

  test('a token without exp is 401', async () => {
    assert401(await send(hs, mintToken(newUser(), { secret: hs.secret, omit: ['exp'] })));
  });

  test('exp 61 s in the past is 401; 59 s in the past is accepted (60 s leeway)', async () => {
    const u = newUser();
    assert401(await send(hs, mintToken(u, { secret: hs.secret, expIn: -61 })));
    assert401(await send(hs, mintToken(u, { secret: hs.secret, expIn: -3600 })));
    assertStatus(await send(hs, mintToken(u, { secret: hs.secret, expIn: -59 })), 200);
  });

  test('a token without instance_id or sub is 401', async () => {
    const u = newUser();
    assert401(await send(hs, mintToken(u, { secret: hs.secret, omit: ['instance_id'] })));
    assert401(await send(hs, mintToken(u, { secret: hs.secret, omit: ['sub'] })));
    assert401(await send(hs, mintToken(u, { secret: hs.secret, omit: ['sub', 'instance_id'] })));
  });

  test('malformed tokens are 401, never a crash', async () => {
    const u = newUser();
    // header and payload given as raw text, signed with the server's secret
    const hmac = (headerText, payloadText) => {
      const input = `${b64url(headerText)}.${b64url(payloadText)}`;
      return `${input}.${createHmac('sha256', hs.secret).update(input).digest('base64url')}`;
    };
    const cases = [
      'x', 'x.y', 'x.y.z', '..', '...', 'a.b.c.d', '!!!.@@@.###',
      `${b64url('{}')}.${b64url('{}')}.`,
      hmac('{"alg":"HS256"', JSON.stringify(claimsFor(u))),   // header not JSON
      hmac('{"alg":"HS256"}', '{"sub":'),                     // payload not JSON
      hmac('{"alg":"HS256"}', '[1,2,3]'),                     // payload not an object
      hmac('{"alg":"HS256"}', '"claims"'),
      hmac('[]', JSON.stringify(claimsFor(u))),
      hmac('{"alg":256}', JSON.stringify(claimsFor(u))),
      hmac('{"typ":"JWT"}', JSON.stringify(claimsFor(u))),    // no alg
      hmac('{"alg":"HS256"}', JSON.stringify(claimsFor(u, { extra: { exp: 'tomorrow' } }))),
      hmac('{"alg":"HS256"}', JSON.stringify(claimsFor(u, { extra: { sub: 42 } }))),
      hmac('{"alg":"HS256"}', JSON.stringify(claimsFor(u, { extra: { instance_id: ['x'] } }))),
      // Long, but inside the request head the server takes (about 11 KB; a longer head
      // is the HTTP library's 431: tests/api/engine.test.mjs).
      'A'.repeat(9000),
      `${'A'.repeat(3000)}.${'B'.repeat(3000)}.${'C'.repeat(3000)}`,
    ];
    for (const tok of cases) {
      const r = await send(hs, tok);
      assert401(r);
    }
    assertStatus(await request(hs, 'GET', '/health'), 200);
  });

  test('the 401 body names no secret and echoes no token', async () => {
    const tok = mintToken(newUser(), { secret: 'another-secret-value' });
    const r = await send(hs, tok);
    assert401(r);
    assert.ok(!r.text.includes(hs.secret));
    assert.ok(!r.text.includes(tok.split('.')[2]));
  });

  test('401 answers carry X-Request-Id and CORS', async () => {
    const r = await request(hs, 'GET', `/targets/${uuid()}/notes`, { headers: { 'X-Request-Id': 'rid-401' } });
    assert401(r);
    assert.equal(r.headers['x-request-id'], 'rid-401');
    assert.equal(r.headers['access-control-allow-origin'], '*');
  });

  test('public routes need no token: /health, OPTIONS', async () => {
    assertStatus(await request(hs, 'GET', '/health'), 200);
    assertStatus(await request(hs, 'OPTIONS', `/targets/${uuid()}/notes`, {
      headers: { Origin: 'https://x.example', 'Access-Control-Request-Method': 'GET' },
    }), 204);
  });

  test('a valid token on a public route is fine, an invalid one does not break it', async () => {
    assertStatus(await request(hs, 'GET', '/health', { token: mintToken(newUser(), { secret: hs.secret }) }), 200);
    assertStatus(await request(hs, 'GET', '/health', { token: 'garbage' }), 200);
    assertStatus(await request(hs, 'GET', '/health', { token: mintToken(newUser(), { secret: hs.secret, expIn: -3600 }) }), 200);
  });
});

describe('RS256 (AUTH_JWT_PUBLIC_KEY_FILE)', () => {
  test('an RS256 token signed with the private key is accepted', async () => {
    const u = newUser();
    const r = await send(rs, mintToken(u, { alg: 'RS256', key: rsa.privateKey }));
    assertStatus(r, 200);
    const c = await request(rs, 'POST', `/targets/${uuid()}/notes`, { token: mintToken(u, { alg: 'RS256', key: rsa.privateKey }), json: { data: 1 } });
    assertStatus(c, 201);
    assert.equal(c.body.owner_uuid, u.sub);
  });

  test('key confusion: an HS256 token keyed with the public key PEM is 401', async () => {
    const u = newUser();
    assert401(await send(rs, signJwt(claimsFor(u), { alg: 'HS256', key: rs.pem })));
    assert401(await send(rs, signJwt(claimsFor(u), { alg: 'HS256', key: rs.pem.trim() })));
    assert401(await send(rs, signJwt(claimsFor(u), { alg: 'HS256', key: randomHex(16) })));
  });

  test('RS256 signed with another key, ES256, alg none are 401', async () => {
    const u = newUser();
    assert401(await send(rs, mintToken(u, { alg: 'RS256', key: rsaKeys().privateKey })));
    assert401(await send(rs, mintToken(u, { alg: 'ES256', key: ec.privateKey })));
    assert401(await send(rs, signJwt(claimsFor(u), { alg: 'none' })));
    // header claims ES256 but the signature is RS256
    assert401(await send(rs, signJwt(claimsFor(u), { alg: 'ES256', signAlg: 'RS256', key: rsa.privateKey })));
  });

  test('RS256: missing exp, expired, missing claims are 401', async () => {
    const u = newUser();
    const k = { alg: 'RS256', key: rsa.privateKey };
    assert401(await send(rs, mintToken(u, { ...k, omit: ['exp'] })));
    assert401(await send(rs, mintToken(u, { ...k, expIn: -61 })));
    assert401(await send(rs, mintToken(u, { ...k, omit: ['instance_id'] })));
    assert401(await send(rs, mintToken(u, { ...k, omit: ['sub'] })));
    assertStatus(await send(rs, mintToken(u, { ...k, expIn: -59 })), 200);
  });

  test('a tampered RS256 payload is 401', async () => {
    const u = newUser();
    const [h, , s] = mintToken(u, { alg: 'RS256', key: rsa.privateKey }).split('.');
    const p = b64url(JSON.stringify(claimsFor({ ...u, instance_id: 'other' })));
    assert401(await send(rs, `${h}.${p}.${s}`));
  });
});

describe('ES256 (AUTH_JWT_PUBLIC_KEY_FILE)', () => {
  test('an ES256 token (raw R||S signature) is accepted', async () => {
    const u = newUser();
    assertStatus(await send(es, mintToken(u, { alg: 'ES256', key: ec.privateKey })), 200);
  });

  test('ES256 with another key, RS256, HS256, none are 401', async () => {
    const u = newUser();
    assert401(await send(es, mintToken(u, { alg: 'ES256', key: ecKeys().privateKey })));
    assert401(await send(es, mintToken(u, { alg: 'RS256', key: rsa.privateKey })));
    assert401(await send(es, signJwt(claimsFor(u), { alg: 'HS256', key: ec.publicKey.export({ type: 'spki', format: 'pem' }) })));
    assert401(await send(es, signJwt(claimsFor(u), { alg: 'none' })));
  });

  test('a truncated or zero ES256 signature is 401', async () => {
    const u = newUser();
    const [h, p, s] = mintToken(u, { alg: 'ES256', key: ec.privateKey }).split('.');
    assert401(await send(es, `${h}.${p}.${s.slice(0, 40)}`));
    assert401(await send(es, `${h}.${p}.${b64url(Buffer.alloc(64))}`));
    assert401(await send(es, `${h}.${p}.${b64url(Buffer.alloc(65, 1))}`));
  });

  test('ES256: expired is 401', async () => {
    assert401(await send(es, mintToken(newUser(), { alg: 'ES256', key: ec.privateKey, expIn: -61 })));
  });
});

describe('issuer and audience (AUTH_JWT_ISSUER, AUTH_JWT_AUDIENCE)', () => {
  const iss = 'https://issuer.example';
  const aud = 'actionstools';
  const tok = (u, extra, omit = []) => mintToken(u, { secret: issAud.secret, extra, omit });

  test('the right iss and aud are accepted (aud as a string or in a list)', async () => {
    const u = newUser();
    assertStatus(await send(issAud, tok(u, { iss, aud })), 200);
    assertStatus(await send(issAud, tok(u, { iss, aud: ['other', aud] })), 200);
  });

  test('a wrong or missing iss or aud is 401', async () => {
    const u = newUser();
    assert401(await send(issAud, tok(u, { iss: 'https://evil.example', aud })));
    assert401(await send(issAud, tok(u, { iss, aud: 'other' })));
    assert401(await send(issAud, tok(u, { iss, aud: ['other'] })));
    assert401(await send(issAud, tok(u, { aud })));
    assert401(await send(issAud, tok(u, { iss })));
  });
});

describe('the admin role and /setup-install', () => {
  test('CRM_ADMIN may call /setup-install; it reports every table as existing', async () => {
    const admin = newUser({ admin: true });
    const r = await send(hs, hs.token(admin), '/setup-install');
    assertStatus(r, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['created', 'existing']);
    assert.deepEqual(r.body.created, []);
    assert.deepEqual([...r.body.existing].sort(), [...hs.storage.tableNames].sort());
  });

  test('a user without CRM_ADMIN gets 403 from /setup-install', async () => {
    const u = newUser();
    const r = await send(hs, hs.token(u), '/setup-install');
    assertError(r, 403);
    const other = newUser({ admin: false });
    other.roles = ['CRM_USER', 'crm_admin', 'ADMIN'];
    assertError(await send(hs, hs.token(other), '/setup-install'), 403);
    const none = newUser();
    assertError(await send(hs, mintToken(none, { secret: hs.secret, omit: ['roles'] }), '/setup-install'), 403);
  });

  test('CRM_ADMIN among other roles counts', async () => {
    const u = newUser();
    u.roles = ['CRM_USER', 'CRM_ADMIN'];
    assertStatus(await send(hs, hs.token(u), '/setup-install'), 200);
  });

  test('a token without roles or name is still a user', async () => {
    const u = newUser();
    const r = await request(hs, 'POST', `/targets/${uuid()}/notes`, {
      token: mintToken(u, { secret: hs.secret, omit: ['roles', 'name'] }), json: { data: 1 },
    });
    assertStatus(r, 201);
    assert.equal(r.body.owner_uuid, u.sub);
  });
});

describe('logs', () => {
  test('no secret, key or token appears in any log', async () => {
    await new Promise((res) => setTimeout(res, 200));
    for (const s of [hs, rs, es, issAud]) {
      if (s.secret) assert.ok(!s.stderr.includes(s.secret), 'the JWT secret is logged');
      for (const tok of [...(used.get(s) || []), ...s.tokens]) {
        const parts = tok.split('.');
        if (parts.length === 3 && parts[2].length > 20) {
          assert.ok(!s.stderr.includes(parts[2]), `a token signature is logged: ${parts[2].slice(0, 20)}…`);
        }
      }
      for (const l of s.lines) {
        if (l.trim()) assert.doesNotThrow(() => JSON.parse(l), `log line is not JSON: ${l.slice(0, 200)}`);
      }
    }
  });
});

