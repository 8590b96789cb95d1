import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { OutboundError, policyFetch } from '#core/net/policy-fetch.js';

describe('policyFetch: requests to health systems under the outbound policy', () => {
  let server: http.Server;
  let base: string;
  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/redirect') res.writeHead(302, { location: 'http://169.254.169.254/latest' }).end();
      else if (req.url === '/large') res.end(Buffer.alloc(64 * 1024, 'x'));
      else if (req.url === '/hang') req.socket.setTimeout(0);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const refused = async (promise: Promise<unknown>, reason: OutboundError['reason']) => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(OutboundError);
    expect((error as OutboundError).reason).to.equal(reason);
  };

  it('refuses http and non-public addresses unless insecure destinations are allowed', async () => {
    const strict = policyFetch({ allowInsecure: false, maxBytes: 1024 });
    await refused(strict(`${base}/`), 'refused');
    await refused(strict('https://127.0.0.1/'), 'refused');
    await refused(strict('https://10.0.0.1/'), 'refused');
    await refused(strict('https://user:pw@example.org/'), 'refused');
    const insecure = policyFetch({ allowInsecure: true, maxBytes: 1024 });
    const ok = await insecure(`${base}/`, { method: 'POST', body: new URLSearchParams({ a: 'b' }) });
    expect(await ok.json()).to.deep.equal({ method: 'POST' });
  });

  it('follows no redirect, reads at most maxBytes and stops at the deadline', async () => {
    const fetch = policyFetch({ allowInsecure: true, maxBytes: 1024 });
    const redirect = await fetch(`${base}/redirect`);
    expect(redirect.status).to.equal(302);
    expect(redirect.headers.get('location')).to.equal('http://169.254.169.254/latest');
    await refused(fetch(`${base}/large`), 'too-large');
    await refused(fetch(`${base}/hang`, { signal: AbortSignal.timeout(100) }), 'timeout');
  });
});
