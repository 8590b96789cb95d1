// The unit run (`npm run test:unit`, and in `npm test` the first part of its second lane: scripts/test.sh): every
// test/**/*.unit.test.ts, as built in dist/ (only files whose source exists, so a renamed test's old output in an
// incrementally built dist/ is not run), under ./test/support/unit-hooks, which starts no service and fails
// any test that starts a process. Every other test runs under .mocharc.json.
const fs = require('node:fs');
const path = require('node:path');

const spec = fs
  .readdirSync(path.join(__dirname, 'test'), { recursive: true })
  .filter((file) => file.endsWith('.unit.test.ts'))
  .map((file) => path.join('dist', 'test', file.replace(/\.ts$/, '.js')))
  .sort();

module.exports = {
  // bin/check-node.js first: on a Node older than package.json's engines the run stops with what to do instead.
  require: ['bin/check-node.js', 'dist/test/support/unit-hooks.js'],
  spec,
  timeout: 30000,
  slow: 2000,
  reporter: './test/support/reporter.cjs',
  'node-option': ['enable-source-maps'],
};
