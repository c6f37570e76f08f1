// `make install` / `make uninstall`: the layout under DESTDIR and PREFIX, the systemd
// unit (checked by systemd-analyze where it exists, and its ExecStart run by hand with
// the environment systemd would give it), the man page, and an uninstall that keeps a
// changed configuration.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import {
  BIN, REPO, cleanEnv, describeRun, freePort, rmDir, run, start, tmpDir, waitFor200,
} from './lib/setup.mjs';

const VERSION = '0.1.0';

function make(args, opts = {}) {
  const r = run('make', ['--no-print-directory', ...args], { env: cleanEnv(), ...opts });
  assert.equal(r.status, 0, describeRun(r));
  return r;
}

// Every file under dir, relative, sorted.
function files(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out.sort();
}

const mode = (p) => (fs.statSync(p).mode & 0o777).toString(8);

function hasCommand(name) {
  return run('sh', ['-c', `command -v ${name}`]).status === 0;
}

// The [Service] settings of a unit file: name -> list of values, in order.
function serviceSettings(unitText) {
  const settings = new Map();
  let section = '';
  for (const raw of unitText.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) { section = s[1]; continue; }
    const eq = line.indexOf('=');
    if (section !== 'Service' || eq < 0) continue;
    const k = line.slice(0, eq);
    if (!settings.has(k)) settings.set(k, []);
    settings.get(k).push(line.slice(eq + 1));
  }
  return settings;
}

// VARIABLE=value lines of an environment file, as systemd reads the simple ones.
function envFile(text) {
  const env = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return env;
}

// make test has node_modules, so the /docs page's Swagger UI files are installed too
// (the Makefile's SWAGGER_UI_FILES).
const SWAGGER_UI_FILES = ['LICENSE', 'NOTICE', 'favicon-16x16.png', 'favicon-32x32.png',
  'swagger-ui-bundle.js', 'swagger-ui-bundle.js.LICENSE.txt', 'swagger-ui.css'];
const PREFIX_FILES = [
  'bin/actionstools',
  'lib/systemd/system/actionstools.service',
  'share/doc/actionstools/README.md',
  'share/doc/actionstools/actionstools.env.example',
  'share/man/man1/actionstools.1',
  ...SWAGGER_UI_FILES.map((f) => `share/actionstools/swagger-ui/${f}`),
];

describe('make install DESTDIR=... / make uninstall', () => {
  let dest;
  before(() => { dest = tmpDir('at-destdir-'); });
  after(() => rmDir(dest));

  test('lays out the binary, man page, docs, unit and a private environment file', () => {
    make(['install', `DESTDIR=${dest}`]);
    assert.deepEqual(files(dest), [
      'etc/actionstools/actionstools.env',
      ...PREFIX_FILES.map((f) => `usr/local/${f}`),
    ].sort());
    assert.equal(mode(path.join(dest, 'usr/local/bin/actionstools')), '755');
    assert.equal(mode(path.join(dest, 'etc/actionstools/actionstools.env')), '600');
    assert.equal(mode(path.join(dest, 'usr/local/lib/systemd/system/actionstools.service')), '644');

    const unit = fs.readFileSync(path.join(dest, 'usr/local/lib/systemd/system/actionstools.service'), 'utf8');
    const s = serviceSettings(unit);
    assert.deepEqual(s.get('ExecStart'), ['/usr/local/bin/actionstools serve']);
    assert.deepEqual(s.get('EnvironmentFile'), ['/etc/actionstools/actionstools.env']);
    for (const f of files(dest)) {
      if (f.endsWith('bin/actionstools') || f.includes('/swagger-ui/')) continue;
      assert.doesNotMatch(fs.readFileSync(path.join(dest, f), 'utf8'), /@[A-Z]+@/, `${f} has a placeholder left`);
    }
    const v = run(path.join(dest, 'usr/local/bin/actionstools'), ['--version']);
    assert.equal(v.stdout.trim(), `actionstools ${VERSION}`);
  });

  test('a second install keeps a changed configuration; uninstall keeps it too', () => {
    const conf = path.join(dest, 'etc/actionstools/actionstools.env');
    fs.appendFileSync(conf, 'AUTH_JWT_SECRET=changed-by-the-admin\n');
    const r = make(['install', `DESTDIR=${dest}`]);
    assert.match(r.stdout, /kept the configuration/);
    assert.match(fs.readFileSync(conf, 'utf8'), /changed-by-the-admin/);

    make(['uninstall', `DESTDIR=${dest}`]);
    assert.deepEqual(files(dest), ['etc/actionstools/actionstools.env']);
  });

  test('uninstall removes an unchanged configuration and leaves no file', () => {
    make(['install', `DESTDIR=${dest}`]);
    fs.copyFileSync(path.join(REPO, 'packaging/actionstools.env'), path.join(dest, 'etc/actionstools/actionstools.env'));
    make(['uninstall', `DESTDIR=${dest}`]);
    assert.deepEqual(files(dest), []);
    assert.ok(!fs.existsSync(path.join(dest, 'usr/local/share/doc/actionstools')));
    assert.ok(!fs.existsSync(path.join(dest, 'etc/actionstools')));
  });

  test('PREFIX=/usr puts the unit where systemd looks and points it at /usr/bin', () => {
    make(['install', `DESTDIR=${dest}`, 'PREFIX=/usr']);
    assert.deepEqual(files(dest), ['etc/actionstools/actionstools.env', ...PREFIX_FILES.map((f) => `usr/${f}`)].sort());
    const unit = fs.readFileSync(path.join(dest, 'usr/lib/systemd/system/actionstools.service'), 'utf8');
    assert.deepEqual(serviceSettings(unit).get('ExecStart'), ['/usr/bin/actionstools serve']);
    make(['uninstall', `DESTDIR=${dest}`, 'PREFIX=/usr']);
    assert.deepEqual(files(dest), []);
  });
});

