// The dynamodb backend (SPEC §1–§3, §9), black-box against dynalite: the items and tables
// as DynamoDB sees them (read with the real AWS SDK), items written by the original Python
// service, DynamoDB requests per API call (through a counting proxy), a missing table, the
// sqlite -> dynamodb migration round trip, and a dead endpoint.
//
// Needs AT_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh sets it); without it every test
// skips. These tests make their own storages, so they run the same whatever AT_STORAGE is.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  DYNAMODB_ENDPOINT, Storage, TABLES, TIMESTAMP_RE, UUID_RE, assertError, assertStatus, canonExact,
  mintToken, newUser, parseExact, randomHex, request, rmDir, runCli, sleep, startServer, tmpDir, uuid,
} from './lib/harness.mjs';

const ENDPOINT = DYNAMODB_ENDPOINT;
const SKIP = ENDPOINT ? false : 'needs dynalite: run under scripts/with-dynalite.sh (AT_DYNAMODB_ENDPOINT)';
const dtest = (name, fn) => test(name, { skip: SKIP }, fn);

// The AWS SDK, loaded only when there is a server to talk to.
let sdk;
let ddb;
const storages = [];
const dirs = [];

function dynStorage(opts = {}) {
  const s = new Storage({ kind: 'dynamodb', endpoint: ENDPOINT, ...opts });
  storages.push(s);
  return s;
}
function sqliteStorage() {
  const s = new Storage({ kind: 'sqlite' });
  storages.push(s);
  return s;
}
function scratch(prefix) {
  const d = tmpDir(prefix);
  dirs.push(d);
  return d;
}

before(async () => {
  if (SKIP) return;
  sdk = await import('@aws-sdk/client-dynamodb');
  ddb = new sdk.DynamoDBClient({
    endpoint: ENDPOINT,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 2,
  });
});
after(() => {
  if (ddb) ddb.destroy();
  for (const s of storages) s.cleanup();
  for (const d of dirs) rmDir(d);
});

// Raw DynamoDB access (attribute values as DynamoDB JSON).
const S = (s) => ({ S: s });
const N = (x) => ({ N: String(x) });
async function rawGet(table, key) {
  const r = await ddb.send(new sdk.GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }));
  return r.Item;
}
async function rawPut(table, item) {
  await ddb.send(new sdk.PutItemCommand({ TableName: table, Item: item }));
}
async function rawQuery(table, index, cond, values, names) {
  const r = await ddb.send(new sdk.QueryCommand({
    TableName: table,
    IndexName: index,
    KeyConditionExpression: cond,
    ExpressionAttributeValues: values,
    ExpressionAttributeNames: names,
  }));
  return r.Items;
}
const noteKey = (t, id) => ({ target_uuid: S(t), uuid: S(id) });

// A user with a token for srv.
function userOf(srv, opts) {
  const u = newUser(opts);
  u.tok = srv.token(u);
  return u;
}
const notesPath = (t) => `/targets/${encodeURIComponent(t)}/notes`;
const notePath = (t, id) => `${notesPath(t)}/${id}`;
async function createNote(srv, u, t, json) {
  const r = await request(srv, 'POST', notesPath(t), { token: u.tok, json });
  assertStatus(r, 201);
  return r.body;
}
async function listAll(srv, u, p, limit) {
  const pages = [];
  let cursor = null;
  for (let i = 0; i < 100; i += 1) {
    const q = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await request(srv, 'GET', `${p}${q}`, { token: u.tok });
    assertStatus(r, 200);
    pages.push(r.body.items);
    if (r.body.next_cursor === null) return pages;
    cursor = r.body.next_cursor;
  }
  throw new Error(`${p}: the list does not end`);
}
const ids = (items) => items.map((x) => x.uuid);

// The text Python's str(datetime.utcnow()) gives: no fraction when microsecond == 0.
function pyUtc(ms, micros = 0, fraction = true) {
  const base = new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
  if (!fraction) return base;
  const us = (ms % 1000) * 1000 + micros;
  return `${base}.${String(us).padStart(6, '0')}`;
}
// 'YYYY-MM-DD HH:MM:SS[.ffffff]' -> microseconds since the epoch (BigInt)
function tsMicros(s) {
  const m = /^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{6}))?$/.exec(s);
  assert.ok(m, `not a timestamp: ${s}`);
  return BigInt(Date.parse(`${m[1].replace(' ', 'T')}Z`)) * 1000n + BigInt(m[2] ? Number(m[2]) : 0);
}
function fromMicros(us) {
  const ms = Number(us / 1000n);
  return `${new Date(ms).toISOString().replace('T', ' ').slice(0, 19)}.${String(us % 1000000n).padStart(6, '0')}`;
}

// A port nothing listens on.
function closedPort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------
// 1. What the service stores, read with the AWS SDK

// The table layouts of SPEC §3 / src/store/schema.c: table key, GSIs and LSIs (name ->
// [hash, range]), the attribute types, and projections other than ALL.
const LAYOUT = {
  notes: {
    key: ['target_uuid', 'uuid'],
    gsi: {
      'owner_uuid-created_at-index': ['owner_uuid', 'created_at'],
      'instance_id-uuid-index': ['instance_id', 'uuid'],
      'target_uuid-updated_at-index': ['target_uuid', 'updated_at'],
    },
    lsi: { 'target_uuid-is_pinned-index': ['target_uuid', 'is_pinned'] },
    types: { target_uuid: 'S', uuid: 'S', owner_uuid: 'S', created_at: 'S', instance_id: 'S', updated_at: 'S', is_pinned: 'N' },
  },
  comments: {
    key: ['target_uuid', 'uuid'],
    gsi: { 'owner_uuid-created_at-index': ['owner_uuid', 'created_at'] },
    lsi: { 'target_uuid-created_at-index': ['target_uuid', 'created_at'] },
    types: { target_uuid: 'S', uuid: 'S', owner_uuid: 'S', created_at: 'S' },
  },
  files: {
    key: ['target_uuid', 'uuid'],
    gsi: {
      'target_uuid-created_at-index': ['target_uuid', 'created_at'],
      'owner_uuid-created_at-index': ['owner_uuid', 'created_at'],
    },
    lsi: {},
    types: { target_uuid: 'S', uuid: 'S', owner_uuid: 'S', created_at: 'S' },
  },
  settings: {
    key: ['instance_id', 'config_key'],
    gsi: {
      'instance_id-config_type-index': ['instance_id', 'config_type'],
      'category-created_at-index': ['category', 'created_at'],
    },
    lsi: {},
    types: { instance_id: 'S', config_key: 'S', config_type: 'S', category: 'S', created_at: 'S' },
  },
  counters: { key: ['counter_seq_key'], gsi: {}, lsi: {}, types: { counter_seq_key: 'S' } },
  tasks: {
    key: ['instance_id', 'uuid'],
    gsi: {
      'target_uuid-created_at-index': ['target_uuid', 'created_at'],
      'target_uuid-updated_at-index': ['target_uuid', 'updated_at'],
      'owner_uuid-created_at-index': ['owner_uuid', 'created_at'],
      'assignee_uuid-created_at-index': ['assignee_uuid', 'created_at'],
      'status-created_at-index': ['status', 'created_at'],
      'instance_id-created_at-index-copy': ['instance_id', 'created_at'],
      'instance_id-uuid-index': ['instance_id', 'uuid'],
    },
    lsi: {
      'instance_id-created_at-index': ['instance_id', 'created_at'],
      'instance_id-created_by-index': ['instance_id', 'created_by'],
      'instance_id-updated_at-index': ['instance_id', 'updated_at'],
      'instance_id-assignee_name-index': ['instance_id', 'assignee_name'],
      'instance_id-status-index': ['instance_id', 'status'],
    },
    types: {
      instance_id: 'S', uuid: 'S', target_uuid: 'S', created_at: 'N', updated_at: 'N', owner_uuid: 'S',
      assignee_uuid: 'S', status: 'S', created_by: 'S', assignee_name: 'S',
    },
    include: {
      'instance_id-created_at-index-copy': ['item_number', 'title', 'status', 'priority', 'assignee_uuid',
        'assignee_name', 'owner_uuid', 'due_at', 'completed_at', 'updated_at', 'deleted_at'],
    },
  },
  tasks_counters: { key: ['counter_seq_key'], gsi: {}, lsi: {}, types: { counter_seq_key: 'S' } },
  notifications: {
    key: ['target_uuid', 'uuid'],
    gsi: {
      'target_uuid-created_at-index': ['target_uuid', 'created_at'],
      'target_uuid-is_read-index': ['target_uuid', 'is_read'],
      'target_uuid-is_hidden-index': ['target_uuid', 'is_hidden'],
    },
    lsi: {},
    types: { target_uuid: 'S', uuid: 'S', created_at: 'S', is_read: 'N', is_hidden: 'N' },
  },
  activity: {
    key: ['target_uuid', 'event_id'],
    gsi: { 'instance_id-created_at-index': ['instance_id', 'created_at'] },
    lsi: {},
    types: { target_uuid: 'S', event_id: 'S', instance_id: 'S', created_at: 'S' },
  },
  reports_cache: { key: ['cache_key'], gsi: {}, lsi: {}, types: { cache_key: 'S' } },
};

