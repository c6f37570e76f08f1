// The command line (SPEC §1, §2): --version, --help, configuration errors, token, --config,
// setup, export / import.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  PRODUCTION_TABLE_NAMES, STAGING_TABLE_NAMES, STORAGE, Storage, VERSION, assertError, assertStatus,
  canonExact, mintToken, newUser, parseExact, randomHex, request, rmDir, runCli, startServer, tmpDir,
  uuid, verifyHs256,
} from './lib/harness.mjs';

const sqliteOnly = { skip: STORAGE !== 'sqlite' ? 'sqlite only' : false };

let work; // scratch directory of this file
const storages = [];
function storage() {
  const s = new Storage();
  storages.push(s);
  return s;
}

before(() => { work = tmpDir('at-cli-'); });
after(() => {
  rmDir(work);
  for (const s of storages) s.cleanup();
});

// A fresh storage with its tables made by `actionstools setup` (import needs them; it
// answers "table missing: run `actionstools setup`" otherwise).
async function setUpStorage() {
  const s = storage();
  const r = await cli(['setup'], s.env);
  assert.equal(r.code, 0, r.stderr);
  s.prepared = true;
  return s;
}

// Runs a command that must not start a server: it must exit (quickly) on its own.
function cli(args, env = {}, opts = {}) {
  return runCli(args, { env, cwd: work, timeoutMs: 20000, ...opts });
}

describe('--version and --help', () => {
  test('--version prints "actionstools 0.1.0"', async () => {
    const r = await cli(['--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `actionstools ${VERSION}\n`);
  });

  test('--help lists the commands and exits 0', async () => {
    const r = await cli(['--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const c of ['serve', 'setup', 'token', 'export', 'import', '--config', '--version']) {
      assert.ok(r.stdout.includes(c), `--help does not mention ${c}:\n${r.stdout}`);
    }
  });

  test('an unknown command is refused with a message naming it', async () => {
    const r = await cli(['frobnicate']);
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes('frobnicate'), r.stderr);
    assert.equal(r.stdout, '');
  });

  test('an unknown option is refused', async () => {
    const r = await cli(['serve', '--frobnicate'], { ...storage().env, AUTH_JWT_SECRET: randomHex() });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes('--frobnicate'), r.stderr);
  });
});

describe('configuration errors stop start-up with a message naming the variable', () => {
  test('STORAGE=foo exits 2 naming STORAGE (and does not print the secret)', async () => {
    const secret = `s3cr3t-${randomHex()}`;
    const r = await cli(['serve'], { STORAGE: 'foo', AUTH_JWT_SECRET: secret, LISTEN: '127.0.0.1:0' });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /STORAGE/);
    assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret), 'the secret is printed');
  });

  test('no AUTH_JWT_SECRET (and no key file) exits 2 naming AUTH_JWT_SECRET', async () => {
    const r = await cli(['serve'], { ...storage().env, LISTEN: '127.0.0.1:0' });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /AUTH_JWT_SECRET/);
  });

  const bad = [
    ['LISTEN', 'not-an-address'],
    ['LISTEN', '127.0.0.1:99999'],
    ['LOG_LEVEL', 'loud'],
    ['COUNTERS_TTL_SECONDS', 'soon'],
    ['AUTH_JWT_PUBLIC_KEY_FILE', '/nonexistent/key.pem'],
  ];
  for (const [name, value] of bad) {
    test(`${name}=${value} stops start-up naming ${name}`, async () => {
      const r = await cli(['serve'], { ...storage().env, AUTH_JWT_SECRET: randomHex(), LISTEN: '127.0.0.1:0', [name]: value });
      assert.notEqual(r.code, 0);
      assert.ok(r.stderr.includes(name), `stderr does not name ${name}:\n${r.stderr}`);
      assert.ok(!r.stderr.includes('"msg":"listening"'));
    });
  }

  test('a key file that is not a PEM key stops start-up naming AUTH_JWT_PUBLIC_KEY_FILE', async () => {
    const f = path.join(work, 'garbage.pem');
    fs.writeFileSync(f, 'this is not a key\n');
    const r = await cli(['serve'], { ...storage().env, LISTEN: '127.0.0.1:0', AUTH_JWT_PUBLIC_KEY_FILE: f });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes('AUTH_JWT_PUBLIC_KEY_FILE'), r.stderr);
  });
});

