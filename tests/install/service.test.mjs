// Does `make install` give a service that starts with systemd? scripts/service-check.sh
// boots this machine's systemd in a container (systemd-nspawn) over a throw-away overlay
// of /, installs there, and checks actionstools.service for real. Skipped, saying why,
// where that cannot run (not root, no systemd-nspawn, no mount namespaces).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import path from 'node:path';
import { REPO, cleanEnv, describeRun, run } from './lib/setup.mjs';

test('make install gives a service that systemd starts, sandboxed, and stops cleanly', (t) => {
  const r = run(path.join(REPO, 'scripts', 'service-check.sh'), [], { env: cleanEnv(), timeout: 180_000 });
  if (r.status === 2 || r.status === 3) {
    t.skip(r.stderr.trim().split('\n').pop());
    return;
  }
  assert.equal(r.status, 0, describeRun(r));
  assert.match(r.stdout, /service-check: all passed/);
  t.diagnostic(r.stdout.trim().split('\n').filter((l) => /started|runs as|security/.test(l)).join('; '));
});
