// GET /docs (SPEC §5): the Swagger UI page and its files, served by the binary from
// share/swagger-ui beside it (make copies them from node_modules/swagger-ui-dist), or
// from ../share/actionstools/swagger-ui when installed; a note linking /openapi.json
// when they are absent; no file outside that folder. The page is loaded in headless
// Chromium (Debian's chromium), which must render every documented operation.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  BIN, REPO, assertError, assertStatus, request, rmDir, startServer, tmpDir,
} from './lib/harness.mjs';

const UI_DIR = path.join(path.dirname(BIN), 'share', 'swagger-ui');
const DIST = path.join(REPO, 'node_modules', 'swagger-ui-dist');
const CHROMIUM = ['chromium', 'chromium-browser']
  .find((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);

let srv;
let pre;
let dirs = [];

before(async () => {
  assert.ok(fs.existsSync(path.join(UI_DIR, 'swagger-ui-bundle.js')),
    `the Swagger UI files are not beside the binary under test (${UI_DIR}): run make after npm ci`);
  [srv, pre] = await Promise.all([startServer(), startServer({ prefix: '/actionstools' })]);
});

after(async () => {
  const results = await Promise.allSettled([srv, pre].filter(Boolean).map((s) => s.stop()));
  for (const d of dirs) rmDir(d);
  const bad = results.filter((x) => x.status === 'rejected');
  if (bad.length) throw bad[0].reason;
});

// Starts a copy of the binary placed at rel inside a fresh folder, with the Swagger UI
// files copied to uiRel there (or none).
async function startCopy(rel, uiRel) {
  const root = tmpDir('at-docs-');
  dirs.push(root);
  const bin = path.join(root, rel);
  fs.mkdirSync(path.dirname(bin), { recursive: true });
  fs.copyFileSync(BIN, bin);
  fs.chmodSync(bin, 0o755);
  if (uiRel) fs.cpSync(UI_DIR, path.join(root, uiRel), { recursive: true });
  return startServer({ binary: bin });
}

describe('the page and its files', () => {
  test('GET /docs is public HTML that loads Swagger UI and the document', async () => {
    const r = await request(srv, 'GET', '/docs');
    assertStatus(r, 200);
    assert.match(r.headers['content-type'], /^text\/html; charset=utf-8/);
    assert.ok(r.headers['x-request-id']);
    assert.match(r.text, /<script src="\/docs\/swagger-ui-bundle\.js"><\/script>/);
    assert.match(r.text, /href="\/docs\/swagger-ui\.css"/);
    assert.match(r.text, /url: "\/openapi\.json"/);
    assertStatus(await request(srv, 'GET', '/docs/'), 200); // one trailing slash is forgiven
  });

  test('under BASE_PREFIX every URL of the page carries it', async () => {
    const r = await request(pre, 'GET', '/actionstools/docs');
    assertStatus(r, 200);
    assert.match(r.text, /src="\/actionstools\/docs\/swagger-ui-bundle\.js"/);
    assert.match(r.text, /url: "\/actionstools\/openapi\.json"/);
    assertStatus(await request(pre, 'GET', '/actionstools/docs/swagger-ui.css'), 200);
    assertStatus(await request(pre, 'GET', '/docs'), 404);
  });

  test('the files are the pinned swagger-ui-dist ones, with their types and a cache header', async () => {
    for (const [name, type] of [
      ['swagger-ui-bundle.js', /^text\/javascript/],
      ['swagger-ui.css', /^text\/css/],
      ['favicon-32x32.png', /^image\/png$/],
    ]) {
      const r = await request(srv, 'GET', `/docs/${name}`);
      assertStatus(r, 200);
      assert.match(r.headers['content-type'], type, name);
      assert.match(r.headers['cache-control'], /max-age=\d+/);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      if (fs.existsSync(DIST) && !name.endsWith('.png')) {
        assert.equal(r.text, fs.readFileSync(path.join(DIST, name), 'utf8'), `${name} differs from node_modules`);
      }
      assert.equal(Number(r.headers['content-length']), fs.statSync(path.join(UI_DIR, name)).size);
    }
    const head = await request(srv, 'HEAD', '/docs/swagger-ui.css');
    assertStatus(head, 200);
    assert.equal(head.text, '');
  });

  test('no file outside the Swagger UI folder, and none but its plain files', async () => {
    const secret = fs.readFileSync(path.join(REPO, 'src', 'main.c'), 'utf8').slice(0, 60);
    for (const p of [
      '/docs/..%2f..%2f..%2fsrc%2fmain.c',
      '/docs/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd',
      '/docs/%2e%2e',
      '/docs/..',
      '/docs/../../../src/main.c',
      '/docs/.%2e/.%2e/.%2e/src/main.c',
      '/docs/%2fetc%2fpasswd',
      '/docs/LICENSE', // installed, but of no type we serve
      '/docs/swagger-ui.css.map',
      '/docs/no-such-file.js',
      '/docs/swagger-ui.css/',  // forgiven slash: still the file
    ]) {
      const r = await request(srv, 'GET', p);
      if (p.endsWith('.css/')) { assertStatus(r, 200); continue; }
      assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`);
      assert.ok(!r.text.includes('root:x:0:0') && !r.text.includes(secret), `${p} served a file from outside`);
      if (r.status === 404) assertError(r, 404);
    }
  });

  // SPEC §4: a decoded segment with NUL names nothing (the router refuses it for every
  // route), so "%00" cannot cut a file name short.
  test('a NUL in the file name names no file', async () => {
    assertError(await request(srv, 'GET', '/docs/swagger-ui.css%00.js'), 404);
  });

  test('without the files beside it, /docs says so and links the document (never a 500)', async () => {
    const lone = await startCopy('actionstools', null);
    try {
      const r = await request(lone, 'GET', '/docs');
      assertStatus(r, 200);
      assert.match(r.headers['content-type'], /^text\/html/);
      assert.match(r.text, /<a href="\/openapi\.json">/);
      assert.match(r.text, /not installed/);
      assert.doesNotMatch(r.text, /SwaggerUIBundle/);
      assertError(await request(lone, 'GET', '/docs/swagger-ui.css'), 404, { message: /not installed/ });
      assertStatus(await request(lone, 'GET', '/openapi.json'), 200);
      assert.ok(lone.logs().some((l) => l.level === 'warn' && /Swagger UI files not found/.test(l.msg)));
    } finally {
      await lone.stop();
    }
  });

  test('installed as PREFIX/bin/actionstools, it finds PREFIX/share/actionstools/swagger-ui', async () => {
    const inst = await startCopy('bin/actionstools', 'share/actionstools/swagger-ui');
    try {
      const r = await request(inst, 'GET', '/docs/swagger-ui.css');
      assertStatus(r, 200);
      assert.match(r.headers['content-type'], /^text\/css/);
      assert.match((await request(inst, 'GET', '/docs')).text, /SwaggerUIBundle/);
    } finally {
      await inst.stop();
    }
  });
});

// Runs headless Chromium on url; resolves the DOM it dumps.
function dumpDom(url) {
  const profile = tmpDir('at-chromium-');
  dirs.push(profile);
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--user-data-dir=${profile}`, '--virtual-time-budget=10000', '--dump-dom', url];
  return new Promise((resolve, reject) => {
    const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 90000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`chromium exited ${code ?? signal}\n${err.slice(-2000)}`));
      else resolve(out);
    });
  });
}

