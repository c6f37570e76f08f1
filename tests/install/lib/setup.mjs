// Helpers of the setup tests (tests/install/): the repository, a clean environment for
// a make started by a test, free ports, HTTP probes, a PATH without Node.js.
// Node 20 built-ins only.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
export const BIN = path.join(REPO, 'build', 'release', 'actionstools');
// The ignored folder the Node.js provisioning uses (the Makefile's TOOLS_DIR).
export const TOOLS_DIR = process.env.TOOLS_DIR || path.join(REPO, '.tools');

export function tmpDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function rmDir(dir) {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

// The caller's environment without what a parent make passed down (a make started by
// a test must not join the parent's jobserver or inherit its overrides), with `extra`
// on top.
export function cleanEnv(extra = {}) {
  const env = { ...process.env };
  for (const k of ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES', 'TOOLS_DIR']) {
    delete env[k];
  }
  return { ...env, ...extra };
}

// Runs a command to its end; returns {status, stdout, stderr}. Throws when it cannot
// be started at all.
export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: REPO, encoding: 'utf8', timeout: 300_000, ...opts });
  if (r.error) throw r.error;
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export function describeRun(r) {
  return `exit ${r.status}${r.signal ? ` (${r.signal})` : ''}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts a long-running command in its own process group, collecting its output.
// stop() sends SIGTERM to the whole group (SIGKILL after `ms`) and resolves with the
// exit status once every process of it is gone.
export function start(cmd, args, opts = {}) {
  const child = spawn(cmd, args, { cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  const p = { child, out: '', exited: null };
  child.stdout.on('data', (d) => { p.out += d; });
  child.stderr.on('data', (d) => { p.out += d; });
  // 'close': the process has exited and every process it started has closed the
  // output it inherited, so nothing of the group is left serving.
  p.done = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      p.exited = { code, signal };
      resolve(p.exited);
    });
  });
  p.stop = async (ms = 15_000) => {
    if (!p.exited) {
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
      const t = setTimeout(() => {
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      }, ms);
      await p.done;
      clearTimeout(t);
    }
    return p.exited;
  };
  process.on('exit', () => {
    if (!p.exited) try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  });
  return p;
}

// Polls GET url until it answers 200 or `ms` pass; throws with the process output when
// the process ends first or time runs out.
export async function waitFor200(url, p, ms) {
  const until = Date.now() + ms;
  for (;;) {
    if (p.exited) throw new Error(`exited (${JSON.stringify(p.exited)}) before ${url} answered:\n${p.out}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return res.json();
    } catch { /* not yet */ }
    if (Date.now() > until) throw new Error(`${url} did not answer 200 within ${ms} ms:\n${p.out}`);
    await sleep(100);
  }
}

// A folder of links to every program on PATH but the names given: used as the whole
// PATH, it is this machine without those programs.
export function pathWithout(names, dir) {
  const skip = new Set(names); // and, as PATH does, every name after its first folder
  for (const d of (process.env.PATH || '').split(':')) {
    let entries;
    try { entries = fs.readdirSync(d); } catch { continue; }
    for (const name of entries) {
      if (skip.has(name)) continue;
      const target = path.join(d, name);
      try {
        fs.accessSync(target, fs.constants.X_OK);
        if (fs.statSync(target).isDirectory()) continue;
      } catch { continue; }
      fs.symlinkSync(target, path.join(dir, name));
      skip.add(name);
    }
  }
  return dir;
}
