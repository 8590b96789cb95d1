// Mocha's spec reporter plus, at the end, the slowest test files (wall time of each file's suites, hooks
// included; PORTICO_TEST_SLOWEST=<n>, default 15, 0 for none) and one plain closing line ("N passed, N failed,
// N skipped") that CI can read. `npm test` runs mocha four times (scripts/test.sh): with PORTICO_TEST_TOTALS
// naming a file, each run adds its counts and file times to it and reports the totals so far, and
// test/support/test-totals.cjs prints those of the whole `npm test` last.
const Mocha = require('mocha');
const fs = require('node:fs');
const path = require('node:path');

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;

class PorticoReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const started = Date.now();
    const fileMs = new Map();
    const suiteStarts = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) suiteStarts.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const start = suiteStarts.get(suite);
      if (start === undefined) return;
      const file = path.relative(process.cwd(), suite.file);
      fileMs.set(file, (fileMs.get(file) ?? 0) + Date.now() - start);
    });
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats;
      const totals = addToTotals({
        passes,
        failures,
        pending,
        wallMs: Date.now() - started,
        files: Object.fromEntries(fileMs),
      });
      process.stdout.write(slowest(totals));
      process.stdout.write(`\ntests: ${totals.passes} passed, ${totals.failures} failed, ${totals.pending} skipped\n`);
    });
  }
}

/** This run's figures plus those of the earlier runs in PORTICO_TEST_TOTALS (rewritten with the sum). */
function addToTotals(run) {
  const file = process.env.PORTICO_TEST_TOTALS;
  if (!file) return run;
  let earlier = { passes: 0, failures: 0, pending: 0, wallMs: 0, files: {} };
  try {
    earlier = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    // the first run: nothing earlier (or an empty file from mktemp)
  }
  const files = { ...earlier.files };
  for (const [name, ms] of Object.entries(run.files)) files[name] = (files[name] ?? 0) + ms;
  const sum = {
    passes: earlier.passes + run.passes,
    failures: earlier.failures + run.failures,
    pending: earlier.pending + run.pending,
    wallMs: earlier.wallMs + run.wallMs,
    files,
  };
  fs.writeFileSync(file, JSON.stringify(sum));
  return sum;
}

function slowest(totals) {
  const limit = Number(process.env.PORTICO_TEST_SLOWEST ?? 15);
  const files = Object.entries(totals.files).sort((a, b) => b[1] - a[1]);
  if (!(limit > 0) || files.length === 0) return '';
  const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const lines = files.slice(0, limit).map(([name, ms]) => `  ${seconds(ms).padStart(8)}  ${name}`);
  return `\nslowest test files (${Math.min(limit, files.length)} of ${files.length}; mocha ran ${seconds(totals.wallMs)}):\n${lines.join('\n')}\n`;
}

module.exports = PorticoReporter;
module.exports.slowest = slowest;