describe('in a browser (headless Chromium)', () => {
  if (!CHROMIUM) {
    const why = 'SKIPPED: chromium is not installed (Debian package "chromium"): /docs was NOT loaded in a browser';
    console.error(`\n!!! ${why} !!!\n`);
    test('renders every documented operation', { skip: why }, () => {});
    return;
  }

  // Each operation is an opblock with id operations-<tag>-<operationId> (deepLinking)
  // and a data-path of its path.
  async function expectRendered(s, base) {
    const doc = (await request(s, 'GET', `${base}/openapi.json`)).body;
    const dom = await dumpDom(`${s.url}${base}/docs`);
    assert.match(dom, /class="swagger-ui/, 'Swagger UI did not start');
    assert.doesNotMatch(dom, /Failed to load API definition/);
    let n = 0;
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const id = `operations-${op.tags[0]}-${op.operationId}`;
        assert.ok(dom.includes(`id="${id}"`), `${method.toUpperCase()} ${p} (${id}) is not rendered`);
        n += 1;
      }
      assert.ok(dom.includes(`data-path="${p.replace(/&/g, '&amp;')}"`), `${p} is not rendered`);
    }
    const blocks = dom.match(/class="opblock opblock-[a-z]+/g) || [];
    assert.equal(blocks.length, n, 'one opblock per documented operation');
    assert.ok(dom.includes('data-path="/targets/{target_uuid}/notes"'));
    return dom;
  }

  test('renders every documented operation', { timeout: 120000 }, async () => {
    const dom = await expectRendered(srv, '');
    assert.match(dom, /actionstools/);
  });

  test('renders under BASE_PREFIX too', { timeout: 120000 }, async () => {
    await expectRendered(pre, '/actionstools');
  });
});
