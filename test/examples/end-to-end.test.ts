// examples/end-to-end/walk.mjs, run as a user runs it, against a real API (the embedded database, the webhook
// dispatcher delivering to the example's own receiver): so the example a newcomer copies never rots.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../core/src/infra/repo-root.js';
import { ADMIN_TOKEN, TestApi } from '../../testkit/api.js';
import { publishTo, realSources } from '../../testkit/catalog.js';

const run = promisify(execFile);

describe('examples: the end-to-end walk', function () {
  this.timeout(120_000);
  let api: TestApi;
  before(async () => {
    api = await TestApi.start({ dispatch: true, env: { PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
    await publishTo(api, realSources());
  });
  after(() => api.close());

  it('walks account → webhook → patient → app → connect → probe → ingest → FHIR search → revoke', async () => {
    const { stdout } = await run(process.execPath, [path.join(repoRoot(), 'examples', 'end-to-end', 'walk.mjs')], {
      env: { PATH: process.env.PATH ?? '', PORTICO_URL: api.url, PORTICO_ADMIN_TOKEN: ADMIN_TOKEN },
      timeout: 90_000,
    });
    const steps = stdout
      .split('\n')
      .filter((line) => line.startsWith('✔ '))
      .map((line) => line.slice(2).split(':')[0]);
    expect(steps).to.deep.equal([
      'account',
      'secret key',
      'webhook endpoint',
      'patient',
      'app',
      'connect',
      'probe',
      'ingest',
      'FHIR search',
      'revoke',
    ]);
    expect(stdout).to.include('the app user is LIMITED again');
  });
});