// An install whose paths are real on this machine (PREFIX and SYSCONFDIR in a temporary
// folder), so systemd-analyze can check the unit and its ExecStart can be run.
describe('the installed service', () => {
  let dir;
  let prefix;
  let unitFile;
  let unit;
  before(() => {
    dir = tmpDir('at-prefix-');
    prefix = path.join(dir, 'usr');
    make(['install', `PREFIX=${prefix}`, `SYSCONFDIR=${path.join(dir, 'etc')}`]);
    unitFile = path.join(prefix, 'lib/systemd/system/actionstools.service');
    unit = serviceSettings(fs.readFileSync(unitFile, 'utf8'));
  });
  after(() => rmDir(dir));

  test('has the sandboxing the brief asks for', () => {
    for (const [k, v] of Object.entries({
      DynamicUser: 'yes', StateDirectory: 'actionstools', NoNewPrivileges: 'yes',
      ProtectSystem: 'strict', PrivateTmp: 'yes', ProtectHome: 'yes', CapabilityBoundingSet: '',
    })) {
      assert.deepEqual(unit.get(k), [v], `${k}=${v}`);
    }
  });

  test('systemd-analyze verify finds nothing to say, man page included',
    { skip: !hasCommand('systemd-analyze') && 'systemd-analyze is not installed' }, () => {
      const r = run('systemd-analyze', ['verify', unitFile],
        { env: cleanEnv({ MANPATH: path.join(prefix, 'share/man') }) });
      assert.equal(r.status, 0, describeRun(r));
      assert.equal(r.stderr + r.stdout, '', 'systemd-analyze verify warned');
    });

  test('systemd-analyze security rates its exposure 2.0 or less (of 10)',
    { skip: !hasCommand('systemd-analyze') && 'systemd-analyze is not installed' }, (t) => {
      const r = run('systemd-analyze', ['security', '--offline=true', unitFile], { env: cleanEnv() });
      if (r.status !== 0 && /offline/.test(r.stderr)) {
        t.skip('this systemd-analyze has no --offline review (systemd < 250)');
        return;
      }
      const m = /Overall exposure level for actionstools\.service: ([\d.]+)/.exec(r.stdout);
      assert.ok(m, describeRun(r));
      assert.ok(Number(m[1]) <= 2.0, `exposure ${m[1]}:\n${r.stdout}`);
    });

  // The ExecStart line with what systemd would give it: Environment= (%S the state
  // root), then the EnvironmentFile, in WorkingDirectory (made as StateDirectory= would).
  function serviceEnv(state, extra) {
    const env = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };
    for (const e of unit.get('Environment') || []) {
      const eq = e.indexOf('=');
      env[e.slice(0, eq)] = e.slice(eq + 1).replaceAll('%S', state);
    }
    const file = unit.get('EnvironmentFile')[0];
    Object.assign(env, envFile(fs.readFileSync(file, 'utf8')), extra);
    return env;
  }

  function execStart() {
    const [cmd, ...args] = unit.get('ExecStart')[0].split(/\s+/);
    assert.equal(cmd, path.join(prefix, 'bin/actionstools'));
    return [cmd, args];
  }

  test('as installed (no secret yet) it stops with exit status 2 naming AUTH_JWT_SECRET, which is not restarted', () => {
    const state = path.join(dir, 'state0');
    fs.mkdirSync(path.join(state, 'actionstools'), { recursive: true });
    const [cmd, args] = execStart();
    const r = run(cmd, args, { env: serviceEnv(state, {}), cwd: path.join(state, 'actionstools') });
    assert.equal(r.status, 2, describeRun(r));
    assert.match(r.stderr, /AUTH_JWT_SECRET/);
    assert.deepEqual(unit.get('RestartPreventExitStatus'), ['2']);
  });

  test('with AUTH_JWT_SECRET in the environment file its ExecStart serves /health and keeps the database in the state directory', async () => {
    const state = path.join(dir, 'state');
    const work = unit.get('WorkingDirectory')[0].replaceAll('%S', state);
    fs.mkdirSync(work, { recursive: true });
    const port = await freePort();
    const conf = unit.get('EnvironmentFile')[0];
    fs.writeFileSync(conf, fs.readFileSync(conf, 'utf8')
      .replace(/^AUTH_JWT_SECRET=.*$/m, 'AUTH_JWT_SECRET=0123456789abcdef0123456789abcdef')
      .replace(/^LISTEN=.*$/m, `LISTEN=127.0.0.1:${port}`));
    const [cmd, args] = execStart();
    const p = start(cmd, args, { env: serviceEnv(state, {}), cwd: work });
    try {
      const health = await waitFor200(`http://127.0.0.1:${port}/health`, p, 30_000);
      assert.deepEqual(health, { status: 'ok', version: VERSION, storage: 'sqlite' });
    } finally {
      await p.stop();
    }
    assert.deepEqual(p.exited, { code: 0, signal: null }, `SIGTERM should end it cleanly:\n${p.out}`);
    assert.ok(fs.existsSync(path.join(state, 'actionstools', 'actionstools.db')), `no database in ${state}`);
  });
});