const keySchema = (ks) => ks.map((k) => [k.AttributeName, k.KeyType]);
const expectKeys = ([h, r]) => (r ? [[h, 'HASH'], [r, 'RANGE']] : [[h, 'HASH']]);

describe('1. items and tables as DynamoDB stores them', () => {
  let st;
  let srv;
  let u;
  const t = `acc-${randomHex(4)}`;
  const notes = {};

  before(async () => {
    if (SKIP) return;
    st = dynStorage();
    srv = await startServer({ storage: st });
    u = userOf(srv, { name: 'Zoë Ünïcode' });
    // raw JSON: integers past 2^53 must reach the store as written
    const big = await request(srv, 'POST', notesPath(t), {
      token: u.tok,
      headers: { 'Content-Type': 'application/json' },
      body: '{"data":{"text":"hello","n":42,"neg":-7,"f":1.5,"big":9007199254740993,' +
        '"max":9223372036854775807,"min":-9223372036854775807,"t":true,"fl":false,"z":null,"e":"",' +
        '"u":"日本😀","l":[1,"two",null,false,{"x":[]},[]],"o":{},' +
        '"nested":{"a":{"b":{"c":[{"d":1}]}}}},"is_pinned":true}',
    });
    assertStatus(big, 201);
    notes.big = big.body;
    notes.plain = await createNote(srv, u, t, { data: { text: 'plain' } });
    notes.list = await createNote(srv, u, t, { data: ['a', 1, true, null] });
    notes.str = await createNote(srv, u, t, { data: 'just text', is_pinned: false });
    notes.num = await createNote(srv, u, t, { data: 12 });
    notes.bool = await createNote(srv, u, t, { data: true });
  });
  after(async () => { if (srv) await srv.stop(); });

  const STRING_ATTRS = ['target_uuid', 'uuid', 'instance_id', 'owner_uuid', 'owner_name', 'created_at', 'updated_at'];

  dtest('a created note: S keys, owner and timestamps, N version and is_pinned, no deleted_at, nothing else', async () => {
    for (const [name, note] of Object.entries(notes)) {
      const item = await rawGet(st.tables.notes, noteKey(t, note.uuid));
      assert.ok(item, `${name}: not in the table`);
      assert.deepEqual(Object.keys(item).sort(),
        ['created_at', 'data', 'instance_id', 'is_pinned', 'owner_name', 'owner_uuid', 'target_uuid', 'updated_at', 'uuid', 'version'],
        `${name}: ${JSON.stringify(item)}`);
      for (const a of STRING_ATTRS) {
        assert.deepEqual(Object.keys(item[a]), ['S'], `${name}.${a}: ${JSON.stringify(item[a])}`);
      }
      assert.deepEqual(item.target_uuid, S(t));
      assert.deepEqual(item.uuid, S(note.uuid));
      assert.match(item.uuid.S, UUID_RE);
      assert.deepEqual(item.instance_id, S(u.instance_id));
      assert.deepEqual(item.owner_uuid, S(u.sub));
      assert.deepEqual(item.owner_name, S('Zoë Ünïcode'));
      assert.match(item.created_at.S, TIMESTAMP_RE);
      assert.equal(item.created_at.S, note.created_at);
      assert.equal(item.updated_at.S, item.created_at.S);
      assert.deepEqual(item.version, N(1), `${name}.version: ${JSON.stringify(item.version)}`);
      assert.deepEqual(item.is_pinned, N(name === 'big' ? 1 : 0), `${name}.is_pinned: ${JSON.stringify(item.is_pinned)}`);
      assert.ok(!('deleted_at' in item));
    }
  });

  dtest('data is a native attribute value: M, L, S, N, BOOL, NULL; big integers exact', async () => {
    const big = await rawGet(st.tables.notes, noteKey(t, notes.big.uuid));
    assert.deepEqual(big.data, {
      M: {
        text: S('hello'),
        n: N('42'),
        neg: N('-7'),
        f: N('1.5'),
        big: N('9007199254740993'),
        max: N('9223372036854775807'),
        min: N('-9223372036854775807'),
        t: { BOOL: true },
        fl: { BOOL: false },
        z: { NULL: true },
        e: S(''),
        u: S('日本😀'),
        l: { L: [N('1'), S('two'), { NULL: true }, { BOOL: false }, { M: { x: { L: [] } } }, { L: [] }] },
        o: { M: {} },
        nested: { M: { a: { M: { b: { M: { c: { L: [{ M: { d: N('1') } }] } } } } } } },
      },
    });
    assert.deepEqual((await rawGet(st.tables.notes, noteKey(t, notes.plain.uuid))).data, { M: { text: S('plain') } });
    assert.deepEqual((await rawGet(st.tables.notes, noteKey(t, notes.list.uuid))).data,
      { L: [S('a'), N('1'), { BOOL: true }, { NULL: true }] });
    assert.deepEqual((await rawGet(st.tables.notes, noteKey(t, notes.str.uuid))).data, S('just text'));
    assert.deepEqual((await rawGet(st.tables.notes, noteKey(t, notes.num.uuid))).data, N('12'));
    assert.deepEqual((await rawGet(st.tables.notes, noteKey(t, notes.bool.uuid))).data, { BOOL: true });
    // and the API answers the big integers exactly
    const g = await request(srv, 'GET', notePath(t, notes.big.uuid), { token: u.tok });
    assertStatus(g, 200);
    const d = parseExact(g.text).data;
    assert.deepEqual(d.big, { $n: '9007199254740993' });
    assert.deepEqual(d.max, { $n: '9223372036854775807' });
  });

  dtest('a change moves version (N) and updated_at; DELETE writes an S deleted_at; restore removes it', async () => {
    const k = noteKey(t, notes.big.uuid);
    const p = await request(srv, 'PATCH', notePath(t, notes.big.uuid), { token: u.tok, json: { is_pinned: false } });
    assertStatus(p, 200);
    let item = await rawGet(st.tables.notes, k);
    assert.deepEqual(item.version, N(2));
    assert.deepEqual(item.is_pinned, N(0));
    assert.equal(item.created_at.S, notes.big.created_at);
    assert.match(item.updated_at.S, TIMESTAMP_RE);
    assert.ok(item.updated_at.S > item.created_at.S, `updated_at ${item.updated_at.S} did not move`);
    assert.equal(item.updated_at.S, p.body.updated_at);
    assert.ok(!('deleted_at' in item));

    assertStatus(await request(srv, 'DELETE', notePath(t, notes.big.uuid), { token: u.tok }), 204);
    item = await rawGet(st.tables.notes, k);
    assert.ok(item, 'a soft delete removed the item');
    assert.deepEqual(Object.keys(item.deleted_at || {}), ['S'], `deleted_at: ${JSON.stringify(item.deleted_at)}`);
    assert.match(item.deleted_at.S, TIMESTAMP_RE);
    assert.ok(item.deleted_at.S >= item.created_at.S);
    assert.deepEqual(item.version, N(3));
    assert.equal(item.data.M.big.N, '9007199254740993', 'data changed by the delete');

    const r = await request(srv, 'POST', `${notePath(t, notes.big.uuid)}/restore`, { token: u.tok });
    assertStatus(r, 200);
    item = await rawGet(st.tables.notes, k);
    assert.ok(!('deleted_at' in item), `deleted_at left after restore: ${JSON.stringify(item.deleted_at)}`);
    assert.deepEqual(item.version, N(4));
  });

  dtest('the secondary indexes hold the notes (pinned LSI, instance_id-uuid GSI)', async () => {
    const pinnedNote = await createNote(srv, u, t, { data: 'pinned', is_pinned: true });
    const pinned = await rawQuery(st.tables.notes, 'target_uuid-is_pinned-index',
      '#t = :t AND #p = :one', { ':t': S(t), ':one': N(1) }, { '#t': 'target_uuid', '#p': 'is_pinned' });
    assert.deepEqual(pinned.map((x) => x.uuid.S), [pinnedNote.uuid]);
    const byUuid = await rawQuery(st.tables.notes, 'instance_id-uuid-index',
      '#i = :i AND #u = :u', { ':i': S(u.instance_id), ':u': S(notes.plain.uuid) }, { '#i': 'instance_id', '#u': 'uuid' });
    assert.deepEqual(byUuid.map((x) => x.target_uuid.S), [t]);
  });

  dtest('DescribeTable: key schema, attribute types, GSIs and LSIs of every table (SPEC §3, schema.c)', async () => {
    for (const logical of TABLES) {
      const want = LAYOUT[logical];
      const d = (await ddb.send(new sdk.DescribeTableCommand({ TableName: st.tables[logical] }))).Table;
      const where = `${logical} (${st.tables[logical]})`;
      assert.equal(d.TableStatus, 'ACTIVE', where);
      assert.deepEqual(keySchema(d.KeySchema), expectKeys(want.key), `${where}: key schema`);
      const types = Object.fromEntries(d.AttributeDefinitions.map((a) => [a.AttributeName, a.AttributeType]));
      assert.deepEqual(types, want.types, `${where}: attribute definitions`);
      const gsi = Object.fromEntries((d.GlobalSecondaryIndexes || []).map((i) => [i.IndexName, i]));
      const lsi = Object.fromEntries((d.LocalSecondaryIndexes || []).map((i) => [i.IndexName, i]));
      assert.deepEqual(Object.keys(gsi).sort(), Object.keys(want.gsi).sort(), `${where}: GSI names`);
      assert.deepEqual(Object.keys(lsi).sort(), Object.keys(want.lsi).sort(), `${where}: LSI names`);
      for (const [kind, have, exp] of [['GSI', gsi, want.gsi], ['LSI', lsi, want.lsi]]) {
        for (const [name, keys] of Object.entries(exp)) {
          assert.deepEqual(keySchema(have[name].KeySchema), expectKeys(keys), `${where}: ${kind} ${name} keys`);
          const inc = want.include && want.include[name];
          if (inc) {
            assert.equal(have[name].Projection.ProjectionType, 'INCLUDE', `${where}: ${name} projection`);
            assert.deepEqual([...have[name].Projection.NonKeyAttributes].sort(), [...inc].sort(), `${where}: ${name} attributes`);
          } else {
            assert.equal(have[name].Projection.ProjectionType, 'ALL', `${where}: ${name} projection`);
          }
        }
      }
      assert.equal(d.BillingModeSummary && d.BillingModeSummary.BillingMode, 'PAY_PER_REQUEST', `${where}: billing mode`);
    }
  });
});

