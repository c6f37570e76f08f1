// Exits 0 when node_modules holds every package package-lock.json names, at the locked
// version; otherwise prints the first difference on stdout and exits 1 (scripts/deps.sh
// then runs `npm ci`). Compares contents, not dates: a fresh checkout has a lockfile newer than
// an installed node_modules that matches it.
//   node scripts/lock-current.mjs [DIR]     (DIR: the project folder, default: cwd)
import fs from 'node:fs';
import path from 'node:path';

const dir = path.resolve(process.argv[2] || '.');

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

function check() {
  const lock = readJson(path.join(dir, 'package-lock.json'));
  if (!lock || typeof lock.packages !== 'object') {
    return 'package-lock.json is missing or has no "packages" (lockfileVersion 2 or 3)';
  }
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (where === '' || !where.startsWith('node_modules/') || entry.link) continue;
    const installed = readJson(path.join(dir, where, 'package.json'));
    if (!installed) {
      if (entry.optional) continue; // for another platform: npm skips it too
      return `${where} is not installed`;
    }
    if (installed.version !== entry.version) {
      return `${where} is ${installed.version}, package-lock.json wants ${entry.version}`;
    }
  }
  return null;
}

const difference = check();
if (difference) {
  console.log(difference);
  process.exit(1);
}
