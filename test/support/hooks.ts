// Mocha root hooks of the integration run (.mocharc.json): real services up once for the run; no test may
// reach beyond loopback. The unit tests run under ./unit-hooks.ts instead.
import { allowLoopbackOnly } from '../../testkit/loopback-only.js';
import { startTestServices, stopTestServices } from '../../testkit/services.js';

export async function mochaGlobalSetup(): Promise<void> {
  await startTestServices();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestServices();
}

export const mochaHooks = {
  beforeAll(): void {
    allowLoopbackOnly();
  },
};