// ---------------------------------------------------------------------------------------
// 2. Items the original Python service wrote

describe('2. items written by the original service (boto3), put with the SDK', () => {
  let st;
  let srv;
  let who;
  let stranger;
  const lt = `acc-${randomHex(4)}`;
  const L = {};        // name -> uuid of the legacy items
  const raw = {};      // name -> the item as put
  let A;
  let B;
  let C;               // notes created through the API

  const legacy = (name, extra) => {
    const id = uuid();
    L[name] = id;
    raw[name] = {
      target_uuid: S(lt),
      uuid: S(id),
      instance_id: S(who.instance_id),
      owner_uuid: S(who.sub),
      owner_name: S('Old Timer'),
      ...extra,
    };
    return raw[name];
  };

  before(async () => {
    if (SKIP) return;
    st = dynStorage();
    srv = await startServer({ storage: st });
    who = userOf(srv);
    stranger = userOf(srv); // another tenant
    const put = (item) => rawPut(st.tables.notes, item);
    const at = (s) => ({ created_at: S(s), updated_at: S(s) });
    await put(legacy('old', {
      data: {
        M: {
          text: S('legacy'),
          n: N('5'),
          f: N('1.25'),
          big: N('9007199254740993'),
          l: { L: [{ NULL: true }, { BOOL: true }, { BOOL: false }, S(''), { M: {} }] },
          m: { M: { deep: { M: { x: N('-1') } } } },
        },
      },
      is_pinned: N(0),
      ...at('2021-03-04 05:06:07'),
    }));
    await put(legacy('nopin', { data: S('no is_pinned attribute'), ...at('2022-01-02 03:04:05.250000') }));
    await put(legacy('pin', { data: { M: { text: S('pinned long ago') } }, is_pinned: N(1), ...at('2022-06-07 08:09:10') }));
    // another tenant's legacy note on the same record: never seen by `who`
    await put({
      ...legacy('foreign', { data: S('not yours'), is_pinned: N(0), ...at('2023-01-01 00:00:00.000001') }),
      instance_id: S(stranger.instance_id),
      owner_uuid: S(stranger.sub),
    });

    A = await createNote(srv, who, lt, { data: 'A' });
    await sleep(15);
    C = await createNote(srv, who, lt, { data: 'C' });
    await sleep(5);
    B = await createNote(srv, who, lt, { data: 'B', is_pinned: true });
    // written "between" A and C, and in A's second without a fraction (so just before A)
    const mid = fromMicros((tsMicros(A.updated_at) + tsMicros(C.updated_at)) / 2n);
    assert.ok(mid > A.updated_at && mid < C.updated_at, `${A.updated_at} < ${mid} < ${C.updated_at}`);
    await put(legacy('mid', { data: S('mid'), is_pinned: N(0), ...at(mid) }));
    await put(legacy('sec', { data: S('sec'), ...at(A.updated_at.slice(0, 19)) }));
    // created long ago, changed later (by the original service)
    await put(legacy('edited', {
      data: S('edited'),
      is_pinned: N(0),
      created_at: S('2020-01-01 00:00:00.500000'),
      updated_at: S('2021-12-31 23:59:59'),
    }));
  });
  after(async () => { if (srv) await srv.stop(); });

  const get = (id, tok = who.tok) => request(srv, 'GET', notePath(lt, id), { token: tok });

  dtest('each is served by GET, with version 0 (ETag "0"), is_pinned a boolean, data converted back', async () => {
    for (const name of ['old', 'nopin', 'pin', 'mid', 'sec', 'edited']) {
      const g = await get(L[name]);
      assertStatus(g, 200);
      const b = g.body;
      assert.equal(b.uuid, L[name]);
      assert.equal(b.target_uuid, lt);
      assert.equal(b.instance_id, who.instance_id);
      assert.equal(b.owner_uuid, who.sub);
      assert.equal(b.owner_name, 'Old Timer');
      assert.equal(b.version, 0, `${name}: version ${JSON.stringify(b.version)}`);
      assert.equal(g.headers.etag, '"0"', `${name}: ETag`);
      assert.equal(b.is_pinned, name === 'pin', `${name}: is_pinned ${JSON.stringify(b.is_pinned)}`);
      for (const f of ['created_at', 'updated_at']) {
        const stored = raw[name][f].S;
        const ok = stored.length === 19 ? [stored, `${stored}.000000`] : [stored];
        assert.ok(ok.includes(b[f]), `${name}.${f}: stored ${stored}, answered ${b[f]}`);
      }
      assert.ok(!('deleted_at' in b));
    }
    const g = await get(L.old);
    assert.deepEqual(canonExact(parseExact(g.text).data), canonExact({
      text: 'legacy', n: { $n: '5' }, f: { $n: '1.25' }, big: { $n: '9007199254740993' },
      l: [null, true, false, '', {}], m: { deep: { x: { $n: '-1' } } },
    }));
    assert.equal((await get(L.nopin)).body.data, 'no is_pinned attribute');
  });

  dtest('another tenant\'s legacy note is 404, and found by its owner', async () => {
    assertError(await get(L.foreign), 404);
    assertError(await request(srv, 'GET', `/notes/${L.foreign}`, { token: who.tok }), 404);
    const g = await get(L.foreign, stranger.tok);
    assertStatus(g, 200);
    assert.equal(g.body.is_pinned, false);
  });

  dtest('GET /notes/{uuid} finds them (instance_id-uuid-index)', async () => {
    for (const name of ['old', 'nopin', 'pin']) {
      const g = await request(srv, 'GET', `/notes/${L[name]}`, { token: who.tok });
      assertStatus(g, 200);
      assert.equal(g.body.uuid, L[name]);
      assert.equal(g.body.version, 0);
    }
  });

  dtest('the record\'s list sorts them among new notes: pinned first, then newest updated_at', async () => {
    const expected = [B.uuid, L.pin, C.uuid, L.mid, A.uuid, L.sec, L.nopin, L.edited, L.old];
    const whole = await listAll(srv, who, notesPath(lt), 100);
    assert.equal(whole.length, 1);
    assert.deepEqual(ids(whole[0]), expected, 'one page');
    assert.deepEqual(whole[0].map((x) => x.is_pinned), expected.map((id) => id === B.uuid || id === L.pin));
    assert.deepEqual(whole[0].map((x) => x.version), expected.map((id) => ([A.uuid, B.uuid, C.uuid].includes(id) ? 1 : 0)));
    for (const limit of [1, 2, 3, 4]) {
      const pages = await listAll(srv, who, notesPath(lt), limit);
      assert.deepEqual(pages.flat().map((x) => x.uuid), expected, `limit ${limit}`);
      assert.ok(pages.every((p, i) => p.length === limit || i === pages.length - 1), `limit ${limit}: short page`);
    }
  });

  dtest('the user\'s list sorts them by created_at, newest first', async () => {
    const expected = [B.uuid, C.uuid, L.mid, A.uuid, L.sec, L.pin, L.nopin, L.old, L.edited];
    const pages = await listAll(srv, who, `/users/${who.sub}/notes`, 4);
    assert.deepEqual(pages.flat().map((x) => x.uuid), expected);
  });

  dtest('they can be changed: the first change writes version 1; If-Match "0" matches, "1" does not', async () => {
    // no is_pinned attribute, If-Match "0"
    assertError(await request(srv, 'PATCH', notePath(lt, L.nopin), {
      token: who.tok, json: { data: 'nope' }, headers: { 'If-Match': '"1"' },
    }), 412);
    const p1 = await request(srv, 'PATCH', notePath(lt, L.nopin), {
      token: who.tok, json: { data: { now: 'changed' } }, headers: { 'If-Match': '"0"' },
    });
    assertStatus(p1, 200);
    assert.equal(p1.body.version, 1);
    assert.equal(p1.headers.etag, '"1"');
    assert.equal(p1.body.is_pinned, false);
    assert.deepEqual(p1.body.data, { now: 'changed' });
    let item = await rawGet(st.tables.notes, noteKey(lt, L.nopin));
    assert.deepEqual(item.version, N(1));
    assert.deepEqual(item.data, { M: { now: S('changed') } });
    assert.deepEqual(item.created_at, raw.nopin.created_at, 'created_at rewritten');
    assert.match(item.updated_at.S, TIMESTAMP_RE);
    assert.ok(item.updated_at.S > raw.nopin.updated_at.S);
    assert.ok(!('is_pinned' in item) || item.is_pinned.N === '0', `is_pinned: ${JSON.stringify(item.is_pinned)}`);
    assert.deepEqual(item.owner_uuid, raw.nopin.owner_uuid);
    assert.deepEqual(item.owner_name, raw.nopin.owner_name);

    // pin the oldest, no If-Match
    const p2 = await request(srv, 'PATCH', notePath(lt, L.old), { token: who.tok, json: { is_pinned: true } });
    assertStatus(p2, 200);
    assert.equal(p2.body.version, 1);
    assert.equal(p2.body.is_pinned, true);
    item = await rawGet(st.tables.notes, noteKey(lt, L.old));
    assert.deepEqual(item.version, N(1));
    assert.deepEqual(item.is_pinned, N(1));
    assert.deepEqual(item.data, raw.old.data, 'data changed by a pin');

    // delete one
    assertStatus(await request(srv, 'DELETE', notePath(lt, L.sec), { token: who.tok, headers: { 'If-Match': '"0"' } }), 204);
    item = await rawGet(st.tables.notes, noteKey(lt, L.sec));
    assert.deepEqual(item.version, N(1));
    assert.match(item.deleted_at.S, TIMESTAMP_RE);
    assertError(await get(L.sec), 404);

    const pages = await listAll(srv, who, notesPath(lt), 3);
    assert.deepEqual(pages.flat().map((x) => x.uuid),
      [L.old, B.uuid, L.pin, L.nopin, C.uuid, L.mid, A.uuid, L.edited]);
  });
});