describe('token', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { if (srv) await srv.stop(); });

  test('token --user --instance --admin prints a JWT the server accepts as an admin', async () => {
    const u = uuid();
    const inst = `inst-${randomHex(4)}`;
    const r = await cli(['token', '--user', u, '--instance', inst, '--admin'], { AUTH_JWT_SECRET: srv.secret });
    assert.equal(r.code, 0, r.stderr);
    const tok = r.stdout.trim();
    assert.equal(r.stdout, `${tok}\n`);
    const claims = verifyHs256(tok, srv.secret);
    assert.equal(claims.sub, u);
    assert.equal(claims.instance_id, inst);
    assert.ok(Array.isArray(claims.roles) && claims.roles.includes('CRM_ADMIN'), JSON.stringify(claims));
    assert.ok(Number.isInteger(claims.exp) && claims.exp > Date.now() / 1000, JSON.stringify(claims));
    assertStatus(await request(srv, 'GET', '/setup-install', { token: tok }), 200);
    const c = await request(srv, 'POST', `/targets/${uuid()}/notes`, { token: tok, json: { data: 'cli' } });
    assertStatus(c, 201);
    assert.equal(c.body.owner_uuid, u);
    assert.equal(c.body.instance_id, inst);
    assert.ok(!r.stderr.includes(srv.secret));
  });

  test('token --name sets the name; without --admin the user is no admin', async () => {
    const u = uuid();
    const r = await cli(['token', '--user', u, '--name', 'Ada Lovelace', '--instance', 'i1'], { AUTH_JWT_SECRET: srv.secret });
    assert.equal(r.code, 0, r.stderr);
    const tok = r.stdout.trim();
    const claims = verifyHs256(tok, srv.secret);
    assert.equal(claims.name, 'Ada Lovelace');
    assert.ok(!(claims.roles || []).includes('CRM_ADMIN'));
    assertError(await request(srv, 'GET', '/setup-install', { token: tok }), 403);
    const c = await request(srv, 'POST', `/targets/${uuid()}/notes`, { token: tok, json: { data: 1 } });
    assertStatus(c, 201);
    assert.equal(c.body.owner_name, 'Ada Lovelace');
  });

  test('token without a secret is refused naming AUTH_JWT_SECRET', async () => {
    const r = await cli(['token', '--user', uuid(), '--instance', 'i1']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /AUTH_JWT_SECRET/);
    assert.equal(r.stdout, '');
  });
});

describe('--config FILE', () => {
  test('settings are read from a .env-style file (comments, blank lines)', async () => {
    const secret = `file-${randomHex()}`;
    const f = path.join(work, `a-${randomHex(4)}.env`);
    fs.writeFileSync(f, `# development settings\n\nAUTH_JWT_SECRET=${secret}\n  # indented comment\nLOG_LEVEL=info\n`);
    const r = await cli(['--config', f, 'token', '--user', uuid(), '--instance', 'i1']);
    assert.equal(r.code, 0, r.stderr);
    verifyHs256(r.stdout.trim(), secret);
  });

  test('a quoted value is unquoted', async () => {
    const secret = `quoted ${randomHex()}`;
    const f = path.join(work, `q-${randomHex(4)}.env`);
    fs.writeFileSync(f, `AUTH_JWT_SECRET="${secret}"\n`);
    const r = await cli(['--config', f, 'token', '--user', uuid(), '--instance', 'i1']);
    assert.equal(r.code, 0, r.stderr);
    verifyHs256(r.stdout.trim(), secret);
  });

  test('the environment wins over the file', async () => {
    const f = path.join(work, `b-${randomHex(4)}.env`);
    fs.writeFileSync(f, 'AUTH_JWT_SECRET=from-the-file\n');
    const r = await cli(['--config', f, 'token', '--user', uuid(), '--instance', 'i1'], { AUTH_JWT_SECRET: 'from-the-env' });
    assert.equal(r.code, 0, r.stderr);
    verifyHs256(r.stdout.trim(), 'from-the-env');
  });

  test('a missing file is refused naming the file', async () => {
    const f = path.join(work, 'does-not-exist.env');
    const r = await cli(['--config', f, 'token', '--user', uuid(), '--instance', 'i1'], { AUTH_JWT_SECRET: 'x' });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(f), r.stderr);
    assert.equal(r.stdout, '');
  });

  test('a malformed line is refused', async () => {
    const f = path.join(work, `m-${randomHex(4)}.env`);
    fs.writeFileSync(f, 'AUTH_JWT_SECRET=x\nthis line is not a setting\n');
    const r = await cli(['--config', f, 'token', '--user', uuid(), '--instance', 'i1']);
    assert.notEqual(r.code, 0, `accepted a malformed config file; stdout: ${r.stdout}`);
    assert.ok(r.stderr.includes(f) || r.stderr.includes(':2'), r.stderr);
  });

  test('serve reads its settings from the file (secret, BASE_PREFIX)', async () => {
    const secret = `cfg-${randomHex()}`;
    const f = path.join(work, `s-${randomHex(4)}.env`);
    fs.writeFileSync(f, `AUTH_JWT_SECRET=${secret}\nBASE_PREFIX=/cfg\n`);
    const srv = await startServer({ secret: null, preArgs: ['--config', f] });
    try {
      assertStatus(await request(srv, 'GET', '/cfg/health'), 200);
      assertError(await request(srv, 'GET', '/health'), 404);
      const tok = mintToken(newUser(), { secret });
      assertStatus(await request(srv, 'GET', `/cfg/targets/${uuid()}/notes`, { token: tok }), 200);
    } finally {
      await srv.stop();
    }
  });

  test('serve is the default command', async () => {
    const srv = await startServer({ command: null });
    try {
      assertStatus(await request(srv, 'GET', '/health'), 200);
    } finally {
      await srv.stop();
    }
  });
});

