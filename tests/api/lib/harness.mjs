// Black-box test harness for actionstools: starts the real binary, speaks HTTP to it,
// mints tokens, runs CLI commands. Node 20 built-ins only.
//
// Environment:
//   AT_BIN                path of the binary under test (default: build/asan/actionstools)
//   AT_STORAGE            sqlite (default) | dynamodb
//   AT_DYNAMODB_ENDPOINT  http://127.0.0.1:P  (required with AT_STORAGE=dynamodb)

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
export const BIN = process.env.AT_BIN || path.join(REPO, 'build', 'asan', 'actionstools');
export const STORAGE = process.env.AT_STORAGE || 'sqlite';
export const DYNAMODB_ENDPOINT = process.env.AT_DYNAMODB_ENDPOINT || '';
export const VERSION = '0.1.0';

if (STORAGE !== 'sqlite' && STORAGE !== 'dynamodb') {
  throw new Error(`AT_STORAGE=${STORAGE}: expected sqlite or dynamodb`);
}
if (STORAGE === 'dynamodb' && !DYNAMODB_ENDPOINT) {
  throw new Error('AT_STORAGE=dynamodb needs AT_DYNAMODB_ENDPOINT=http://127.0.0.1:PORT');
}
if (!fs.existsSync(BIN)) {
  throw new Error(`binary under test not found: ${BIN} (set AT_BIN, or build it: make asan)`);
}

// Logical table names and their TABLE_<NAME> variables.
export const TABLES = ['notes', 'comments', 'files', 'settings', 'counters', 'tasks',
  'tasks_counters', 'notifications', 'activity', 'reports_cache'];

// Physical names when nothing overrides them (ENV_NAME != production).
export const STAGING_TABLE_NAMES = TABLES.map((t) => `em_actions_${t}_staging`);
export const PRODUCTION_TABLE_NAMES = TABLES.map((t) =>
  (t === 'notes' ? 'em_actions_notes2' : `em_actions_${t}`));

const SETTLE_MS = 150;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const uuid = () => crypto.randomUUID();
export const randomHex = (n = 16) => crypto.randomBytes(n).toString('hex');

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$/;

// ---------------------------------------------------------------------------------------
// Processes

const live = new Set(); // child processes to kill if the test process dies
process.on('exit', () => {
  for (const p of live) {
    try { p.kill('SIGKILL'); } catch { /* gone */ }
  }
});

// Environment every child gets: nothing of the caller's environment leaks in but the
// path and the sanitizer options.
export function baseEnv() {
  const env = { PATH: process.env.PATH || '/usr/bin:/bin', HOME: process.env.HOME || os.tmpdir() };
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS', 'LANG', 'LC_ALL', 'TZ']) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  if (!env.UBSAN_OPTIONS) env.UBSAN_OPTIONS = 'print_stacktrace=1';
  return env;
}