// ---------------------------------------------------------------------------------------
// 3. DynamoDB requests per API call, through a counting proxy

// Forwards every request to dynalite and records its operation, table, index and headers.
class CountingProxy {
  constructor(upstream, { delayMs = 0 } = {}) {
    this.upstream = new URL(upstream);
    this.delayMs = delayMs; // every request is held this long before it is forwarded
    this.all = [];   // every request since start
    this.log = [];   // since mark()
    this.agent = new http.Agent({ keepAlive: true });
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  start() {
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        let parsed = {};
        try { parsed = JSON.parse(body.toString('utf8')); } catch { /* recorded as is */ }
        const target = String(req.headers['x-amz-target'] || '');
        const rec = {
          op: target.replace(/^DynamoDB_20120810\./, ''),
          target,
          table: parsed.TableName,
          index: parsed.IndexName,
          method: req.method,
          url: req.url,
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          body,
          at: Date.now(),
        };
        this.all.push(rec);
        this.log.push(rec);
        const headers = { ...req.headers };
        const forward = () => {
          const up = http.request({
            host: this.upstream.hostname,
            port: this.upstream.port,
            method: req.method,
            path: req.url,
            headers,
            agent: this.agent,
          }, (ur) => {
            res.writeHead(ur.statusCode, ur.headers);
            ur.pipe(res);
          });
          up.on('error', () => { res.writeHead(502); res.end(); });
          up.end(body);
        };
        if (this.delayMs) setTimeout(forward, this.delayMs);
        else forward();
      });
    });
    return new Promise((resolve) => {
      this.server.listen(0, '127.0.0.1', () => {
        this.port = this.server.address().port;
        resolve();
      });
    });
  }

  mark() { this.log = []; }

  async stop() {
    this.agent.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

// Checks one request's SigV4 signature (secret "test", region us-east-1, service dynamodb)
// by recomputing it; returns a reason when it is wrong, else null.
function sigv4Problem(rec, secret = 'test') {
  const auth = rec.headers.authorization;
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/us-east-1\/dynamodb\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth || '');
  if (!m) return `Authorization: ${auth}`;
  const amzDate = rec.headers['x-amz-date'];
  if (!/^\d{8}T\d{6}Z$/.test(amzDate || '')) return `X-Amz-Date: ${amzDate}`;
  if (amzDate.slice(0, 8) !== m[2]) return `credential date ${m[2]} is not X-Amz-Date ${amzDate}`;
  const when = Date.parse(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
  if (Math.abs(when - rec.at) > 5 * 60 * 1000) return `X-Amz-Date ${amzDate} is not now`;
  const signed = m[3].split(';');
  for (const h of ['host', 'x-amz-date', 'x-amz-target']) {
    if (!signed.includes(h)) return `${h} is not signed (SignedHeaders=${m[3]})`;
  }
  const values = {};
  for (let i = 0; i < rec.rawHeaders.length; i += 2) {
    const k = rec.rawHeaders[i].toLowerCase();
    (values[k] ||= []).push(rec.rawHeaders[i + 1].trim().replace(/\s+/g, ' '));
  }
  const canonHeaders = signed.map((h) => `${h}:${(values[h] || []).join(',')}\n`).join('');
  const sha = (x) => crypto.createHash('sha256').update(x).digest('hex');
  const hmac = (k, x) => crypto.createHmac('sha256', k).update(x).digest();
  const canonical = [rec.method, '/', '', canonHeaders, m[3], sha(rec.body)].join('\n');
  const scope = `${m[2]}/us-east-1/dynamodb/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha(canonical)].join('\n');
  const k = hmac(hmac(hmac(hmac(`AWS4${secret}`, m[2]), 'us-east-1'), 'dynamodb'), 'aws4_request');
  const sig = crypto.createHmac('sha256', k).update(toSign).digest('hex');
  if (sig !== m[4]) return `signature ${m[4]} does not match the request (expected ${sig})`;
  return null;
}

describe('3. DynamoDB requests per API call (counting proxy)', () => {
  let st;
  let proxy;
  let srv;
  let u;
  let mate;
  let admin;
  const t = `acc-${randomHex(4)}`;
  const pinned = [];
  const unpinned = [];

  // The operations sent while fn ran, as "Op" or "Op index"; every one on the notes table.
  async function opsOf(fn) {
    proxy.mark();
    const r = await fn();
    const seen = proxy.log.slice();
    for (const rec of seen) assert.equal(rec.table, st.tables.notes, `${rec.op} on ${rec.table}`);
    return { r, ops: seen.map((x) => (x.index ? `${x.op} ${x.index}` : x.op)) };
  }

  before(async () => {
    if (SKIP) return;
    st = dynStorage();
    await st.prepare();
    proxy = new CountingProxy(ENDPOINT);
    await proxy.start();
    srv = await startServer({ storage: st, env: { DYNAMODB_ENDPOINT: proxy.url }, args: ['--no-worker'] });
    u = userOf(srv);
    mate = userOf(srv, { instance: u.instance_id });
    admin = userOf(srv, { instance: u.instance_id, admin: true });
    // pinned notes first (the oldest), then 10 unpinned: the first pages meet no pinned
    // note on target_uuid-updated_at-index, so nothing is filtered out there
    for (let i = 0; i < 2; i += 1) pinned.push(await createNote(srv, u, t, { data: { i }, is_pinned: true }));
    for (let i = 0; i < 10; i += 1) unpinned.push(await createNote(srv, u, t, { data: { i } }));
  });
  after(async () => {
    if (srv) await srv.stop();
    if (proxy) await proxy.stop();
  });

  dtest('POST a note = 1 PutItem', async () => {
    const { r, ops } = await opsOf(() => request(srv, 'POST', notesPath(`other-${randomHex(4)}`), { token: u.tok, json: { data: 'x' } }));
    assertStatus(r, 201);
    assert.deepEqual(ops, ['PutItem']);
  });

  dtest('GET one note = 1 GetItem', async () => {
    const { r, ops } = await opsOf(() => request(srv, 'GET', notePath(t, unpinned[3].uuid), { token: u.tok }));
    assertStatus(r, 200);
    assert.deepEqual(ops, ['GetItem']);
    const miss = await opsOf(() => request(srv, 'GET', notePath(t, uuid()), { token: u.tok }));
    assertError(miss.r, 404);
    assert.deepEqual(miss.ops, ['GetItem']);
  });

  dtest('GET /notes/{uuid} = 1 Query on instance_id-uuid-index', async () => {
    const { r, ops } = await opsOf(() => request(srv, 'GET', `/notes/${unpinned[5].uuid}`, { token: u.tok }));
    assertStatus(r, 200);
    assert.equal(r.body.uuid, unpinned[5].uuid);
    assert.deepEqual(ops, ['Query instance_id-uuid-index']);
  });

  dtest('GET /users/{u}/notes: each page = 1 Query on owner_uuid-created_at-index', async () => {
    const whole = await opsOf(() => request(srv, 'GET', `/users/${u.sub}/notes`, { token: u.tok }));
    assertStatus(whole.r, 200);
    assert.equal(whole.r.body.items.length, 13);
    assert.deepEqual(whole.ops, ['Query owner_uuid-created_at-index']);
    const p1 = await opsOf(() => request(srv, 'GET', `/users/${u.sub}/notes?limit=5`, { token: u.tok }));
    assertStatus(p1.r, 200);
    assert.equal(p1.r.body.items.length, 5);
    assert.deepEqual(p1.ops, ['Query owner_uuid-created_at-index']);
    const p2 = await opsOf(() => request(srv, 'GET',
      `/users/${u.sub}/notes?limit=5&cursor=${encodeURIComponent(p1.r.body.next_cursor)}`, { token: u.tok }));
    assertStatus(p2.r, 200);
    assert.equal(p2.r.body.items.length, 5);
    assert.deepEqual(p2.ops, ['Query owner_uuid-created_at-index']);
  });

  dtest('the record\'s notes: first page = 1 Query on the pinned LSI + 1 on updated_at; a later page = 1 Query', async () => {
    const p1 = await opsOf(() => request(srv, 'GET', `${notesPath(t)}?limit=4`, { token: u.tok }));
    assertStatus(p1.r, 200);
    assert.deepEqual(ids(p1.r.body.items), [pinned[1].uuid, pinned[0].uuid, unpinned[9].uuid, unpinned[8].uuid]);
    assert.deepEqual(p1.ops, ['Query target_uuid-is_pinned-index', 'Query target_uuid-updated_at-index']);
    const p2 = await opsOf(() => request(srv, 'GET',
      `${notesPath(t)}?limit=4&cursor=${encodeURIComponent(p1.r.body.next_cursor)}`, { token: u.tok }));
    assertStatus(p2.r, 200);
    assert.deepEqual(ids(p2.r.body.items), [7, 6, 5, 4].map((i) => unpinned[i].uuid));
    assert.deepEqual(p2.ops, ['Query target_uuid-updated_at-index']);
  });

  dtest('PATCH a note = 1 GetItem + 1 PutItem', async () => {
    const { r, ops } = await opsOf(() => request(srv, 'PATCH', notePath(t, unpinned[0].uuid), { token: u.tok, json: { data: 'changed' } }));
    assertStatus(r, 200);
    assert.deepEqual(ops, ['GetItem', 'PutItem']);
  });

  dtest('no API call sends a Scan (a batch of mixed calls)', async () => {
    const t2 = `mix-${randomHex(4)}`;
    const cid = uuid();
    const calls = [];
    const call = async (method, p, opts, status) => {
      const r = await request(srv, method, p, opts);
      calls.push(`${method} ${p} -> ${r.status}`);
      assert.equal(r.status, status, `${method} ${p}: ${r.status} ${r.text}`);
      return r;
    };
    const a = (await call('POST', notesPath(t2), { token: u.tok, json: { data: { a: 1 }, is_pinned: true } }, 201)).body;
    await call('POST', notesPath(t2), { token: u.tok, json: { data: 'client uuid', uuid: cid } }, 201);
    await call('POST', notesPath(t2), { token: u.tok, json: { data: 'client uuid', uuid: cid } }, 200);
    await call('POST', notesPath(t2), { token: mate.tok, json: { data: 'client uuid', uuid: cid } }, 409);
    const b = (await call('POST', notesPath(t2), { token: mate.tok, json: { data: [1, 2] } }, 201)).body;
    await call('GET', notePath(t2, a.uuid), { token: mate.tok }, 200);
    await call('PATCH', notePath(t2, a.uuid), { token: mate.tok, json: { data: 'x' } }, 403);
    await call('PATCH', notePath(t2, a.uuid), { token: u.tok, json: { data: 'x' }, headers: { 'If-Match': '"9"' } }, 412);
    await call('PATCH', notePath(t2, a.uuid), { token: u.tok, json: { is_pinned: false } }, 200);
    await call('PATCH', notePath(t2, b.uuid), { token: admin.tok, json: { is_pinned: true } }, 200);
    await call('DELETE', notePath(t2, a.uuid), { token: u.tok }, 204);
    await call('GET', notePath(t2, a.uuid), { token: u.tok }, 404);
    await call('GET', `/notes/${a.uuid}`, { token: u.tok }, 404);
    await call('POST', `${notePath(t2, b.uuid)}/restore`, { token: mate.tok }, 409);
    await call('POST', `${notePath(t2, a.uuid)}/restore`, { token: u.tok }, 200);
    await call('DELETE', notePath(t2, b.uuid), { token: mate.tok }, 204);
    await call('GET', `${notesPath(t2)}?limit=1`, { token: u.tok }, 200);
    await call('GET', `${notesPath(t2)}?cursor=garbage`, { token: u.tok }, 400);
    await call('GET', `/users/${mate.sub}/notes`, { token: u.tok }, 200);
    await call('GET', `/users/${uuid()}/notes`, { token: u.tok }, 200);
    await call('GET', `/notes/${uuid()}`, { token: u.tok }, 404);
    await call('GET', notesPath(`nobody-${randomHex(4)}`), { token: u.tok }, 200);
    await listAll(srv, u, notesPath(t), 1);
    await listAll(srv, u, notesPath(t2), 1);
    await listAll(srv, u, `/users/${u.sub}/notes`, 2);
    await call('GET', '/setup-install', { token: admin.tok }, 200);
    await call('GET', '/health', {}, 200);
    const scans = proxy.all.filter((x) => x.op === 'Scan');
    assert.equal(scans.length, 0, `Scan sent: ${scans.map((x) => x.table).join(', ')}`);
    assert.ok(proxy.all.length > 30, `only ${proxy.all.length} requests seen: is the proxy in the way?`);
  });

  dtest('every request is POST / signed with SigV4 (AWS4-HMAC-SHA256, us-east-1/dynamodb) and X-Amz-Date', async () => {
    assert.ok(proxy.all.length > 0);
    const ops = new Set();
    for (const rec of proxy.all) {
      ops.add(rec.op);
      assert.equal(rec.method, 'POST');
      assert.equal(rec.url, '/');
      assert.match(rec.target, /^DynamoDB_20120810\.[A-Za-z]+$/);
      assert.match(String(rec.headers['content-type']), /^application\/x-amz-json-1\.0$/);
      assert.match(String(rec.headers.authorization),
        /^AWS4-HMAC-SHA256 Credential=test\/\d{8}\/us-east-1\/dynamodb\/aws4_request, ?SignedHeaders=[a-z0-9;-]+, ?Signature=[0-9a-f]{64}$/);
      assert.match(String(rec.headers['x-amz-date']), /^\d{8}T\d{6}Z$/);
      const why = sigv4Problem(rec);
      assert.equal(why, null, `${rec.op}: ${why}`);
    }
    for (const op of ['GetItem', 'PutItem', 'Query']) assert.ok(ops.has(op), `no ${op} seen`);
  });
});

// ---------------------------------------------------------------------------------------
// 4. A missing table

describe('4. tables not set up', () => {
  let st;
  let srv;
  let u;
  const t = `acc-${randomHex(4)}`;
  before(async () => {
    if (SKIP) return;
    st = dynStorage();
    st.prepared = true; // start without `actionstools setup`
    srv = await startServer({ storage: st });
    u = userOf(srv);
  });
  after(async () => { if (srv) await srv.stop(); });

  dtest('503 saying to run `actionstools setup`; /health 200; after setup the same requests succeed', async () => {
    const h = await request(srv, 'GET', '/health');
    assertStatus(h, 200);
    assert.equal(h.body.status, 'ok');
    assert.equal(h.body.storage, 'dynamodb');
    assertError(await request(srv, 'GET', notesPath(t), { token: u.tok }), 503, { message: /actionstools setup/ });
    assertError(await request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: 'x' } }), 503, { message: /actionstools setup/ });
    assertError(await request(srv, 'GET', notePath(t, uuid()), { token: u.tok }), 503, { message: /actionstools setup/ });
    assertError(await request(srv, 'GET', `/notes/${uuid()}`, { token: u.tok }), 503, { message: /actionstools setup/ });
    assertStatus(await request(srv, 'GET', '/health'), 200);

    const r = await runCli(['setup'], { env: st.env, timeoutMs: 60000 });
    assert.equal(r.code, 0, r.stderr);

    const empty = await request(srv, 'GET', notesPath(t), { token: u.tok });
    assertStatus(empty, 200);
    assert.deepEqual(empty.body, { items: [], next_cursor: null });
    const c = await request(srv, 'POST', notesPath(t), { token: u.tok, json: { data: 'x' } });
    assertStatus(c, 201);
    assertStatus(await request(srv, 'GET', notePath(t, c.body.uuid), { token: u.tok }), 200);
    assertStatus(await request(srv, 'GET', `/notes/${c.body.uuid}`, { token: u.tok }), 200);
  });
});

// ---------------------------------------------------------------------------------------
// 5. Migration: sqlite -> export -> import into dynamodb -> export

// A line of an export file in a canonical form (object members sorted).
function canonLine(line) {
  const sortDeep = (v) => {
    if (Array.isArray(v)) return v.map(sortDeep);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortDeep(v[k])]));
    }
    return v;
  };
  return JSON.stringify(sortDeep(JSON.parse(line)));
}
function readExport(dir) {
  const out = {};
  for (const f of fs.readdirSync(dir).sort()) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    out[f] = text.split('\n').filter((l) => l.length).map(canonLine).sort();
  }
  return out;
}

describe('5. migration round trip: sqlite -> export -> dynamodb -> export', () => {
  const secret = randomHex(24);
  let sq;
  let dy;
  let d1;
  let d2;
  let owner;
  let mate;
  let stranger;
  const t1 = `acc-${randomHex(4)}`;
  const t2 = `acc-${randomHex(4)}`;
  const seen = {};     // what the sqlite server answered: name -> {status, text}
  const reads = [];    // [name, path, user] read on both servers

  before(async () => {
    if (SKIP) return;
    sq = sqliteStorage();
    owner = newUser();
    mate = newUser({ instance: owner.instance_id });
    stranger = newUser();
    const a = await startServer({ storage: sq, secret });
    try {
      const tok = (x) => a.token(x);
      const mk = async (usr, t, json) => {
        const r = await request(a, 'POST', notesPath(t), { token: tok(usr), headers: { 'Content-Type': 'application/json' }, body: json });
        assertStatus(r, 201);
        await sleep(2);
        return r.body;
      };
      const n = {};
      n.p1 = await mk(owner, t1, '{"data":{"text":"pinned","big":9007199254740993,"f":-0.25,"u":"日本😀"},"is_pinned":true}');
      n.u1 = await mk(owner, t1, '{"data":{"l":[null,true,false,"",{},[]],"o":{"deep":{"er":[1,2,3]}}}}');
      n.u2 = await mk(mate, t1, '{"data":"a string"}');
      n.u3 = await mk(owner, t1, '{"data":[1,"two",3.5]}');
      n.u4 = await mk(owner, t1, '{"data":12345678901234567,"is_pinned":false}');
      n.p2 = await mk(mate, t1, '{"data":{"pin":"later"}}');
      n.del = await mk(owner, t1, '{"data":"deleted"}');
      n.res = await mk(owner, t1, '{"data":"restored"}');
      n.ch = await mk(owner, t1, '{"data":{"v":1}}');
      n.o1 = await mk(owner, t2, '{"data":{"other":"record"},"is_pinned":true}');
      n.o2 = await mk(owner, t2, '{"data":true}');
      n.s1 = await mk(stranger, t1, '{"data":"another tenant on the same record"}');
      const ok = async (method, p, usr, json, status) => {
        const r = await request(a, method, p, { token: tok(usr), json });
        assertStatus(r, status);
        await sleep(2);
      };
      await ok('PATCH', notePath(t1, n.p2.uuid), mate, { is_pinned: true }, 200);
      await ok('DELETE', notePath(t1, n.del.uuid), owner, undefined, 204);
      await ok('DELETE', notePath(t1, n.res.uuid), owner, undefined, 204);
      await ok('POST', `${notePath(t1, n.res.uuid)}/restore`, owner, undefined, 200);
      await ok('PATCH', notePath(t1, n.ch.uuid), owner, { data: { v: 2 } }, 200);
      await ok('PATCH', notePath(t1, n.ch.uuid), mate, { data: { v: 3 } }, 403);
      await ok('PATCH', notePath(t1, n.ch.uuid), owner, { data: { v: 3, list: [1.5, -2] } }, 200);

      for (const [name, note] of Object.entries(n)) {
        const usr = name === 's1' ? stranger : owner;
        reads.push([`get ${name}`, notePath(note.target_uuid, note.uuid), usr]);
        reads.push([`by uuid ${name}`, `/notes/${note.uuid}`, usr]);
      }
      for (const limit of [100, 1, 2, 3, 5]) {
        reads.push([`t1 list limit ${limit}`, notesPath(t1), owner, limit]);
      }
      reads.push(['t2 list', notesPath(t2), owner, 2]);
      reads.push(['t1 list of the other tenant', notesPath(t1), stranger, 10]);
      reads.push(['owner notes', `/users/${owner.sub}/notes`, owner, 3]);
      reads.push(['mate notes', `/users/${mate.sub}/notes`, mate, 1]);
      for (const [name, p, usr, limit] of reads) seen[name] = await readAll(a, p, usr, limit);
      assert.equal(seen['t1 list limit 100'][0].items.length, 8);
    } finally {
      await a.stop();
    }
    d1 = path.join(scratch('at-mig-'), 'd1');
    d2 = path.join(scratch('at-mig-'), 'd2');
    let r = await runCli(['export', '--dir', d1], { env: sq.env });
    assert.equal(r.code, 0, `export from sqlite: ${r.stderr}`);
    dy = dynStorage();
    await dy.prepare();
    r = await runCli(['import', '--dir', d1], { env: dy.env });
    assert.equal(r.code, 0, `import into dynamodb: ${r.stderr}`);
    r = await runCli(['export', '--dir', d2], { env: dy.env });
    assert.equal(r.code, 0, `export from dynamodb: ${r.stderr}`);
  });

  // Every page of a list (limit given) or one GET: [{status, items|text}...]
  async function readAll(srv, p, usr, limit) {
    const tok = mintToken(usr, { secret });
    if (!limit) {
      const r = await request(srv, 'GET', p, { token: tok });
      return [{ status: r.status, body: r.status === 200 ? canonExact(parseExact(r.text)) : r.body, etag: r.headers.etag }];
    }
    const out = [];
    let cursor = null;
    for (let i = 0; i < 100; i += 1) {
      const q = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const r = await request(srv, 'GET', `${p}${q}`, { token: tok });
      assertStatus(r, 200);
      const b = parseExact(r.text);
      out.push({ items: canonExact(b.items), more: b.next_cursor !== null });
      if (b.next_cursor === null) return out;
      cursor = b.next_cursor;
    }
    throw new Error(`${p}: the list does not end`);
  }

  dtest('the dynamodb export holds the same items as the sqlite export, table by table', () => {
    const a = readExport(d1);
    const b = readExport(d2);
    assert.deepEqual(Object.keys(b), Object.keys(a), 'export files');
    assert.deepEqual(Object.keys(a).sort(), TABLES.map((x) => `${x}.json`).sort());
    assert.equal(a['notes.json'].length, 12, 'notes exported from sqlite');
    for (const f of Object.keys(a)) assert.deepEqual(b[f], a[f], f);
  });

  dtest('served from dynamodb, every read answers as it did from sqlite (lists: same order, same fields)', async () => {
    const b = await startServer({ storage: dy, secret });
    try {
      for (const [name, p, usr, limit] of reads) {
        const got = await readAll(b, p, usr, limit);
        assert.deepEqual(got, seen[name], name);
      }
    } finally {
      await b.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------
// 6. A dead endpoint

describe('6. a dead DynamoDB endpoint', () => {
  let srv;
  let u;
  before(async () => {
    if (SKIP) return;
    const port = await closedPort();
    const st = dynStorage({ endpoint: `http://127.0.0.1:${port}` });
    st.prepared = true; // nothing to set up there
    srv = await startServer({ storage: st });
    u = userOf(srv);
  });
  after(async () => { if (srv) await srv.stop(); });

  dtest('503 in well under 15 s, and /health keeps answering 200', async () => {
    const t = `acc-${randomHex(4)}`;
    for (const [method, p, json] of [
      ['GET', notesPath(t)],
      ['POST', notesPath(t), { data: 'x' }],
      ['GET', notePath(t, uuid())],
      ['GET', `/notes/${uuid()}`],
    ]) {
      const t0 = Date.now();
      const [r, h] = await Promise.all([
        request(srv, method, p, { token: u.tok, json, timeoutMs: 30000 }),
        (async () => { await sleep(20); const x = Date.now(); const res = await request(srv, 'GET', '/health'); return { res, ms: Date.now() - x }; })(),
      ]);
      const ms = Date.now() - t0;
      assertError(r, 503);
      assert.ok(ms < 15000, `${method} ${p} took ${ms} ms`);
      assertStatus(h.res, 200);
      assert.ok(h.ms < 2000, `/health took ${h.ms} ms while a store call was failing`);
    }
    assertStatus(await request(srv, 'GET', '/health'), 200);
  });
});

