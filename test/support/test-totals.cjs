// The last lines of `npm test` (scripts/test.sh): the slowest test files and the counts of every mocha run,
// summed from the totals files the runs' reporter wrote (test/support/reporter.cjs; runs that ran at the same
// time wrote files of their own). Usage: node test/support/test-totals.cjs <totals file>...
const fs = require('node:fs');
const { slowest } = require('./reporter.cjs');

const sum = { passes: 0, failures: 0, pending: 0, wallMs: 0, files: {} };
for (const file of process.argv.slice(2)) {
  let totals;
  try {
    totals = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    continue; // a run that wrote nothing (it could not start): its failure is in its own output
  }
  for (const key of ['passes', 'failures', 'pending']) sum[key] += totals[key];
  sum.wallMs = Math.max(sum.wallMs, totals.wallMs);
  for (const [name, ms] of Object.entries(totals.files)) sum.files[name] = (sum.files[name] ?? 0) + ms;
}
process.stdout.write(slowest(sum).replace('mocha ran', 'the longest lane ran'));
process.stdout.write(`\ntests: ${sum.passes} passed, ${sum.failures} failed, ${sum.pending} skipped\n`);
