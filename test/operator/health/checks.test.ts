// One endpoint check, through the operator's public-only agent against loopback stubs: the status rules (UP,
// DEGRADED, DOWN), a 404, a TLS failure, a slow server, redirects towards private addresses (refused before
// any connection), conditional requests (a 304 keeps the outcome), and a DOWN confirmed before it shows.
import { expect } from 'chai';
import nock from 'nock';
import { systemScheduler } from '#core/clock.js';
import { afterCheck, type BrandRecord } from '../../../operator/src/health/outcome.js';
import { probe, USER_AGENT } from '../../../operator/src/health/probe.js';
import {
  CAPABILITY_STATEMENT,
  FhirStub,
  SMART_CONFIGURATION,
  type StubAnswer,
  type StubRequest,
} from '../../../testkit/fhir-stub.js';
import { PRIVATE_ADDRESS, settings, stubAgent } from '../../../testkit/health.js';
import { testTls } from '../../../testkit/tls.js';
import { until } from '../../../testkit/until.js';

describe('operator: endpoint checks', function () {
  this.timeout(20_000);
  let stub: FhirStub;
  let untrusted: FhirStub;
  let internal: FhirStub;
  const agent = stubAgent(settings());

  before(async () => {
    nock.restore(); // the agent's own sockets, as in production: nock would stand in front of them
    stub = await FhirStub.start();
    untrusted = await FhirStub.start({ tls: testTls().untrusted });
    internal = await FhirStub.start({ address: PRIVATE_ADDRESS }); // what an SSRF would aim at
  });
  after(async () => {
    nock.activate();
    agent.destroy();
    await Promise.all([stub.close(), untrusted.close(), internal.close()]);
  });
  beforeEach(() => {
    stub.reset();
    internal.reset();
    stub.behaviour = () => undefined;
  });

  /** Both requests of a check, as the sweeper makes them, and the record they lead to (checked at `at`). */
  async function check(
    baseUrl: string,
    previous?: BrandRecord,
    timeoutMs = 2000,
    at = new Date(),
  ): Promise<BrandRecord> {
    // The deadline is real time (a real server is slow), so the durations are measured in real time too.
    const options = { agent, timeoutMs, scheduler: systemScheduler };
    const [metadata, smart] = await Promise.all([
      probe(baseUrl, 'metadata', previous?.metadata, options),
      probe(baseUrl, 'smart-configuration', previous?.smart, options),
    ]);
    return afterCheck(previous, metadata, smart, at);
  }
  const on = (path: string, answer: StubAnswer) => (request: StubRequest) =>
    request.path.endsWith(path) ? answer : undefined;

  it('is UP when /metadata is a CapabilityStatement and the SMART configuration is one; it asks as a FHIR client', async () => {
    const at = new Date('2026-03-01T12:00:00Z');
    const record = await check(stub.baseUrl('up.fhir.test'), undefined, 2000, at);
    expect(record.health).to.deep.include({
      status: 'UP',
      fhirVersion: '4.0.1',
      smartConfiguration: true,
      checkedAt: at.toISOString(),
    });
    const paths = stub.requests.map((r) => r.path).sort();
    expect(paths).to.deep.equal(['/r4/.well-known/smart-configuration', '/r4/metadata']);
    const metadata = stub.requests.find((r) => r.path === '/r4/metadata')!;
    expect(metadata.headers).to.include({
      accept: 'application/fhir+json',
      'user-agent': USER_AGENT,
      host: `up.fhir.test:${stub.port}`,
    });
  });

  it('is DEGRADED with a 404 at /metadata (SMART configuration fine), and with no SMART configuration', async () => {
    stub.behaviour = on('/metadata', { status: 404, body: 'Not Found' });
    const noMetadata = await check(stub.baseUrl('degraded.fhir.test'));
    expect(noMetadata.health).to.deep.include({ status: 'DEGRADED', fhirVersion: null, smartConfiguration: true });
    expect(noMetadata.metadata).to.include({ ok: false, reason: 'http-4xx', status: 404 });

    stub.behaviour = on('/smart-configuration', {
      status: 200,
      body: '<!doctype html><title>Sign in</title>',
      headers: { 'content-type': 'text/html' },
    });
    const noSmart = await check(stub.baseUrl('degraded.fhir.test'));
    expect(noSmart.health).to.deep.include({ status: 'DEGRADED', fhirVersion: '4.0.1', smartConfiguration: false });
    expect(noSmart.smart).to.include({ ok: false, reason: 'invalid' });
  });

  it('is DOWN when neither answers usefully: 5xx, an HTML page, a refused connection', async () => {
    stub.behaviour = (request) =>
      request.path.endsWith('/metadata') ? { status: 503, body: 'busy' } : { status: 200, body: '<html></html>' };
    const record = await check(stub.baseUrl('down.fhir.test'));
    expect(record.health).to.deep.include({ status: 'DOWN', fhirVersion: null, smartConfiguration: false });
    expect([record.metadata.reason, record.smart.reason]).to.deep.equal(['http-5xx', 'invalid']);

    const closed = await check('https://closed.fhir.test:1/r4'); // nothing listens on port 1
    expect(closed.health.status).to.equal('DOWN');
    expect([closed.metadata.reason, closed.smart.reason]).to.deep.equal(['connection', 'connection']);
  });

  it('is DOWN on a TLS failure: a certificate no trusted authority signed', async () => {
    const record = await check(untrusted.baseUrl('selfsigned.fhir.test'));
    expect(record.health.status).to.equal('DOWN');
    expect([record.metadata.reason, record.smart.reason]).to.deep.equal(['tls', 'tls']);
    expect(untrusted.requests).to.have.length(0); // refused during the handshake
  });

  it('gives up on a slow server at the deadline: DOWN, reason timeout, without waiting for it', async () => {
    stub.behaviour = () => ({ status: 200, body: CAPABILITY_STATEMENT, delayMs: 60_000 }); // longer than this test may take
    const record = await check(stub.baseUrl('slow.fhir.test'), undefined, 400);
    const slow = stub.statsOf('slow.fhir.test');
    expect([slow.requests, slow.answered], 'requests, and answers sent when the check ended').to.deep.equal([2, 0]);
    expect(record.health.status).to.equal('DOWN');
    expect([record.metadata.reason, record.smart.reason]).to.deep.equal(['timeout', 'timeout']);
  });

  it('does not let a slow-drip error page hold a connection past the deadline', async () => {
    stub.behaviour = () => ({ status: 404, dripMs: 50 });
    const record = await check(stub.baseUrl('drip.fhir.test'), undefined, 400);
    expect(record.health.status).to.equal('DOWN');
    // Both answers came at once (404s); their bodies never end, and the drain gives up at the deadline.
    await until('the dripping connections closed', () => stub.statsOf('drip.fhir.test').inFlight === 0);
  });

  it('refuses redirects to private addresses, by name or literal, before connecting; and a base URL that resolves to one', async () => {
    for (const target of [
      `https://private.fhir.test:${internal.port}/r4/metadata`,
      `https://${PRIVATE_ADDRESS}:${internal.port}/r4/metadata`,
      'https://internal.fhir.test/r4/metadata',
      'https://[::1]/metadata',
      'https://169.254.169.254/latest/meta-data',
    ]) {
      stub.behaviour = () => ({ status: 302, headers: { location: target } });
      const record = await check(stub.baseUrl('redirecting.fhir.test'));
      expect(record.health.status, target).to.equal('DOWN');
      expect([record.metadata.reason, record.smart.reason], target).to.deep.equal([
        'refused-address',
        'refused-address',
      ]);
    }
    const direct = await check(`https://private.fhir.test:${internal.port}/r4`);
    expect([direct.metadata.reason, direct.smart.reason]).to.deep.equal(['refused-address', 'refused-address']);
    expect(internal.hosts()).to.deep.equal([]); // no request, not even a TLS connection
  });

  it('follows a public redirect (each hop checked) and reads the document where it lands', async () => {
    stub.behaviour = (request) =>
      request.host === 'old.fhir.test'
        ? { status: 301, headers: { location: stub.baseUrl('new.fhir.test') + request.path.slice(3) } }
        : undefined;
    const record = await check(stub.baseUrl('old.fhir.test'));
    expect(record.health.status).to.equal('UP');
    expect(stub.requests.map((r) => r.host).sort()).to.deep.equal([
      'new.fhir.test',
      'new.fhir.test',
      'old.fhir.test',
      'old.fhir.test',
    ]);
  });

  it('sends the validators it was given; a 304 keeps the outcome and moves checkedAt', async () => {
    stub.behaviour = (request) => {
      if (request.path.endsWith('/metadata')) {
        if (request.headers['if-modified-since'] === 'Wed, 01 Jan 2026 00:00:00 GMT') return { status: 304 };
        return {
          status: 200,
          body: CAPABILITY_STATEMENT.replace('4.0.1', '4.0.0'),
          headers: { 'last-modified': 'Wed, 01 Jan 2026 00:00:00 GMT' },
        };
      }
      return undefined; // ETag "smart-1", honoured by If-None-Match
    };
    const firstAt = new Date('2026-03-01T12:00:00Z');
    const first = await check(stub.baseUrl('cached.fhir.test'), undefined, 2000, firstAt);
    expect(first.health).to.deep.include({ status: 'UP', fhirVersion: '4.0.0' });
    expect(first.metadata).to.include({ lastModified: 'Wed, 01 Jan 2026 00:00:00 GMT', etag: null });
    expect(first.smart).to.include({ etag: '"smart-1"' });

    stub.reset();
    const secondAt = new Date(firstAt.getTime() + 6 * 3_600_000);
    const second = await check(stub.baseUrl('cached.fhir.test'), first, 2000, secondAt);
    const sent = Object.fromEntries(stub.requests.map((r) => [r.path, r.headers]));
    expect(sent['/r4/metadata']).to.include({ 'if-modified-since': 'Wed, 01 Jan 2026 00:00:00 GMT' });
    expect(sent['/r4/.well-known/smart-configuration']).to.include({ 'if-none-match': '"smart-1"' });
    expect(second.health).to.deep.include({ status: 'UP', fhirVersion: '4.0.0', smartConfiguration: true });
    expect(second.health.checkedAt).to.equal(secondAt.toISOString());
    expect(second.metadata).to.deep.equal(first.metadata);

    // A 304 to a request without validators is not a reading.
    stub.behaviour = () => ({ status: 304 });
    const confused = await check(stub.baseUrl('confused.fhir.test'));
    expect([confused.metadata.reason, confused.smart.reason]).to.deep.equal(['unexpected-304', 'unexpected-304']);
  });

  it('confirms a DOWN after UP with a second check before showing it; an UP in between clears it', async () => {
    const up = await check(stub.baseUrl('flaky.fhir.test'));
    stub.behaviour = () => ({ status: 502 });
    const suspect = await check(stub.baseUrl('flaky.fhir.test'), up);
    expect(suspect.health).to.equal(up.health); // still shown as UP
    expect(suspect.suspectSince).to.be.a('number');
    const confirmed = await check(stub.baseUrl('flaky.fhir.test'), suspect);
    expect(confirmed.health.status).to.equal('DOWN');
    expect(confirmed.suspectSince).to.equal(null);

    stub.behaviour = () => undefined;
    const again = await check(stub.baseUrl('flaky.fhir.test'), { ...suspect });
    expect(again.health.status).to.equal('UP');
    expect(again.suspectSince).to.equal(null);
  });

  it('keeps only what it needs of a large CapabilityStatement (the first 64 KiB) and refuses a huge SMART configuration', async () => {
    const huge = CAPABILITY_STATEMENT.replace(
      '"rest":[',
      `"rest":[${'{"mode":"server","resource":[]},'.repeat(200_000)}`,
    );
    stub.behaviour = (request) =>
      request.path.endsWith('/metadata')
        ? { status: 200, body: huge }
        : { status: 200, body: SMART_CONFIGURATION.replace('{', `{"padding":"${'x'.repeat(100_000)}",`) };
    const record = await check(stub.baseUrl('large.fhir.test'));
    expect(record.health).to.deep.include({ status: 'DEGRADED', fhirVersion: '4.0.1', smartConfiguration: false });
    expect(record.smart.reason).to.equal('too-large');
  });
});