describe('6b. a silent DynamoDB endpoint (accepts connections, never answers)', () => {
  let srv;
  let u;
  let silent;
  const sockets = new Set();
  before(async () => {
    if (SKIP) return;
    silent = net.createServer((sock) => { sockets.add(sock); sock.on('error', () => {}); sock.on('close', () => sockets.delete(sock)); });
    await new Promise((r) => silent.listen(0, '127.0.0.1', r));
    const st = dynStorage({ endpoint: `http://127.0.0.1:${silent.address().port}` });
    st.prepared = true;
    srv = await startServer({ storage: st });
    u = userOf(srv);
  });
  after(async () => {
    if (srv) await srv.stop();
    for (const s of sockets) s.destroy();
    if (silent) await new Promise((r) => silent.close(r));
  });

  dtest('a request answers 503 in under 15 s (the call\'s deadline), and /health answers meanwhile', async () => {
    const t = `acc-${randomHex(4)}`;
    const t0 = Date.now();
    const call = request(srv, 'GET', notesPath(t), { token: u.tok, timeoutMs: 30000 }).then((r) => ({ r, ms: Date.now() - t0 }));
    await sleep(300);
    const h0 = Date.now();
    const h = await request(srv, 'GET', '/health', { timeoutMs: 5000 });
    const hms = Date.now() - h0;
    assertStatus(h, 200);
    assert.ok(hms < 1000, `/health took ${hms} ms while a store call hung`);
    const { r, ms } = await call;
    assertError(r, 503);
    assert.ok(ms < 15000, `a call to a silent store took ${ms} ms`);
  });
});

