// The API document (SPEC §5: GET /openapi.json, /swagger.json), held to the running
// service: valid OpenAPI 3 by a real validator (@apidevtools/swagger-parser); every
// documented operation is routed, answers only documented statuses, with bodies that
// fit the documented schemas and the documented headers; public exactly where the
// document says; every route of the table (src/api/routes.c) is documented, and no
// other. See docs/api-document.md.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import {
  REPO, UUID_RE, assertStatus, newUser, request, startServer, uuid,
} from './lib/harness.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let srv;
let pre;
let doc;   // the served document
let text;  // its bytes

before(async () => {
  [srv, pre] = await Promise.all([startServer(), startServer({ prefix: '/actionstools' })]);
  const r = await request(srv, 'GET', '/openapi.json');
  assertStatus(r, 200);
  text = r.text;
  doc = r.body;
});

after(async () => {
  const results = await Promise.allSettled([srv, pre].filter(Boolean).map((s) => s.stop()));
  const bad = results.filter((x) => x.status === 'rejected');
  if (bad.length) throw bad[0].reason;
});

// Every operation of the document: {path, method, op}.
function operations(d = doc) {
  const out = [];
  for (const [p, item] of Object.entries(d.paths)) {
    for (const m of METHODS) if (item[m]) out.push({ path: p, method: m.toUpperCase(), op: item[m] });
  }
  return out;
}

