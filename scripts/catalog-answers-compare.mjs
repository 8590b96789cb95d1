#!/usr/bin/env node
// `node scripts/catalog-answers-compare.mjs <git ref>`: whether a change to the catalog search (the index, the
// fallback, the presenter) changed any answer. Every query of the HTTP benchmark's sets (bench/catalog/http-queries.ts:
// distinct two-word prefixes, typos, searches near ZIP codes; some 100,000) is searched in the catalog built from the
// brand list fixtures by the commit `ref` (built in .bench/<sha> by `npm run bench:compare`, which must have run for
// it) and by this work tree's dist/, and the answers' JSON compared byte for byte (and, where the presenter counts its
// bytes, the count checked). Exits 1 on the first difference.
import '../bin/check-node.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ref = process.argv[2];
if (!ref) {
  console.error('usage: node scripts/catalog-answers-compare.mjs <git ref>');
  process.exit(2);
}
const sha = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
const builds = {
  [sha.slice(0, 12)]: path.join(root, '.bench', sha.slice(0, 12), 'dist'),
  'work tree': path.join(root, 'dist'),
};
for (const [name, dist] of Object.entries(builds))
  if (!existsSync(path.join(dist, 'api'))) {
    console.error(
      `no build of ${name} in ${dist}: run npm run build, and npm run bench:compare -- ${ref} for the commit`,
    );
    process.exit(2);
  }

async function load(dist) {
  const from = (file) => import(pathToFileURL(path.join(dist, file)).href);
  return {
    index: (await from('api/src/features/catalog/search/index.js')).BrandSearchIndex,
    searchJson: (await from('api/src/features/catalog/presenter.js')).searchJson,
    unchecked: (await from('api/src/features/catalog/service.js')).UNCHECKED,
  };
}
const [before, now] = await Promise.all(Object.values(builds).map(load));
const { loadAllRealBrands } = await import(
  pathToFileURL(path.join(builds['work tree'], 'testkit/real-brands.js')).href
);
const { catalogBenchQueries } = await import(
  pathToFileURL(path.join(builds['work tree'], 'bench/catalog/http-queries.js')).href
);
const { zipCentroid } = await import(pathToFileURL(path.join(builds['work tree'], 'core/src/catalog/geo.js')).href);

const { brands } = await loadAllRealBrands();
const indexes = [before, now].map((build) => build.index.build(brands));
const queries = catalogBenchQueries(brands, indexes[1]);
let compared = 0;
for (const set of ['distinct', 'distinctTypos', 'distinctNear', 'typos', 'near']) {
  for (const query of queries[set]) {
    const params = Object.fromEntries(new URLSearchParams(query));
    const options = { limit: Number(params.limit ?? 25), ...(params.near && { near: zipCentroid(params.near) }) };
    const [a, b] = [before, now].map((build, i) => {
      const body = build.searchJson(
        { ...indexes[i].search(params.q ?? '', options), endpointOf: () => build.unchecked },
        'https://x',
      );
      // A presenter that counts its body's bytes (since issue 40's last commits) must count them right.
      if (typeof body === 'string') return body;
      if (body.bytes !== Buffer.byteLength(body.text)) {
        console.error(`${query} (${set}): ${body.bytes} bytes counted, ${Buffer.byteLength(body.text)} sent`);
        process.exit(1);
      }
      return body.text;
    });
    compared++;
    if (a !== b) {
      console.error(`different answers for ${query} (${set}):\n${a}\n${b}`);
      process.exit(1);
    }
  }
}
console.log(`${compared} searches: the same answers from ${sha.slice(0, 12)} and the work tree`);