describe('6c. a slow store: concurrent requests are not queued behind each other', () => {
  const DELAY = 700; // every DynamoDB request takes this long
  let st;
  let proxy;
  let srv;
  let u;
  before(async () => {
    if (SKIP) return;
    st = dynStorage();
    await st.prepare();
    proxy = new CountingProxy(ENDPOINT, { delayMs: DELAY });
    await proxy.start();
    srv = await startServer({ storage: st, env: { DYNAMODB_ENDPOINT: proxy.url } });
    u = userOf(srv);
  });
  after(async () => {
    if (srv) await srv.stop();
    if (proxy) await proxy.stop();
  });

  // HTTP_THREADS is 16 x cores on dynamodb "whose calls wait on the network": 12 GETs of
  // one GetItem each, sent at once, should each take about one store call, and /health
  // none, not wait for other requests' store calls.
  dtest('12 GETs at once (1 GetItem each, 700 ms) each answer within 1300 ms; /health in the burst within 600 ms', async () => {
    const t = `acc-${randomHex(4)}`;
    const t0 = Date.now();
    const timed = (p) => p.then((r) => ({ r, ms: Date.now() - t0 }));
    const gets = [];
    const healths = [];
    for (let i = 0; i < 12; i += 1) {
      gets.push(timed(request(srv, 'GET', notePath(t, uuid()), { token: u.tok, timeoutMs: 20000 })));
      if (i % 3 === 2) healths.push(timed(request(srv, 'GET', '/health', { timeoutMs: 20000 })));
    }
    const g = await Promise.all(gets);
    const h = await Promise.all(healths);
    for (const { r } of g) assertError(r, 404);
    for (const { r } of h) assertStatus(r, 200);
    const gms = g.map((x) => x.ms).sort((a, b) => a - b);
    const hms = h.map((x) => x.ms).sort((a, b) => a - b);
    assert.ok(gms[gms.length - 1] < DELAY + 600 && hms[hms.length - 1] < DELAY - 100,
      `GET latencies (ms): ${gms.join(' ')}; /health latencies (ms): ${hms.join(' ')}`);
  });
});