function resolve(d, ref) {
  assert.ok(ref.startsWith('#/'), `only local $refs: ${ref}`);
  let v = d;
  for (const part of ref.slice(2).split('/')) {
    v = v[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    assert.ok(v !== undefined, `$ref ${ref} resolves to nothing`);
  }
  return v;
}

const deref = (d, v) => (v && v.$ref ? resolve(d, v.$ref) : v);

// Checks value against an OpenAPI 3.0 schema (the keywords the document uses); returns
// a list of what does not fit.
function misfits(schema, value, where = 'body', out = []) {
  const s = deref(doc, schema);
  if (value === null) {
    if (!s.nullable) out.push(`${where} is null`);
    return out;
  }
  const is = {
    string: typeof value === 'string',
    integer: Number.isInteger(value),
    number: typeof value === 'number',
    boolean: typeof value === 'boolean',
    array: Array.isArray(value),
    object: typeof value === 'object' && !Array.isArray(value),
  };
  if (s.type && !is[s.type]) {
    out.push(`${where} is not ${s.type}: ${JSON.stringify(value).slice(0, 80)}`);
    return out;
  }
  if (s.enum && !s.enum.includes(value)) out.push(`${where} is not one of ${s.enum}`);
  if (s.format === 'uuid' && !UUID_RE.test(value)) out.push(`${where} is not a uuid`);
  if (typeof value === 'string') {
    if (s.minLength !== undefined && [...value].length < s.minLength) out.push(`${where} is too short`);
    if (s.maxLength !== undefined && [...value].length > s.maxLength) out.push(`${where} is too long`);
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) out.push(`${where} is below ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) out.push(`${where} is above ${s.maximum}`);
  }
  if (is.array && s.items) value.forEach((v, i) => misfits(s.items, v, `${where}[${i}]`, out));
  if (is.object && s.type === 'object') {
    for (const k of s.required || []) if (!(k in value)) out.push(`${where}.${k} is missing`);
    for (const [k, v] of Object.entries(value)) {
      if (s.properties && s.properties[k]) misfits(s.properties[k], v, `${where}.${k}`, out);
      else if (s.additionalProperties === false) out.push(`${where}.${k} is not documented`);
      else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        misfits(s.additionalProperties, v, `${where}.${k}`, out);
      }
    }
  }
  return out;
}

// A value that fits schema, for request bodies made from the document alone.
function sample(schema) {
  const s = deref(doc, schema);
  if (s.default !== undefined) return s.default;
  if (s.enum) return s.enum[0];
  if (s.format === 'uuid') return uuid();
  switch (s.type) {
    case 'string': return 'x'.repeat(Math.max(s.minLength || 1, 1));
    case 'integer': return s.minimum ?? 1;
    case 'boolean': return true;
    case 'array': return [];
    case 'object': {
      const o = {};
      for (const k of s.required || []) o[k] = sample(s.properties[k]);
      if (s.minProperties && !Object.keys(o).length) {
        const k = Object.keys(s.properties)[0];
        o[k] = sample(s.properties[k]);
      }
      return o;
    }
    default: return { from: 'the document' }; // any JSON value
  }
}

describe('the document', () => {
  test('is public, JSON, the same under both names, and valid OpenAPI 3 (swagger-parser)', async () => {
    const r = await request(srv, 'GET', '/openapi.json');
    assertStatus(r, 200);
    assert.match(r.headers['content-type'], /^application\/json/);
    assert.ok(r.headers['x-request-id']);
    const alias = await request(srv, 'GET', '/swagger.json');
    assertStatus(alias, 200);
    assert.equal(alias.text, text);
    assert.match(doc.openapi, /^3\.0\.\d+$/);
    const api = await SwaggerParser.validate(structuredClone(doc));
    assert.equal(api.info.title, 'actionstools');
  });

  test('is refused by the validator when broken (the validation can fail)', async () => {
    const broken = structuredClone(doc);
    delete broken.paths['/health'].get.responses;
    await assert.rejects(SwaggerParser.validate(broken), /responses/);
  });

  // What swagger-parser does not check in OpenAPI 3 documents (its spec checks are for
  // Swagger 2.0 only).
  test('declares each path parameter of each template, has unique operationIds, and every required property exists', () => {
    const ids = new Set();
    for (const { path: p, method, op } of operations()) {
      const want = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const params = (op.parameters || []).map((x) => deref(doc, x));
      const have = params.filter((x) => x.in === 'path').map((x) => x.name).sort();
      assert.deepEqual(have, want, `${method} ${p}: path parameters`);
      for (const x of params) if (x.in === 'path') assert.equal(x.required, true);
      assert.ok(op.operationId && !ids.has(op.operationId), `${method} ${p}: operationId ${op.operationId}`);
      ids.add(op.operationId);
      assert.ok(op.summary, `${method} ${p}: summary`);
    }
    const walk = (s, where) => {
      if (!s || typeof s !== 'object') return;
      if (Array.isArray(s.required) && s.properties) {
        for (const k of s.required) assert.ok(k in s.properties, `${where}: required ${k} is not a property`);
      }
      for (const [k, v] of Object.entries(s)) walk(v, `${where}/${k}`);
    };
    walk(doc.components.schemas, '#/components/schemas');
  });

  test('names every route of the table in src/api/routes.c, and no other', () => {
    const src = fs.readFileSync(path.join(REPO, 'src', 'api', 'routes.c'), 'utf8');
    const start = src.indexOf('const at_route at_routes[] = {');
    assert.ok(start >= 0, 'routes.c has no at_routes table');
    const body = src.slice(start, src.indexOf('\n};', start)).split('\n').slice(1);
    const macro = {
      CREATE: 'POST', LIST: 'GET', GET: 'GET', PATCH: 'PATCH', DELETE: 'DELETE', RESTORE: 'POST', BY_UUID: 'GET', PUT: 'PUT',
    };
    const rows = [];
    for (const raw of body) {
      const line = raw.trim();
      if (!line || line.startsWith('//') || line.startsWith('/*') || line.startsWith('*')) continue;
      if (/^\{NULL,/.test(line)) continue; // the end of the table
      if (/^["&]|^[a-z_]+,/.test(line)) continue; // the rest of a row broken over lines
      let m = /^OWN(?:_OF)?\("([A-Z]+)", "([^"]+)"/.exec(line) || /^\{"([A-Z]+)", "([^"]+)"/.exec(line);
      if (m) { rows.push(`${m[1]} ${m[2]}`); continue; }
      m = /^([A-Z_]+)\("([^"]+)"/.exec(line);
      assert.ok(m && macro[m[1]], `this row of routes.c is not understood by this test; teach it: ${line}`);
      rows.push(`${macro[m[1]]} ${m[2]}`);
    }
    const documented = operations().map((o) => `${o.method} ${o.path}`);
    assert.deepEqual([...documented].sort(), [...rows].sort());
    assert.ok(rows.length >= 14, `only ${rows.length} rows read from routes.c`);
  });

  test('servers names BASE_PREFIX, and the document is served under it', async () => {
    assert.deepEqual(doc.servers.map((s) => s.url), ['/']);
    const r = await request(pre, 'GET', '/actionstools/openapi.json');
    assertStatus(r, 200);
    assert.deepEqual(r.body.servers.map((s) => s.url), ['/actionstools']);
    assert.deepEqual(Object.keys(r.body.paths), Object.keys(doc.paths));
    assertStatus(await request(pre, 'GET', '/openapi.json'), 404);
  });
});

describe('the document against the running service', () => {
  // Path parameter values: a record, the admin's own uuid, a Swagger UI file; {uuid}
  // names the item made by the collection's create when there is one.
  let admin;
  let tok;
  const made = new Map(); // collection URL -> uuid made there

  before(() => {
    admin = newUser({ admin: true });
    tok = srv.token(admin);
  });

  function fill(p) {
    let url = p;
    for (const [, name] of p.matchAll(/\{([^}]+)\}/g)) {
      let v;
      if (name === 'uuid') {
        const coll = url.slice(0, url.indexOf('{uuid}') - 1);
        v = made.get(coll) || [...made.values()].pop() || uuid();
      } else if (name === 'user_uuid') v = admin.sub;
      else if (name === 'asset') v = 'swagger-ui.css';
      else v = `doc-${name}`;
      url = url.replace(`{${name}}`, encodeURIComponent(v));
    }
    return url;
  }

  // Sends the operation as the document describes it; checks the answer against it.
  async function exercise({ path: p, method, op }, { token } = {}) {
    const url = fill(p);
    const schema = op.requestBody?.content?.['application/json']?.schema;
    const r = await request(srv, method, url, { token, json: schema ? sample(schema) : undefined });
    const where = `${method} ${url} -> ${r.status} ${r.text.slice(0, 300)}`;
    assert.notEqual(r.status, 405, where);
    assert.ok(!(r.status === 404 && /^no such route/.test(r.body?.message || '')), `not routed: ${where}`);
    const documented = deref(doc, op.responses[String(r.status)]);
    assert.ok(documented, `status ${r.status} is not documented: ${where}`);
    for (const h of Object.keys(documented.headers || {})) {
      assert.ok(r.headers[h.toLowerCase()] !== undefined, `header ${h} is documented but not sent: ${where}`);
    }
    const content = documented.content || {};
    if (!Object.keys(content).length) {
      assert.equal(r.text, '', `an answer with no documented body has one: ${where}`);
    } else {
      const type = String(r.headers['content-type']).split(';')[0];
      assert.ok(content[type], `Content-Type ${type} is not documented (${Object.keys(content)}): ${where}`);
      if (type === 'application/json') {
        const bad = misfits(content[type].schema, r.body);
        assert.deepEqual(bad, [], where);
      }
    }
    return r;
  }

  test('every operation is routed and answers as documented (statuses, headers, bodies)', async () => {
    const ops = operations();
    assert.ok(ops.length >= 14);
    // Creates first (their items name {uuid} in the others), deletes last.
    const order = (o) => (o.op.responses['201'] ? 0 : o.method === 'DELETE' ? 2 : 1);
    const seen = new Set();
    for (const o of [...ops].sort((a, b) => order(a) - order(b))) {
      const r = await exercise(o, { token: tok });
      seen.add(r.status);
      if (r.status === 201) {
        assert.match(r.headers.location, /^\//);
        made.set(fill(o.path), r.body.uuid);
      }
    }
    // The pass went through the items for real, not only through refusals.
    for (const s of [200, 201, 204]) assert.ok(seen.has(s), `no operation answered ${s}`);
    assert.ok(made.size >= 1);
  });

  test('documented errors come with the documented error body', async () => {
    const create = operations().find((o) => o.op.responses['201']);
    const r = await request(srv, 'POST', fill(create.path), { token: tok, json: { nope: 1 } });
    assertStatus(r, 400);
    assert.deepEqual(misfits({ $ref: '#/components/schemas/Error' }, r.body), []);
    assert.equal(typeof r.body.errors.nope, 'string');
  });

  test('public exactly where the document says: no token needed there, 401 elsewhere', async () => {
    for (const o of operations()) {
      const pub = Array.isArray(o.op.security) && o.op.security.length === 0;
      const r = await exercise(o);
      if (pub) assert.notEqual(r.status, 401, `${o.method} ${o.path} is documented as public`);
      else assert.equal(r.status, 401, `${o.method} ${o.path} is documented as needing a token`);
    }
    const publicPaths = operations().filter((o) => o.op.security?.length === 0).map((o) => o.path).sort();
    // SPEC §4: health, the document under both names, the page (and its files).
    assert.deepEqual(publicPaths, ['/docs', '/docs/{asset}', '/health', '/openapi.json', '/swagger.json']);
  });

  test('each documented path allows exactly its documented methods (OPTIONS preflight)', async () => {
    const byPath = new Map();
    for (const o of operations()) byPath.set(o.path, [...(byPath.get(o.path) || []), o.method]);
    for (const [p, methods] of byPath) {
      const r = await request(srv, 'OPTIONS', fill(p));
      assertStatus(r, 204);
      const allowed = String(r.headers['access-control-allow-methods']).split(',').map((s) => s.trim())
        .filter((m) => m !== 'OPTIONS').sort();
      assert.deepEqual(allowed, [...methods].sort(), `methods of ${p}`);
    }
  });
});