describe('the man page', () => {
  const page = fs.readFileSync(path.join(REPO, 'packaging/actionstools.1.in'), 'utf8');
  const plain = page.replace(/\\f[BIRP]/g, '').replace(/\\-/g, '-');

  test('names every command of --help', () => {
    const help = run(BIN, ['--help']).stdout;
    const commands = [...help.split('commands:')[1].split('\n\n')[0].matchAll(/^ {2}(\w+) /gm)].map((m) => m[1]);
    assert.ok(commands.length >= 5, help);
    for (const c of commands) {
      assert.match(plain, new RegExp(`^\\.B ${c}$`, 'm'), `packaging/actionstools.1.in lacks the command ${c}`);
    }
  });

  test('names every variable of the README\'s configuration table', () => {
    const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
    const table = readme.split('## Configuration')[1].split('\n## ')[0];
    const vars = [...table.matchAll(/^\| (.+?) \|/gm)].flatMap((m) => [...m[1].matchAll(/`([A-Z0-9_<>]+)`/g)])
      .map((m) => m[1].replace(/<.*>$/, ''));
    assert.ok(vars.length >= 10, table);
    for (const v of vars) assert.ok(plain.includes(v), `packaging/actionstools.1.in lacks ${v}`);
  });

  test('renders without warnings', { skip: !hasCommand('man') && 'man is not installed' }, () => {
    const r = run('man', ['--warnings', '-l', path.join(REPO, 'packaging/actionstools.1.in')],
      { env: cleanEnv({ MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: '80' }) });
    assert.equal(r.status, 0, describeRun(r));
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /RUNNING AS A SERVICE/);
  });
});
