// A burst of requests on idle keep-alive connections is answered at once, whatever
// its size (docs/http-server.md, "Driving the library").
//
// libmicrohttpd 0.9.75's own polling thread takes epoll events 128 at a time and, when
// a call returns exactly 128, waits again with the timeout it computed before the first
// call (up to HTTP_IDLE_TIMEOUT) while those 128 connections sit unread: ~1 % of the
// requests of the 10,000-connection test stalled for 30 s (then cut with 408) when the
// CPUs were busy. Here the burst is made exact: the server runs one polling thread
// (pinned to one CPU), is stopped (SIGSTOP) while 128, then 256 idle connections each
// send a request, and continued: all of them must be answered within seconds (a few ms
// normally; the stall lasted until the request timeout).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { BIN, STORAGE, sleep, startServer } from './lib/harness.mjs';

const CONNS = 256;
const BURSTS = [128, 256]; // one epoll batch of libmicrohttpd 0.9.75 (MAX_EVENTS), then two
const ANSWER_WITHIN_MS = 5000; // a few ms normally; the stall lasted HTTP_REQUEST_TIMEOUT (30 s)

// The first CPU this process may run on ("Cpus_allowed_list: 0-1,4"), or null.
function firstCpu() {
  try {
    const m = /^Cpus_allowed_list:\s*(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? m[1] : null;
  } catch { return null; }
}

const CPU = firstCpu();
const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((p) => fs.existsSync(p));

function open(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    s.once('error', reject);
    s.once('connect', () => { s.removeAllListeners('error'); s.on('error', () => {}); resolve(s); });
  });
}

// Sends GET /health on s; resolves with the status ('closed', or 'timeout' after ms).
function health(s, ms) {
  return new Promise((resolve) => {
    let buf = '';
    const done = (v) => { clearTimeout(timer); s.off('data', onData); s.off('close', onClose); resolve(v); };
    const onData = (d) => {
      buf += d;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length: *(\d+)/i.exec(buf.slice(0, end));
      if (m && buf.length >= end + 4 + Number(m[1])) done(buf.slice(9, 12));
    };
    const onClose = () => done('closed');
    const timer = setTimeout(() => done('timeout'), ms);
    s.on('data', onData);
    s.once('close', onClose);
    s.write('GET /health HTTP/1.1\r\nHost: t\r\n\r\n');
  });
}

const procState = (pid) => /^\d+ \(.*\) (\S)/.exec(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))[1];

async function waitState(pid, want) {
  for (let i = 0; i < 200 && procState(pid) !== want; i += 1) await sleep(5);
  assert.equal(procState(pid), want, `server process state (wanted ${want})`);
}

describe('a burst of requests on idle keep-alive connections (one polling thread)', () => {
  const skip = STORAGE === 'dynamodb' ? 'the storage is not involved (GET /health): runs in the sqlite pass'
    : !TASKSET || CPU === null ? 'needs taskset(1) and /proc/self/status to pin the server to one CPU' : false;
  let srv;
  let socks = [];
  before(async () => {
    if (skip) return;
    srv = await startServer({ binary: TASKSET, preArgs: ['-c', CPU, BIN] });
  });
  after(async () => {
    for (const s of socks) s.destroy();
    if (srv) {
      try { process.kill(srv.pid, 'SIGCONT'); } catch { /* gone */ }
      await srv.stop();
    }
  });

  test(`bursts of ${BURSTS.join(' and ')} requests are all answered within ${ANSWER_WITHIN_MS / 1000} s`, { skip }, async (t) => {
    assert.equal(srv.listenLog.polling_threads, 1, 'pinned to one CPU, the server runs one polling thread');
    socks = await Promise.all(Array.from({ length: CONNS }, () => open(srv.port)));
    const first = await Promise.all(socks.map((s) => health(s, 10000)));
    assert.ok(first.every((x) => x === '200'), `first requests: ${first.filter((x) => x !== '200').length} not answered 200`);
    await sleep(200); // every connection idle, no event left to take
    for (const n of BURSTS) {
      process.kill(srv.pid, 'SIGSTOP');
      await waitState(srv.pid, 'T');
      const answers = socks.slice(0, n).map((s) => health(s, ANSWER_WITHIN_MS + 1000));
      await sleep(100); // the requests are in the server's socket buffers, one event each
      const t0 = Date.now();
      process.kill(srv.pid, 'SIGCONT');
      const r = await Promise.all(answers);
      const ms = Date.now() - t0;
      const bad = r.filter((x) => x !== '200');
      t.diagnostic(`burst of ${n}: answered in ${ms} ms, ${bad.length} not answered 200 (${[...new Set(bad)].join(' ')})`);
      assert.equal(bad.length, 0, `burst of ${n}: ${bad.length} requests not answered 200 (${bad.slice(0, 5).join(' ')}...)`);
      assert.ok(ms < ANSWER_WITHIN_MS, `burst of ${n}: answered in ${ms} ms`);
    }
  });
});
