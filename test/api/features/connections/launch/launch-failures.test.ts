// The launch when the health system's discovery fails, when the session has expired, and what the API's log
// holds of a connection's tokens (nothing), against the sandbox EHR with time the test moves (docs/connecting.md).
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { parseTokenKeys } from '../../../../../api/src/config.js';
import { Keyring } from '../../../../../api/src/features/connections/vault/keyring.js';
import { sealContext } from '../../../../../api/src/features/connections/vault/sealing.js';
import { ManualClock } from '../../../../../testkit/clock.js';
import {
  connectThroughBrowser,
  CookieJar,
  initiateLaunch,
  startSmartWorld,
  throughConsent,
  TOKEN_KEY_1,
  visit,
  type SmartWorld,
} from '../../../../../testkit/smart.js';

describe('the launch when things go wrong (sandbox EHR)', function () {
  this.timeout(60_000);
  let world: SmartWorld;
  const clock = new ManualClock();
  let logs = '';
  before(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    });
    world = await startSmartWorld({ clock, logs: sink });
  });
  after(() => world?.close());

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const failedLaunch = async (appUserId: string) => {
    const { id, authorizeUrl } = await initiateLaunch(world, 'public-v2', appUserId);
    const launched = await throughConsent(authorizeUrl, new CookieJar());
    expect(launched.status, launched.text).to.equal(303);
    return { id, back: launched.location!, authorizeUrl };
  };

  for (const mode of ['no-s256', 'not-json', 'error-500'] as const) {
    it(`fails the session with brand_unavailable when discovery answers ${mode}, and does not keep the failure`, async () => {
      clock.advance(61 * 60_000); // past any discovery the cache holds
      world.ehr.switches.smartConfiguration = mode;
      try {
        const { id, back, authorizeUrl } = await failedLaunch(`discovery-${mode}`);
        expect(Object.fromEntries(back.searchParams)).to.deep.equal({
          from: 'portico',
          session: id,
          status: 'failed',
          error: 'brand_unavailable',
        });
        // The session is FAILED: its link starts no sign-in any more, even once discovery works again.
        world.ehr.switches.smartConfiguration = 'ok';
        expect((await visit(authorizeUrl)).location!.searchParams.get('error')).to.equal('session_used');
      } finally {
        world.ehr.switches.smartConfiguration = 'ok';
      }
      const { back } = await connectThroughBrowser(world, 'public-v2', `discovery-${mode}`);
      expect(back.searchParams.get('status')).to.equal('connected');
    });
  }

  it('keeps a discovery for at most an hour', async () => {
    clock.advance(61 * 60_000);
    expect((await connectThroughBrowser(world, 'public-v2', 'cache-1')).back.searchParams.get('status')).to.equal(
      'connected',
    );
    world.ehr.switches.smartConfiguration = 'error-500';
    try {
      clock.advance(59 * 60_000); // still cached
      expect((await connectThroughBrowser(world, 'public-v2', 'cache-2')).back.searchParams.get('status')).to.equal(
        'connected',
      );
      clock.advance(2 * 60_000); // no longer
      expect((await failedLaunch('cache-3')).back.searchParams.get('error')).to.equal('brand_unavailable');
    } finally {
      world.ehr.switches.smartConfiguration = 'ok';
    }
  });

  it('returns session_expired for a link opened after the session expired, starting no sign-in', async () => {
    const { id, authorizeUrl } = await initiateLaunch(world, 'public-v2', 'expired-link');
    clock.advance(31 * 60_000);
    const launched = await visit(authorizeUrl);
    expect(launched.status).to.equal(303);
    expect(Object.fromEntries(launched.location!.searchParams)).to.deep.include({
      session: id,
      status: 'failed',
      error: 'session_expired',
    });
    expect((await appUser('expired-link')).body.connections).to.deep.equal([]);
  });

  it('writes no token to its log', async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'log-scan');
    const connectionId = back.searchParams.get('connectionId')!;
    const doc = await world.api.mongo.db
      .collection<{ _id: string; access: never; refresh: never }>('connection_tokens')
      .findOne({ _id: connectionId });
    const keyring = new Keyring(parseTokenKeys(TOKEN_KEY_1)!);
    const binding = { accountId: world.tenant.accountId, fhirBaseUrl: world.ehr.fhirBaseUrl('public-v2') };
    const access = keyring.open(doc!.access, sealContext(connectionId, 'access', binding, doc!.access));
    const refresh = keyring.open(doc!.refresh, sealContext(connectionId, 'refresh', binding, doc!.refresh));
    expect(logs.length).to.be.greaterThan(0);
    expect(logs.includes(access)).to.equal(false);
    expect(logs.includes(refresh)).to.equal(false);
  });
});
