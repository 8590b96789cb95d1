#!/usr/bin/env node
// `npm start`'s build step: compiles the TypeScript (npm run build) only when a source is newer than the last
// build (dist/.tsbuildinfo), so starting again after no change starts at once. Sources: every .ts file under the
// folders tsconfig.json includes, tsconfig.json, package.json (its `type` changes the output) and package-lock.json
// (a dependency's types can). A failed build marks itself stale: tsc writes its build info even when it fails. Run from the repository's root. PORTICO_BUILD_COMMAND replaces the build (the tests use it).
import '../bin/check-node.js'; // npm start's first step: on an older Node it stops here, before building
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';

const root = process.cwd();
const stamp = path.join(root, 'dist', '.tsbuildinfo');

/** The newest modification time among `dir`'s .ts files (node_modules and dist are not sources). */
function newest(dir) {
  let latest = 0;
  if (!existsSync(dir)) return latest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(full));
    else if (entry.name.endsWith('.ts')) latest = Math.max(latest, statSync(full).mtimeMs);
  }
  return latest;
}

function stale() {
  if (!existsSync(stamp)) return 'no build yet';
  const built = statSync(stamp).mtimeMs;
  const config = JSON.parse(readFileSync(path.join(root, 'tsconfig.json'), 'utf8'));
  const folders = new Set((config.include ?? []).map((pattern) => pattern.split('/')[0]));
  for (const file of ['tsconfig.json', 'package.json', 'package-lock.json'])
    if (existsSync(path.join(root, file)) && statSync(path.join(root, file)).mtimeMs > built) return `${file} changed`;
  for (const folder of folders) if (newest(path.join(root, folder)) > built) return `a source in ${folder}/ changed`;
  return undefined;
}

const reason = stale();
if (reason === undefined) {
  console.error('build: dist/ is up to date');
  process.exit(0);
}
console.error(`build: ${reason}; compiling`);
const command = process.env.PORTICO_BUILD_COMMAND ?? 'npm run build --silent';
const started = new Date();
const result = spawnSync(command, { shell: true, stdio: 'inherit' });
// tsc leaves its build info untouched when nothing it emits changed (a file saved as it was): mark the build.
// A failed one is marked as never built, so the next start compiles again rather than run what did not compile.
if (existsSync(stamp)) {
  const at = result.status === 0 ? started : new Date(0);
  utimesSync(stamp, at, at);
}
process.exit(result.status ?? 1);
