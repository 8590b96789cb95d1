// examples/end-to-end/walk.mjs, run as a user runs it, against a real API (the embedded database, the webhook
// dispatcher delivering to the example's own receiver, and a sandbox EHR serving the demo catalog's sandbox
// brands, as `npm start` runs one): so the example a newcomer copies never rots.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '#core/infra/repo-root.js';
import { DEMO_BRANDS, DEMO_CLIENT_ID, startSandboxEhr, type SandboxEhr } from '../../sandbox/src/server.js';
import { ADMIN_TOKEN, TestApi } from '../../testkit/api.js';
import { publishTo, realSources } from '../../testkit/catalog.js';
import { sandboxSources } from '../../testkit/sandbox-catalog.js';
import { TOKEN_KEY_1 } from '../../testkit/smart.js';

const run = promisify(execFile);

describe('examples: the end-to-end walk', function () {
  this.timeout(120_000);
  let api: TestApi;
  let ehr: SandboxEhr;
  before(async () => {
    // PORTICO_SANDBOX: the API's built-in registration at the sandbox (its public demo client), as with npm start.
    api = await TestApi.start({
      dispatch: true,
      env: {
        PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        PORTICO_SANDBOX: 'true',
        PORTICO_SMART_ALLOW_INSECURE: 'true',
        PORTICO_TOKEN_KEYS: TOKEN_KEY_1,
      },
    });
    ehr = await startSandboxEhr({
      clients: [
        {
          clientId: DEMO_CLIENT_ID,
          redirectUris: [`${api.url}/api/sdk/v1/connect/callback`],
          auth: { method: 'none' },
        },
      ],
    });
    const sandboxBrands = DEMO_BRANDS.map((brand) => ({ ...brand, platformType: 'OTHER' as const }));
    await publishTo(api, [...realSources(), ...sandboxSources(ehr.origin, sandboxBrands)]);
  });
  after(async () => {
    await api?.close();
    await ehr?.close();
  });

  it('walks account → webhook → patient → app → connect → sign in → probe → ingest → FHIR search → revoke', async () => {
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
      'sign in',
      'probe',
      'ingest',
      'FHIR search',
      'revoke',
    ]);
    expect(stdout).to.match(
      /✔ sign in: walk-\w+ signed in at Portico Sandbox Health: ACTIVE, \?session=[\w-]+&status=connected&connectionId=[\w-]+/,
    );
    expect(stdout).to.include('the app user is LIMITED again');
  });
});