export function tmpDir(prefix = 'at-api-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function rmDir(dir) {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

// Runs `actionstools ARGS`; resolves {code, signal, stdout, stderr}.
export function runCli(args, { env = {}, cwd, timeoutMs = 30000, input } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, args, { env: { ...baseEnv(), ...env }, cwd: cwd || os.tmpdir(), stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`actionstools ${args.join(' ')} did not finish in ${timeoutMs} ms\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); live.delete(child); reject(e); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

// ---------------------------------------------------------------------------------------
// Storage: where a server keeps its data. One storage can outlive several servers
// (restart tests) and is used by the CLI commands (setup, export, import).

export class Storage {
  // kind: 'sqlite' | 'dynamodb' (default: AT_STORAGE); endpoint: the DynamoDB-compatible
  // server of a dynamodb storage (default: AT_DYNAMODB_ENDPOINT). A test that needs both
  // backends at once (migration) names the kind.
  constructor({ kind = STORAGE, endpoint = DYNAMODB_ENDPOINT } = {}) {
    if (kind !== 'sqlite' && kind !== 'dynamodb') throw new Error(`Storage kind ${kind}: expected sqlite or dynamodb`);
    if (kind === 'dynamodb' && !endpoint) throw new Error('a dynamodb Storage needs an endpoint (AT_DYNAMODB_ENDPOINT)');
    this.dir = tmpDir();
    this.kind = kind;
    if (kind === 'sqlite') {
      this.dbPath = path.join(this.dir, 't.db');
      this.env = { STORAGE: 'sqlite', SQLITE_PATH: this.dbPath };
      this.tableNames = STAGING_TABLE_NAMES.slice();
    } else {
      const prefix = `t${randomHex(6)}`;
      this.endpoint = endpoint;
      this.env = {
        STORAGE: 'dynamodb',
        DYNAMODB_ENDPOINT: endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
      };
      this.tableNames = [];
      for (const t of TABLES) {
        const name = `${prefix}_${t}`;
        this.env[`TABLE_${t.toUpperCase()}`] = name;
        this.tableNames.push(name);
      }
    }
    // logical name -> physical name (the TABLE_<NAME> values), e.g. this.tables.notes
    this.tables = Object.fromEntries(TABLES.map((t, i) => [t, this.tableNames[i]]));
    this.prepared = kind === 'sqlite'; // sqlite creates its tables at start
  }

  // dynamodb: create the tables once, with `actionstools setup`.
  async prepare() {
    if (this.prepared) return;
    const r = await runCli(['setup'], { env: this.env, cwd: this.dir, timeoutMs: 60000 });
    if (r.code !== 0) throw new Error(`actionstools setup failed (${r.code}):\n${r.stderr}`);
    this.prepared = true;
  }

  cleanup() { rmDir(this.dir); }
}

// ---------------------------------------------------------------------------------------
// Server

export class Server {
  constructor(opts) {
    this.opts = opts;
    this.storage = opts.storage;
    this.secret = opts.secret;
    this.lines = [];       // every stderr line, raw
    this.stderr = '';      // all of stderr
    this.stdout = '';
    this.tokens = [];      // tokens minted for this server (for the "no token in logs" check)
    this.exited = null;    // {code, signal} once it exited
    this.port = 0;
    this.prefix = opts.prefix || '';
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  // Parsed JSON log lines (non-JSON lines skipped).
  logs() {
    const out = [];
    for (const l of this.lines) {
      try { out.push(JSON.parse(l)); } catch { /* not JSON */ }
    }
    return out;
  }

  // Waits until a log line satisfies pred; resolves with it.
  async waitForLog(pred, timeoutMs = 3000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.logs().find(pred);
      if (hit) return hit;
      if (Date.now() > end) return undefined;
      await sleep(20);
    }
  }

  // The request log line of the request whose X-Request-Id is id.
  requestLog(id, timeoutMs = 3000) {
    return this.waitForLog((l) => l.msg === 'request' && l.request_id === id, timeoutMs);
  }

  // Mints an HS256 token (with this server's secret) for user, recorded for the log check.
  token(user, opts = {}) {
    const t = mintToken(user, { secret: this.secret, ...opts });
    this.tokens.push(t);
    return t;
  }

  request(method, p, opts = {}) { return request(this, method, p, opts); }

  // SIGTERM, wait, and insist on exit code 0 (with ASan a leak or error makes it nonzero).
  //   immediate: signal at once, even right after "listening" (see signal())
  async stop({ keepStorage = false, immediate = false } = {}) {
    const r = await this.signal('SIGTERM', { immediate });
    if (this.ownsStorage && !keepStorage) this.storage.cleanup();
    if (r.code !== 0) {
      throw new Error(`actionstools serve exited with ${r.code ?? r.signal} on SIGTERM (expected 0)\n` +
        `--- stderr (last 8000 chars) ---\n${this.stderr.slice(-8000)}`);
    }
    return r;
  }

  // Sends a signal and waits for the exit; resolves {code, signal}.
  // Unless immediate, a signal is sent no sooner than SETTLE_MS after "listening": a
  // SIGTERM in the first milliseconds after start-up is its own test (durability), so that
  // the other files do not fail at random on that one race.
  async signal(sig, { immediate = false, timeoutMs = 15000 } = {}) {
    if (this.exited) return this.exited;
    if (!immediate && this.startedAt) {
      const wait = SETTLE_MS - (Date.now() - this.startedAt);
      if (wait > 0) await sleep(wait);
    }
    const done = this.exitPromise;
    this.proc.kill(sig);
    const t = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    const r = await done;
    clearTimeout(t);
    return r;
  }

  // SIGKILL: no clean shutdown. Storage is kept (that is the point).
  kill() { return this.signal('SIGKILL', { immediate: true }); }
}

// Starts `actionstools serve`. Options:
//   storage      a Storage to use (default: a fresh one, removed on stop)
//   secret       HS256 secret (default: random); null for none
//   publicKeyFile  AUTH_JWT_PUBLIC_KEY_FILE
//   env          extra environment
//   prefix       BASE_PREFIX (also used by request paths if you pass prefixed paths yourself)
//   args         extra arguments after `serve`
//   preArgs      arguments before the command (e.g. ['--config', file])
//   command      the command (default 'serve'; null: none, the default command)
//   binary       the binary to start (default: BIN): another build, or a copy placed elsewhere
export async function startServer(opts = {}) {
  const ownsStorage = !opts.storage;
  const storage = opts.storage || new Storage();
  try {
    await storage.prepare();
  } catch (e) {
    if (ownsStorage) storage.cleanup();
    throw e;
  }
  const secret = opts.secret === undefined ? randomHex(24) : opts.secret;
  const env = {
    ...baseEnv(),
    ...storage.env,
    LISTEN: '127.0.0.1:0',
    LOG_LEVEL: 'info',
    ...(secret ? { AUTH_JWT_SECRET: secret } : {}),
    ...(opts.publicKeyFile ? { AUTH_JWT_PUBLIC_KEY_FILE: opts.publicKeyFile } : {}),
    ...(opts.prefix ? { BASE_PREFIX: opts.prefix } : {}),
    ...(opts.env || {}),
  };
  const srv = new Server({ ...opts, storage, secret });
  srv.ownsStorage = ownsStorage;
  srv.env = env;
  const command = opts.command === undefined ? ['serve'] : (opts.command ? [opts.command] : []);
  const args = [...(opts.preArgs || []), ...command, ...(opts.args || [])];
  const proc = spawn(opts.binary || BIN, args, { env, cwd: storage.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  srv.proc = proc;
  srv.pid = proc.pid;
  srv.exitPromise = new Promise((resolve) => {
    proc.on('close', (code, signal) => {
      live.delete(proc);
      srv.exited = { code, signal };
      resolve(srv.exited);
    });
  });
  proc.stdout.setEncoding('utf8').on('data', (d) => { srv.stdout += d; });
  let partial = '';
  let onListening;
  const listening = new Promise((resolve) => { onListening = resolve; });
  proc.stderr.setEncoding('utf8').on('data', (d) => {
    srv.stderr += d;
    partial += d;
    let i;
    while ((i = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, i);
      partial = partial.slice(i + 1);
      srv.lines.push(line);
      if (!srv.port) {
        try {
          const j = JSON.parse(line);
          if (j.msg === 'listening' && Number.isInteger(j.port) && j.port > 0) {
            srv.port = j.port;
            srv.listenLog = j;
            srv.startedAt = Date.now();
            onListening();
          }
        } catch { /* not JSON */ }
      }
    }
  });
  const timeoutMs = opts.startTimeoutMs || 20000;
  let timer;
  const outcome = await Promise.race([
    listening.then(() => 'ok'),
    srv.exitPromise.then(() => 'exited'),
    new Promise((r) => { timer = setTimeout(() => r('timeout'), timeoutMs); }),
  ]);
  clearTimeout(timer);
  if (outcome !== 'ok') {
    if (outcome === 'timeout') proc.kill('SIGKILL');
    await srv.exitPromise;
    if (ownsStorage) storage.cleanup();
    throw new Error(`actionstools serve did not start (${outcome}, exit ${JSON.stringify(srv.exited)})\n` +
      `--- stderr ---\n${srv.stderr.slice(-8000)}`);
  }
  return srv;
}

// ---------------------------------------------------------------------------------------
// HTTP

// request(server, method, path, {token, json, body, headers, agent, timeoutMs})
//   json: a value sent as JSON with Content-Type application/json
//   body: a raw string/Buffer (Content-Type only if given in headers)
//   chunked: send the body with Transfer-Encoding: chunked (no Content-Length)
// Resolves {status, headers, text, body (parsed JSON or undefined), reusedSocket, socket, requestId}.
export function request(srv, method, p, opts = {}) {
  const headers = { ...(opts.headers || {}) };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  let payload;
  if (opts.json !== undefined) {
    payload = Buffer.from(JSON.stringify(opts.json));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['Content-Type'] = 'application/json';
    }
  } else if (opts.body !== undefined) {
    payload = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
  }
  if (payload !== undefined && !opts.chunked) headers['Content-Length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: srv.port,
      method,
      path: p,
      headers,
      agent: opts.agent === undefined ? false : opts.agent,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body;
        if (text.length) {
          try { body = JSON.parse(text); } catch { body = undefined; }
        }
        resolve({
          status: res.statusCode,
          headers: res.headers,
          text,
          body,
          reusedSocket: req.reusedSocket,
          socket: res.socket,
          requestId: res.headers['x-request-id'],
        });
      });
      res.on('error', reject);
    });
    req.setTimeout(opts.timeoutMs || 15000, () => req.destroy(new Error(`${method} ${p}: timeout`)));
    req.on('error', reject);
    if (payload !== undefined) {
      if (opts.chunked) {
        // several chunks, to exercise the server's streaming reader
        const step = 64 * 1024;
        for (let i = 0; i < payload.length; i += step) req.write(payload.subarray(i, i + step));
        req.end();
      } else {
        req.end(payload);
      }
    } else {
      req.end();
    }
  });
}

// Splits a comma-separated header into upper-cased, trimmed items.
export function headerList(v) {
  if (v === undefined) return [];
  return String(v).split(',').map((s) => s.trim().toUpperCase()).filter(Boolean).sort();
}

// ---------------------------------------------------------------------------------------
// Users and tokens

let userSeq = 0;
export function newTenant() { return `inst-${randomHex(6)}`; }

// A user of a tenant: {sub, name, instance_id, roles}.
export function newUser({ instance = newTenant(), admin = false, name, sub } = {}) {
  userSeq += 1;
  return {
    sub: sub || uuid(),
    name: name || `User ${userSeq}`,
    instance_id: instance,
    roles: admin ? ['CRM_ADMIN'] : ['CRM_USER'],
  };
}

export const b64url = (x) => Buffer.from(x).toString('base64url');

// Low-level JWT signing.
//   alg      header alg (default HS256)
//   signAlg  algorithm actually used to sign (default: alg); 'none' gives an empty signature
//   key      HS*: secret (string/Buffer); RS256/ES256: private KeyObject or PEM
//   header   extra header fields
export function signJwt(payload, { alg = 'HS256', signAlg, key, header = {} } = {}) {
  const h = { alg, typ: 'JWT', ...header };
  const input = `${b64url(JSON.stringify(h))}.${b64url(typeof payload === 'string' ? payload : JSON.stringify(payload))}`;
  const how = signAlg || alg;
  let sig;
  if (/^HS(256|384|512)$/.test(how)) {
    sig = crypto.createHmac(`sha${how.slice(2)}`, key).update(input).digest();
  } else if (how === 'RS256') {
    sig = crypto.sign('sha256', Buffer.from(input), key);
  } else if (how === 'ES256') {
    sig = crypto.sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  } else if (how.toLowerCase() === 'none') {
    sig = Buffer.alloc(0);
  } else {
    throw new Error(`signJwt: unsupported alg ${how}`);
  }
  return `${input}.${b64url(sig)}`;
}

// Claims of a user: sub, name, instance_id, roles, iat, exp (now + expIn seconds).
//   omit: claim names to drop; extra: claims to add or override
export function claimsFor(user, { expIn = 3600, omit = [], extra = {} } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const c = {
    sub: user.sub,
    name: user.name,
    instance_id: user.instance_id,
    roles: user.roles,
    iat: now,
    exp: now + expIn,
    ...extra,
  };
  for (const k of omit) delete c[k];
  return c;
}

// A token for user. Options: secret (HS256), or alg+key for RS256/ES256; plus claimsFor's.
export function mintToken(user, { secret, alg = 'HS256', key, header, ...claimOpts } = {}) {
  return signJwt(claimsFor(user, claimOpts), { alg, key: key || secret, header });
}

export function rsaKeys() {
  return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
}
export function ecKeys() {
  return crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
}
export function writePublicKey(dir, keyPair, name = 'key.pem') {
  const f = path.join(dir, name);
  fs.writeFileSync(f, keyPair.publicKey.export({ type: 'spki', format: 'pem' }));
  return f;
}

// ---------------------------------------------------------------------------------------
// Exact JSON: numbers are kept as their text, so integers beyond 2^53 can be compared.
// Returns plain objects/arrays/strings/booleans/null, numbers as {$n: "text"}.

export function parseExact(text) {
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i += 1; };
  const fail = (m) => { throw new Error(`parseExact: ${m} at ${i}: ${text.slice(i, i + 40)}`); };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i += 1;
      const o = {};
      ws();
      if (text[i] === '}') { i += 1; return o; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected key');
        const k = str();
        ws();
        if (text[i] !== ':') fail('expected :');
        i += 1;
        if (Object.prototype.hasOwnProperty.call(o, k)) fail(`duplicate key ${k}`);
        o[k] = value();
        ws();
        if (text[i] === ',') { i += 1; continue; }
        if (text[i] === '}') { i += 1; return o; }
        fail('expected , or }');
      }
    }
    if (c === '[') {
      i += 1;
      const a = [];
      ws();
      if (text[i] === ']') { i += 1; return a; }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') { i += 1; continue; }
        if (text[i] === ']') { i += 1; return a; }
        fail('expected , or ]');
      }
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail('unexpected');
    i += m[0].length;
    return { $n: m[0] };
  };
  const str = () => {
    const start = i;
    i += 1;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i += 1;
    return JSON.parse(text.slice(start, i));
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing text');
  return v;
}

// Exact form of a JS value (numbers as {$n}); use n('123456789012345678') for big ones.
export function exact(v) {
  if (v && typeof v === 'object' && '$n' in v) return v;
  if (typeof v === 'number') return { $n: String(v) };
  if (Array.isArray(v)) return v.map(exact);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) o[k] = exact(x);
    return o;
  }
  return v;
}
export const n = (text) => ({ $n: text });

// Serializes a value that may hold {$n} numbers back to JSON text.
export function stringifyExact(v) {
  if (v && typeof v === 'object' && '$n' in v) return v.$n;
  if (Array.isArray(v)) return `[${v.map(stringifyExact).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${stringifyExact(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// ---------------------------------------------------------------------------------------
// Assertions shared by the test files


const show = (res) => `${res.status} ${res.text.slice(0, 600)}`;

// An error answer: exact status, JSON body {"message": "..."} (non-empty), X-Request-Id.
export function assertError(res, status, { message } = {}) {
  assert.equal(res.status, status, `expected ${status}, got ${show(res)}`);
  assert.ok(res.body && typeof res.body === 'object' && !Array.isArray(res.body),
    `error body is not a JSON object: ${show(res)}`);
  assert.equal(typeof res.body.message, 'string', `no message: ${show(res)}`);
  assert.ok(res.body.message.length > 0, `empty message: ${show(res)}`);
  if (message instanceof RegExp) assert.match(res.body.message, message);
  else if (message !== undefined) assert.equal(res.body.message, message);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.ok(res.headers['x-request-id'], 'no X-Request-Id');
  return res.body;
}

// A validation error: 400 {"message": "Input payload validation failed", "errors": {...}}
// with exactly the given fields; a string value must match exactly, true means any text.
export function assertValidation(res, fields) {
  assertError(res, 400, { message: 'Input payload validation failed' });
  const errs = res.body.errors;
  assert.ok(errs && typeof errs === 'object', `no errors object: ${show(res)}`);
  assert.deepEqual(Object.keys(errs).sort(), Object.keys(fields).sort(), `error fields: ${show(res)}`);
  for (const [k, v] of Object.entries(fields)) {
    assert.equal(typeof errs[k], 'string', `errors.${k}: ${show(res)}`);
    if (v === true) assert.ok(errs[k].length > 0);
    else if (v instanceof RegExp) assert.match(errs[k], v);
    else assert.equal(errs[k], v, `errors.${k}: ${show(res)}`);
  }
  return errs;
}

export function assertStatus(res, status) {
  assert.equal(res.status, status, `expected ${status}, got ${show(res)}`);
  return res;
}

// Canonical form of a parseExact value for comparisons: integers (no '.', no exponent) as
// exact decimal text "i:<n>", other numbers as their double value "f:<x>".
export function canonExact(v) {
  if (v && typeof v === 'object' && '$n' in v) {
    if (/^-?\d+$/.test(v.$n)) {
      const b = BigInt(v.$n);
      return `i:${b === 0n ? '0' : b.toString()}`;
    }
    return `f:${Number(v.$n)}`;
  }
  if (Array.isArray(v)) return v.map(canonExact);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) o[k] = canonExact(x);
    return o;
  }
  return v;
}

// Checks an HS256 JWT against secret; answers its payload, or throws.
export function verifyHs256(token, secret) {
  const parts = String(token).split('.');
  assert.equal(parts.length, 3, `not a JWT: ${token}`);
  const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
  assert.equal(header.alg, 'HS256');
  const sig = crypto.createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest('base64url');
  assert.equal(parts[2], sig, 'the token is not signed with the expected secret');
  return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
}
