// The Node.js provisioning of `make deps` / `make test` (scripts/node.sh): when the
// `node` on PATH is older than 20 or missing, Node.js 20 comes from the npm registry
// into TOOLS_DIR/node and every recipe finds it first. Also: npm ci runs only when
// node_modules differs from package-lock.json by content (scripts/lock-current.mjs).
//
// The first run downloads node-linux-<arch>@20 (about 42 MB); npm keeps it in the
// project's ignored .tools/cache, so later runs need no network and take seconds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import {
  REPO, TOOLS_DIR, cleanEnv, describeRun, pathWithout, rmDir, run, tmpDir,
} from './lib/setup.mjs';

const NEED_NODE = /^v20\.\d+\.\d+$/;

// A fresh tools folder whose download cache is the project's, so only the first run of
// this test on a machine downloads anything.
function toolsDir(dir) {
  const tools = path.join(dir, 'tools');
  fs.mkdirSync(tools, { recursive: true });
  fs.mkdirSync(path.join(TOOLS_DIR, 'cache'), { recursive: true });
  fs.symlinkSync(path.join(TOOLS_DIR, 'cache'), path.join(tools, 'cache'));
  return tools;
}

// The node the Makefile's recipes run with this environment, and its version.
function recipeNode(env) {
  const r = run('make', ['-s', '--no-print-directory', '--eval',
    'which-node: ; @command -v node && node --version', 'which-node'], { env });
  assert.equal(r.status, 0, describeRun(r));
  return r.stdout.trim().split('\n');
}

function script(file, text) {
  fs.writeFileSync(file, text, { mode: 0o755 });
}

describe('Node.js provisioning', () => {
  let dir;
  before(() => { dir = tmpDir('at-node-'); });
  after(() => rmDir(dir));

  test('a node that reports v18: make deps puts Node.js 20 in TOOLS_DIR and recipes use it', () => {
    const fake = path.join(dir, 'fake18');
    fs.mkdirSync(fake);
    // Reports v18 as bookworm's does; runs anything else (npm) with a real node.
    script(path.join(fake, 'node'), `#!/bin/sh
case "\${1:-}" in --version | -v) echo v18.19.0; exit 0 ;; esac
exec "${process.execPath}" "$@"
`);
    const tools = toolsDir(dir);
    const env = cleanEnv({ PATH: `${fake}:${process.env.PATH}`, TOOLS_DIR: tools });
    assert.deepEqual(run('node', ['--version'], { env }).stdout.trim(), 'v18.19.0');

    const r = run('make', ['--no-print-directory', 'deps'], { env });
    assert.equal(r.status, 0, describeRun(r));
    const said = r.stdout.split('\n').filter((l) => /Node\.js/.test(l));
    assert.equal(said.length, 1, `one line about Node.js expected:\n${r.stdout}`);
    assert.match(said[0], /^deps: .*v18\.19\.0.*Node\.js v20\.\d+\.\d+ \(npm package node-linux-\w+@20\)/);

    const installed = run(path.join(tools, 'node', 'bin', 'node'), ['--version']).stdout.trim();
    assert.match(installed, NEED_NODE);
    assert.deepEqual(recipeNode(env), [path.join(tools, 'node', 'bin', 'node'), installed]);
    assert.ok(!fs.existsSync(path.join(tools, 'node', 'include')), 'headers are left out');

    // Once there, it is used as it is: nothing fetched, nothing said.
    const again = run('make', ['--no-print-directory', 'deps'], { env });
    assert.equal(again.status, 0, describeRun(again));
    assert.doesNotMatch(again.stdout + again.stderr, /Node\.js/);
  });

  test('no node at all, npm there: Node.js 20 from the cache, and PATH names none', () => {
    const bin = path.join(dir, 'nonode');
    fs.mkdirSync(bin);
    pathWithout(['node', 'nodejs', 'npm', 'npx', 'corepack'], bin);
    // npm alone, run by a node that is not on PATH (as if node had been removed).
    const npmCli = fs.realpathSync(run('sh', ['-c', 'command -v npm']).stdout.trim());
    script(path.join(dir, 'npm'), `#!/bin/sh\nexec "${process.execPath}" "${npmCli}" "$@"\n`);
    fs.renameSync(path.join(dir, 'npm'), path.join(bin, 'npm'));
    const tools = toolsDir(path.join(dir, 'second'));
    const env = cleanEnv({ PATH: bin, TOOLS_DIR: tools });

    const r = run('sh', ['scripts/node.sh'], { env });
    assert.equal(r.status, 0, describeRun(r));
    assert.match(r.stdout, /^deps: the tests need Node\.js >= 20 and PATH has none: put Node\.js v20\./);
    assert.match(recipeNode(env)[1], NEED_NODE);
  });
});

describe('npm ci only when node_modules differs from package-lock.json', () => {
  let dir;
  before(() => {
    dir = tmpDir('at-lock-');
    fs.writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify({
      lockfileVersion: 3,
      packages: {
        '': { name: 'x' },
        'node_modules/a': { version: '1.0.0' },
        'node_modules/a/node_modules/b': { version: '2.0.0' },
        'node_modules/fsevents': { version: '2.3.3', optional: true, os: ['darwin'] },
      },
    }));
    for (const [where, version] of [['node_modules/a', '1.0.0'], ['node_modules/a/node_modules/b', '2.0.0']]) {
      fs.mkdirSync(path.join(dir, where), { recursive: true });
      fs.writeFileSync(path.join(dir, where, 'package.json'), JSON.stringify({ version }));
    }
  });
  after(() => rmDir(dir));

  const check = () => run('node', [path.join(REPO, 'scripts', 'lock-current.mjs'), dir]);

  test('a lockfile newer than node_modules but with the same packages needs nothing', () => {
    const later = new Date(Date.now() + 3600_000);
    fs.utimesSync(path.join(dir, 'package-lock.json'), later, later);
    const r = check();
    assert.equal(r.status, 0, describeRun(r));
  });

  test('another version or a missing package needs npm ci, and says which', () => {
    const b = path.join(dir, 'node_modules/a/node_modules/b/package.json');
    fs.writeFileSync(b, JSON.stringify({ version: '2.0.1' }));
    let r = check();
    assert.equal(r.status, 1);
    assert.match(r.stdout, /node_modules\/a\/node_modules\/b is 2\.0\.1, package-lock\.json wants 2\.0\.0/);
    fs.rmSync(path.dirname(b), { recursive: true });
    r = check();
    assert.equal(r.status, 1);
    assert.match(r.stdout, /node_modules\/a\/node_modules\/b is not installed/);
  });
});
