// `make run` on a machine without Node.js: with node, npm and npx hidden from PATH it
// still installs what serving needs (nothing, here: all is there), builds and serves.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import {
  cleanEnv, freePort, pathWithout, rmDir, run, start, tmpDir, waitFor200,
} from './lib/setup.mjs';

const NODE_PROGRAMS = ['node', 'nodejs', 'npm', 'npx', 'corepack'];
let dir;
let noNodePath;

before(() => {
  dir = tmpDir('at-run-');
  noNodePath = path.join(dir, 'bin');
  fs.mkdirSync(noNodePath);
  pathWithout(NODE_PROGRAMS, noNodePath);
});
after(() => rmDir(dir));

test('the PATH of this test really has no node, npm or npx', () => {
  for (const p of NODE_PROGRAMS) {
    const r = run('sh', ['-c', `command -v ${p}`], { env: { PATH: noNodePath } });
    assert.notEqual(r.status, 0, `${p} is still on the PATH: ${r.stdout}`);
  }
  const r = run('sh', ['-c', 'command -v make && command -v cc'], { env: { PATH: noNodePath } });
  assert.equal(r.status, 0, 'make and cc should be there');
});

test('make run serves /health and a note with the printed token, without Node.js', async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = cleanEnv({
    PATH: noNodePath,
    // An empty tools folder: a Node.js provided there earlier must not be found either.
    TOOLS_DIR: path.join(dir, 'tools'),
    VAR_DIR: path.join(dir, 'var'),
    LISTEN: `127.0.0.1:${port}`,
  });
  for (const k of Object.keys(env)) if (/^(NODE_|npm_)/i.test(k)) delete env[k];
  const p = start('make', ['--no-print-directory', 'run'], { env });
  try {
    const health = await waitFor200(`${url}/health`, p, 180_000);
    assert.equal(health.status, 'ok');
    assert.equal(health.storage, 'sqlite');

    const token = /TOKEN=(\S+)/.exec(p.out)?.[1];
    assert.ok(token, `make run printed no TOKEN= line:\n${p.out}`);
    assert.match(p.out, new RegExp(`curl -s -X POST ${url}/targets/account-42/notes`));
    const res = await fetch(`${url}/targets/account-42/notes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { text: 'Call back on Monday' } }),
    });
    assert.equal(res.status, 201, await res.text());
    assert.ok(fs.existsSync(path.join(dir, 'var', 'actionstools.db')), 'the database is in VAR_DIR');
    assert.doesNotMatch(p.out, /npm|Node\.js/, 'make run spoke of Node.js or npm');
  } finally {
    await p.stop();
  }
  // Every process of the group has closed its output: the server is gone, and it went
  // through its clean shutdown.
  assert.match(p.out, /shutting down \(signal 15\)/);
});