describe('setup', () => {
  test('creates the missing tables, then finds them existing', async () => {
    const s = storage();
    const r1 = await cli(['setup'], s.env);
    assert.equal(r1.code, 0, r1.stderr);
    const j1 = JSON.parse(r1.stdout);
    assert.deepEqual(Object.keys(j1).sort(), ['created', 'existing']);
    assert.deepEqual([...j1.created].sort(), [...s.tableNames].sort());
    assert.deepEqual(j1.existing, []);
    const r2 = await cli(['setup'], s.env);
    assert.equal(r2.code, 0, r2.stderr);
    const j2 = JSON.parse(r2.stdout);
    assert.deepEqual(j2.created, []);
    assert.deepEqual([...j2.existing].sort(), [...s.tableNames].sort());
  });

  test('the staging table names', sqliteOnly, async () => {
    const s = storage();
    const r = await cli(['setup'], s.env);
    assert.deepEqual([...JSON.parse(r.stdout).created].sort(), [...STAGING_TABLE_NAMES].sort());
    assert.ok(JSON.parse(r.stdout).created.includes('em_actions_notes_staging'));
  });

  test('ENV_NAME=production uses the production table names', sqliteOnly, async () => {
    const s = storage();
    const r = await cli(['setup'], { ...s.env, ENV_NAME: 'production' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual([...JSON.parse(r.stdout).created].sort(), [...PRODUCTION_TABLE_NAMES].sort());
  });

  test('TABLE_NOTES overrides one table name', sqliteOnly, async () => {
    const s = storage();
    const r = await cli(['setup'], { ...s.env, TABLE_NOTES: 'my_notes' });
    assert.equal(r.code, 0, r.stderr);
    const created = JSON.parse(r.stdout).created;
    assert.ok(created.includes('my_notes'), r.stdout);
    assert.ok(!created.includes('em_actions_notes_staging'), r.stdout);
    assert.equal(created.length, 10);
  });
});

describe('export and import', () => {
  const t = uuid();
  const t2 = uuid();
  let owner;
  let src;          // storage exported from
  let exportFile;
  let lines;        // parsed export lines
  const made = {};  // name -> final note (as the API answered it)
  const madeText = {}; // name -> raw GET text

  before(async () => {
    src = storage();
    owner = newUser();
    const a = await startServer({ storage: src });
    try {
      const tok = a.token(owner);
      const mk = async (name, target, json) => {
        const r = await request(a, 'POST', `/targets/${target}/notes`, { token: tok, json });
        assertStatus(r, 201);
        made[name] = r.body;
        return r.body;
      };
      await mk('plain', t, { data: { text: 'plain' } });
      const big = await request(a, 'POST', `/targets/${t}/notes`, {
        token: tok,
        body: '{"data":{"big":9007199254740993,"f":1.5,"u":"日本😀","l":[null,true,{"e":""}]},"is_pinned":true}',
        headers: { 'Content-Type': 'application/json' },
      });
      assertStatus(big, 201);
      made.big = big.body;
      await mk('changed', t, { data: 'v1' });
      const p = await request(a, 'PATCH', `/targets/${t}/notes/${made.changed.uuid}`, { token: tok, json: { data: 'v2' } });
      assertStatus(p, 200);
      await mk('deleted', t, { data: 'gone' });
      assertStatus(await request(a, 'DELETE', `/targets/${t}/notes/${made.deleted.uuid}`, { token: tok }), 204);
      await mk('other', t2, { data: 'other target' });
      for (const name of ['plain', 'big', 'changed', 'other']) {
        const target = made[name].target_uuid;
        const g = await request(a, 'GET', `/targets/${target}/notes/${made[name].uuid}`, { token: tok });
        assertStatus(g, 200);
        made[name] = g.body;
        madeText[name] = g.text;
      }
      made.list = (await request(a, 'GET', `/targets/${t}/notes`, { token: tok })).body;
      made.userList = (await request(a, 'GET', `/users/${owner.sub}/notes`, { token: tok })).body;
    } finally {
      await a.stop();
    }
    exportFile = path.join(work, 'notes.jsonl');
    const r = await cli(['export', '--table', 'notes', '--out', exportFile], src.env);
    assert.equal(r.code, 0, r.stderr);
    const text = fs.readFileSync(exportFile, 'utf8');
    lines = text.split('\n').filter((l) => l.length);
  });

  test('export writes one {"Item": {...}} DynamoDB JSON line per note, deleted ones included', () => {
    assert.equal(lines.length, 5);
    const items = lines.map((l) => JSON.parse(l));
    for (const it of items) {
      assert.deepEqual(Object.keys(it), ['Item']);
      for (const [k, v] of Object.entries(it.Item)) {
        assert.equal(Object.keys(v).length, 1, `${k}: ${JSON.stringify(v)}`);
        assert.ok(['S', 'N', 'BOOL', 'NULL', 'M', 'L', 'B', 'SS', 'NS', 'BS'].includes(Object.keys(v)[0]), `${k}: ${JSON.stringify(v)}`);
      }
    }
    const byUuid = Object.fromEntries(items.map((it) => [it.Item.uuid.S, it.Item]));
    const big = byUuid[made.big.uuid];
    assert.ok(big, 'the pinned note is not exported');
    assert.deepEqual(big.target_uuid, { S: t });
    assert.deepEqual(big.instance_id, { S: owner.instance_id });
    assert.deepEqual(big.is_pinned, { N: '1' });
    assert.deepEqual(big.version, { N: '1' });
    assert.equal(big.data.M.big.N, '9007199254740993');
    assert.deepEqual(big.data.M.u, { S: '日本😀' });
    assert.deepEqual(byUuid[made.plain.uuid].is_pinned, { N: '0' });
    assert.deepEqual(byUuid[made.changed.uuid].version, { N: '2' });
    assert.ok(byUuid[made.deleted.uuid].deleted_at && byUuid[made.deleted.uuid].deleted_at.S, 'deleted_at missing from the export');
    assert.ok(!('deleted_at' in byUuid[made.plain.uuid]));
  });

  test('import into a fresh database reproduces the notes', async () => {
    const dst = await setUpStorage();
    const r = await cli(['import', '--table', 'notes', '--in', exportFile], dst.env);
    assert.equal(r.code, 0, r.stderr);
    const b = await startServer({ storage: dst });
    try {
      const tok = b.token(owner);
      for (const name of ['plain', 'big', 'changed', 'other']) {
        const g = await request(b, 'GET', `/targets/${made[name].target_uuid}/notes/${made[name].uuid}`, { token: tok });
        assertStatus(g, 200);
        assert.deepEqual(canonExact(parseExact(g.text)), canonExact(parseExact(madeText[name])), name);
        assert.equal(g.headers.etag, `"${made[name].version}"`);
      }
      assertError(await request(b, 'GET', `/targets/${t}/notes/${made.deleted.uuid}`, { token: tok }), 404);
      assert.deepEqual((await request(b, 'GET', `/targets/${t}/notes`, { token: tok })).body, made.list);
      assert.deepEqual((await request(b, 'GET', `/users/${owner.sub}/notes`, { token: tok })).body, made.userList);
      assertStatus(await request(b, 'GET', `/notes/${made.other.uuid}`, { token: tok }), 200);
      // the deleted note came over deleted, and can be restored
      const rs = await request(b, 'POST', `/targets/${t}/notes/${made.deleted.uuid}/restore`, { token: tok });
      assertStatus(rs, 200);
      assert.equal(rs.body.data, 'gone');
      // and the imported notes keep working
      const p = await request(b, 'PATCH', `/targets/${t}/notes/${made.changed.uuid}`, { token: tok, json: { data: 'v3' }, headers: { 'If-Match': '"2"' } });
      assertStatus(p, 200);
      assert.equal(p.body.version, 3);
    } finally {
      await b.stop();
    }
  });

  test('import into a database without tables is refused and says to run setup', async () => {
    const dst = storage();
    const r = await cli(['import', '--table', 'notes', '--in', exportFile], dst.env);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /setup/);
  });

  describe('legacy items (as the original service wrote them)', () => {
    // No version, timestamps without .ffffff, one note without is_pinned.
    const lt = uuid();
    const who = newUser();
    const l1 = uuid();
    const l2 = uuid();
    const l3 = uuid(); // on its own target, of another owner: never changed by the tests
    const lt3 = uuid();
    let b;
    let tok;
    before(async () => {
      const dst = await setUpStorage();
      const item = (id, extra) => JSON.stringify({
        Item: {
          target_uuid: { S: lt },
          uuid: { S: id },
          instance_id: { S: who.instance_id },
          owner_uuid: { S: who.sub },
          owner_name: { S: 'Old Timer' },
          ...extra,
        },
      });
      const f = path.join(work, 'legacy.jsonl');
      fs.writeFileSync(f, `${[
        item(l1, {
          data: { M: { text: { S: 'legacy' }, n: { N: '5' }, l: { L: [{ NULL: true }, { BOOL: true }] } } },
          is_pinned: { N: '0' },
          created_at: { S: '2021-03-04 05:06:07' },
          updated_at: { S: '2021-03-04 05:06:07' },
        }),
        item(l2, {
          data: { S: 'no pin attribute' },
          created_at: { S: '2021-03-05 01:02:03.250000' },
          updated_at: { S: '2021-03-05 01:02:03.250000' },
        }),
        item(l3, {
          target_uuid: { S: lt3 },
          owner_uuid: { S: uuid() },
          data: { S: 'no pin attribute either' },
          created_at: { S: '2021-03-06 01:02:03' },
          updated_at: { S: '2021-03-06 01:02:03' },
        }),
      ].join('\n')}\n`);
      const r = await cli(['import', '--table', 'notes', '--in', f], dst.env);
      assert.equal(r.code, 0, r.stderr);
      b = await startServer({ storage: dst });
      tok = b.token(who);
    });
    after(async () => { if (b) await b.stop(); });

    test('they are read, listed in order and changed', async () => {
      const g1 = await request(b, 'GET', `/targets/${lt}/notes/${l1}`, { token: tok });
      assertStatus(g1, 200);
      assert.deepEqual(g1.body.data, { text: 'legacy', n: 5, l: [null, true] });
      assert.ok(['2021-03-04 05:06:07', '2021-03-04 05:06:07.000000'].includes(g1.body.created_at), g1.body.created_at);
      assert.equal(g1.body.is_pinned, false);
      const g2 = await request(b, 'GET', `/targets/${lt}/notes/${l2}`, { token: tok });
      assertStatus(g2, 200);
      assert.equal(g2.body.data, 'no pin attribute');
      const fresh = await request(b, 'POST', `/targets/${lt}/notes`, { token: tok, json: { data: 'new' } });
      assertStatus(fresh, 201);
      const list = (await request(b, 'GET', `/targets/${lt}/notes`, { token: tok })).body;
      assert.deepEqual(list.items.map((x) => x.uuid), [fresh.body.uuid, l2, l1]);
      const ul = (await request(b, 'GET', `/users/${who.sub}/notes`, { token: tok })).body;
      assert.deepEqual(ul.items.map((x) => x.uuid), [fresh.body.uuid, l2, l1]);
      assertStatus(await request(b, 'GET', `/notes/${l1}`, { token: tok }), 200);
      const p = await request(b, 'PATCH', `/targets/${lt}/notes/${l2}`, { token: tok, json: { is_pinned: true } });
      assertStatus(p, 200);
      assert.equal(p.body.is_pinned, true);
      assert.match(p.body.updated_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$/);
      const list2 = (await request(b, 'GET', `/targets/${lt}/notes`, { token: tok })).body;
      assert.deepEqual(list2.items.map((x) => x.uuid), [l2, fresh.body.uuid, l1]);
    });

    test('a note stored without is_pinned answers is_pinned: false', async () => {
      // SPEC §5: is_pinned (bool, default false); §3: shown as a JSON boolean.
      const g = await request(b, 'GET', `/targets/${lt3}/notes/${l3}`, { token: tok });
      assertStatus(g, 200);
      assert.equal(g.body.is_pinned, false, `is_pinned: ${g.text}`);
      const list = (await request(b, 'GET', `/targets/${lt3}/notes`, { token: tok })).body;
      assert.deepEqual(list.items.map((x) => [x.uuid, x.is_pinned]), [[l3, false]]);
    });

    test('they answer a version and ETag, and If-Match works on them', async () => {
      // SPEC §5: every item answers version; single items send it as ETag.
      const g = await request(b, 'GET', `/targets/${lt}/notes/${l1}`, { token: tok });
      assertStatus(g, 200);
      assert.ok(Number.isInteger(g.body.version), `no version: ${g.text}`);
      assert.equal(g.headers.etag, `"${g.body.version}"`);
      assertError(await request(b, 'PATCH', `/targets/${lt}/notes/${l1}`, {
        token: tok, json: { data: 'x' }, headers: { 'If-Match': `"${g.body.version + 5}"` },
      }), 412);
      const p = await request(b, 'PATCH', `/targets/${lt}/notes/${l1}`, {
        token: tok, json: { data: 'y' }, headers: { 'If-Match': g.headers.etag },
      });
      assertStatus(p, 200);
      assert.equal(p.body.version, g.body.version + 1);
    });
  });

  test('export of an unknown table is refused naming it', async () => {
    const r = await cli(['export', '--table', 'nonsense', '--out', path.join(work, 'x.jsonl')], src.env);
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes('nonsense'), r.stderr);
  });

  const badFiles = [
    ['a line that is not JSON', (good) => `${good}\ngarbage{\n`],
    ['a line without Item', (good) => `${good}\n{"NotItem":{}}\n`],
    ['an attribute with an unknown type', (good) => `${good}\n{"Item":{"target_uuid":{"S":"x"},"uuid":{"Q":"y"}}}\n`],
    ['an item without its key', (good) => `${good}\n{"Item":{"data":{"S":"no key"}}}\n`],
    ['a number that is not a number', (good) => `${good}\n{"Item":{"target_uuid":{"S":"x"},"uuid":{"S":"${uuid()}"},"version":{"N":"one"}}}\n`],
  ];
  for (const [what, mk] of badFiles) {
    test(`import with ${what} fails and imports nothing`, async () => {
      const dst = await setUpStorage();
      const good = lines.find((l) => JSON.parse(l).Item.uuid.S === made.plain.uuid);
      const f = path.join(work, `bad-${randomHex(4)}.jsonl`);
      fs.writeFileSync(f, mk(good));
      const r = await cli(['import', '--table', 'notes', '--in', f], dst.env);
      assert.notEqual(r.code, 0, `import accepted ${what}: ${r.stdout}${r.stderr}`);
      assert.ok(r.stderr.length > 0);
      // nothing imported: an export of the destination is empty
      const out = path.join(work, `check-${randomHex(4)}.jsonl`);
      const e = await cli(['export', '--table', 'notes', '--out', out], dst.env);
      assert.equal(e.code, 0, e.stderr);
      assert.equal(fs.readFileSync(out, 'utf8'), '', 'a line was imported from a failed import');
    });
  }

  test('after a failed import the API does not see the good lines either', async () => {
    const dst = await setUpStorage();
    const good = lines.find((l) => JSON.parse(l).Item.uuid.S === made.plain.uuid);
    const f = path.join(work, 'bad-api.jsonl');
    fs.writeFileSync(f, `${good}\n{"Item":\n`);
    const r = await cli(['import', '--table', 'notes', '--in', f], dst.env);
    assert.notEqual(r.code, 0);
    const b = await startServer({ storage: dst });
    try {
      const tok = b.token(owner);
      assertError(await request(b, 'GET', `/targets/${t}/notes/${made.plain.uuid}`, { token: tok }), 404);
    } finally {
      await b.stop();
    }
  });
});
