// Mocha root hooks: real services up once for the run; no test may reach beyond loopback.
import nock from 'nock';
import { startTestServices, stopTestServices } from './services.js';

export async function mochaGlobalSetup(): Promise<void> {
  await startTestServices();
}

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestServices();
}

export const mochaHooks = {
  beforeAll(): void {
    nock.disableNetConnect();
    nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(host));
  },
};
