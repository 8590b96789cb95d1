// Mocha root hooks of the unit run (.mocharc.unit.cjs: every *.unit.test.js, in `npm run test:unit` and as the first
// part of `npm test`'s second lane): no service is started, and starting any process fails the test that tried, so a
// file named as a unit test cannot quietly come to need the database, Redis, Kubernetes, the image or a tool. A test
// that needs them is a plain *.test.ts. Must be loaded before anything that keeps a reference to a child_process
// function (this file imports nothing that does).
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { allowLoopbackOnly } from '../../testkit/loopback-only.js';

const STARTERS = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

for (const name of STARTERS) {
  const refuse = (command: unknown): never => {
    throw new Error(
      `a unit test started a process (child_process.${name} ${String(command)}): *.unit.test.ts files run without processes or services (npm run test:unit); name the file *.test.ts if it needs them`,
    );
  };
  (childProcess as unknown as Record<string, unknown>)[name] = refuse;
}
// `import { spawn } from 'node:child_process'` in the tests' modules then sees the refusing functions too.
syncBuiltinESMExports();

export const mochaHooks = {
  beforeAll(): void {
    allowLoopbackOnly();
  },
};
