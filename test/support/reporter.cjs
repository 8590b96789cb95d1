// Mocha's spec reporter plus one plain closing line ("N passed, N failed, N skipped") that CI can read.
const Mocha = require('mocha');

class PorticoReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats;
      process.stdout.write(`\ntests: ${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

module.exports = PorticoReporter;
