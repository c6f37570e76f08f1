// Many-connection clients for tests/api/engine-load.test.mjs. Run as a child process, so
// that it can be given a higher file descriptor limit than the test runner has
// (runConns() below starts it under `sh -c 'ulimit -n ...'`). Prints one JSON line.
//
//   node conns.mjs slowloris PORT N INTERVAL_MS DURATION_MS
//     N connections send a request line, then one header line every INTERVAL_MS, never
//     ending the headers; meanwhile GET /health is probed on fresh connections every
//     200 ms. Reports how many connections got a 408 and were closed, and when.
//   node conns.mjs hold PORT N [PID]
//     N keep-alive connections each send GET /health; all are held open (the server's
//     RSS is read then, when PID is given); 20 probes on fresh connections; then one
//     more request on every held connection.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function open(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    s.once('error', () => resolve(null));
    s.once('connect', () => {
      s.removeAllListeners('error');
      s.on('error', () => {});
      resolve(s);
    });
  });
}

// Sends GET /health on s and resolves with the status ('closed' if the socket closed).
function health(s) {
  return new Promise((resolve) => {
    if (!s || s.destroyed) { resolve('closed'); return; }
    let buf = '';
    const done = (v) => { s.off('data', onData); s.off('close', onClose); resolve(v); };
    const onData = (d) => {
      buf += d;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length: *(\d+)/i.exec(buf.slice(0, end));
      if (m && buf.length >= end + 4 + Number(m[1])) done(buf.slice(9, 12));
    };
    const onClose = () => done('closed');
    s.on('data', onData);
    s.once('close', onClose);
    s.write('GET /health HTTP/1.1\r\nHost: t\r\n\r\n');
  });
}

async function probe(port) {
  const t0 = now();
  const s = await open(port);
  const status = await health(s);
  if (s) s.destroy();
  return { status, ms: now() - t0 };
}

async function slowloris(port, n, interval, duration) {
  const t0 = now();
  const conns = [];
  for (let i = 0; i < n; i += 200) {
    const batch = await Promise.all(Array.from({ length: Math.min(200, n - i) }, () => open(port)));
    for (const s of batch) {
      if (!s) continue;
      const c = { s, got408: false, closedAt: null, text: '' };
      s.on('data', (d) => { c.text += d; if (c.text.startsWith('HTTP/1.1 408')) c.got408 = true; });
      s.on('close', () => { c.closedAt = now() - t0; });
      s.write('GET /health HTTP/1.1\r\nHost: t\r\n');
      conns.push(c);
    }
  }
  const opened = conns.length;
  const openedMs = now() - t0;
  let k = 0;
  const trickle = setInterval(() => {
    k += 1;
    for (const c of conns) if (c.closedAt === null) c.s.write(`X-Slow-${k}: ${k}\r\n`);
  }, interval);
  const probes = [];
  while (now() - t0 < duration) {
    probes.push(await probe(port));
    await sleep(200);
  }
  clearInterval(trickle);
  const closed = conns.filter((c) => c.closedAt !== null);
  const result = {
    opened,
    openedMs: Math.round(openedMs),
    cut408: conns.filter((c) => c.got408).length,
    closed: closed.length,
    firstCloseMs: closed.length ? Math.round(Math.min(...closed.map((c) => c.closedAt))) : null,
    lastCloseMs: closed.length ? Math.round(Math.max(...closed.map((c) => c.closedAt))) : null,
    probes: probes.map((p) => p.status),
    probeMs: probes.map((p) => Math.round(p.ms)),
  };
  for (const c of conns) c.s.destroy();
  return result;
}

const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

async function hold(port, n, pid) {
  const t0 = now();
  const socks = [];
  let refused = 0;
  for (let i = 0; i < n; i += 500) {
    const batch = await Promise.all(Array.from({ length: Math.min(500, n - i) }, () => open(port)));
    for (const s of batch) if (s) socks.push(s); else refused += 1;
  }
  const openedMs = now() - t0;
  let served = 0;
  for (let i = 0; i < socks.length; i += 500) {
    const r = await Promise.all(socks.slice(i, i + 500).map(health));
    served += r.filter((x) => x === '200').length;
  }
  const servedMs = now() - t0;
  const heldRssMb = pid ? Math.round(rssMb(pid)) : null;
  const probes = [];
  for (let i = 0; i < 20; i += 1) probes.push(await probe(port));
  let servedAgain = 0;
  for (let i = 0; i < socks.length; i += 500) {
    const r = await Promise.all(socks.slice(i, i + 500).map(health));
    servedAgain += r.filter((x) => x === '200').length;
  }
  for (const s of socks) s.destroy();
  return {
    opened: socks.length,
    refused,
    openedMs: Math.round(openedMs),
    served,
    servedMs: Math.round(servedMs),
    servedAgain,
    heldRssMb,
    probes: probes.map((p) => p.status),
    worstProbeMs: Math.round(Math.max(...probes.map((p) => p.ms))),
    totalMs: Math.round(now() - t0),
  };
}

// Runs this script in a child process whose soft fd limit is raised to `fds` (as far
// as the hard limit allows); resolves with its JSON result.
export function runConns(args, { fds = 12000, timeoutMs = 120000 } = {}) {
  const me = fileURLToPath(import.meta.url);
  const cmd = `ulimit -n ${fds} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "${process.execPath}" "${me}" "$@"`;
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', cmd, 'conns', ...args.map(String)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      try { resolve(JSON.parse(out.trim().split('\n').pop())); } catch { reject(new Error(`conns.mjs ${args.join(' ')} failed (${code}): ${err}${out}`)); }
    });
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [mode, ...a] = process.argv.slice(2);
  const nums = a.map(Number);
  const result = mode === 'slowloris' ? await slowloris(...nums) : await hold(...nums);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
