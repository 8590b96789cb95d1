// The catalog fast path answers exactly as the Koa routes do: same status, headers and bytes, for every
// request it takes; everything else reaches Koa untouched.
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RequestObserver } from '../../../api/src/http/observe.js';
import { catalogFastPath } from '../../../api/src/sdk/catalog/fast-path.js';
import { TestApi } from '../../support/api.js';
import { publishTo, realSources } from '../../support/catalog.js';

const COMPARED_HEADERS = ['content-type', 'content-length', 'etag', 'cache-control', 'location', 'access-control-allow-origin', 'access-control-expose-headers', 'vary'];

describe('sdk: catalog fast path', () => {
  let api: TestApi;
  let koaOnly: Server;
  let koaUrl: string;
  let metricsBefore: string;
  let fastOnly: Server;
  let fastOnlyUrl: string;

  before(async () => {
    api = await TestApi.start({ env: { PUBLIC_BASE_URL: 'https://api.portico.example' } }); // one origin for both servers
    await publishTo(api, realSources());
    koaOnly = createServer(api.koa.callback());
    await new Promise<void>((resolve) => koaOnly.listen(0, '127.0.0.1', resolve));
    koaUrl = `http://127.0.0.1:${(koaOnly.address() as AddressInfo).port}`;
    metricsBefore = await (await fetch(`${api.url}/metrics`)).text();
    // The fast path alone: 599 marks a request it declined.
    const fast = catalogFastPath(api.services.catalogService, new RequestObserver(pino({ level: 'silent' }), new Registry()), api.config.publicBaseUrl);
    fastOnly = createServer((req, res) => {
      if (!fast(req, res)) res.writeHead(599).end();
    });
    await new Promise<void>((resolve) => fastOnly.listen(0, '127.0.0.1', resolve));
    fastOnlyUrl = `http://127.0.0.1:${(fastOnly.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const server of [koaOnly, fastOnly]) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await api.close();
  });

  async function both(path: string, headers: Record<string, string> = {}) {
    const [fast, koa] = await Promise.all([fetch(`${api.url}${path}`, { headers, redirect: 'manual' }), fetch(`${koaUrl}${path}`, { headers, redirect: 'manual' })]);
    return { fast, koa, fastText: await fast.text(), koaText: await koa.text() };
  }

  it('gives byte-identical answers for lookups, searches and logo redirects (PNG and WebP), including 304s and errors', async () => {
    const search = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=examplelabs')).body.brands[0];
    const plain = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=abbeville')).body.brands[0];
    const etag = (await api.request('GET', `/api/sdk/v1/catalog/brands/${plain.id}`)).headers.get('etag')!;
    const paths: [string, Record<string, string>?][] = [
      [`/api/sdk/v1/catalog/brands/${plain.id}`],
      [`/api/sdk/v1/catalog/brands/${plain.id}`, { 'if-none-match': etag }],
      [`/api/sdk/v1/catalog/brands/${plain.id}`, { 'if-none-match': `W/${etag}, "other"` }],
      ['/api/sdk/v1/catalog/brands?q=mercy%20med'],
      ['/api/sdk/v1/catalog/brands?q=MERCY&platform=epic&limit=7&unknown=1'],
      ['/api/sdk/v1/catalog/brands?q=a'],
      ['/api/sdk/v1/catalog/brands'],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?size=512`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?format=webp`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?size=64&format=webp`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?format=png&size=256`],
      // From here on, not taken by the fast path: Koa answers both, identically.
      [`/api/sdk/v1/catalog/brands/${plain.id}/logo`],
      ['/api/sdk/v1/catalog/brands/bdoesnotexist'],
      ['/api/sdk/v1/catalog/brands?q=mercy&limit=0'],
      ['/api/sdk/v1/catalog/brands?q=mercy&q=mayo'],
      ['/api/sdk/v1/catalog/brands?q=mercy&platform=nope'],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?size=100`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?format=gif`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?format=WEBP`],
      [`/api/sdk/v1/catalog/brands/${search.id}/logo?format=webp&format=png`],
      [`/api/sdk/v1/catalog/brands/${plain.id}/logo?format=webp`],
    ];
    const takenUpTo = 12;
    for (const [i, [path, headers]] of paths.entries()) {
      const taken = (await fetch(`${fastOnlyUrl}${path}`, { headers: headers ?? {}, redirect: 'manual' })).status !== 599;
      expect(taken, `fast path takes ${path}`).to.equal(i < takenUpTo);
      const { fast, koa, fastText, koaText } = await both(path, headers);
      const what = `${path} ${JSON.stringify(headers ?? {})}`;
      expect(fast.status, what).to.equal(koa.status);
      expect(fastText, what).to.equal(koaText);
      for (const name of COMPARED_HEADERS) expect(fast.headers.get(name), `${what} ${name}`).to.equal(koa.headers.get(name));
      expect(fast.headers.get('x-request-id'), what).to.match(/^[0-9a-f-]{36}$/);
    }
    const logo = (format: string) => fetch(`${fastOnlyUrl}/api/sdk/v1/catalog/brands/${search.id}/logo?format=${format}`, { redirect: 'manual' }).then((r) => r.headers.get('location'));
    expect([await logo('png'), await logo('webp')]).to.satisfy(([png, webp]: string[]) => png!.endsWith('.png') && webp!.endsWith('.webp'));
  });

  it('echoes a well-formed X-Request-Id and counts its requests under the Koa route templates', async () => {
    const brand = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=abbeville')).body.brands[0];
    const res = await fetch(`${api.url}/api/sdk/v1/catalog/brands/${brand.id}`, { headers: { 'x-request-id': 'trace-123' } });
    expect(res.headers.get('x-request-id')).to.equal('trace-123');
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    const count = (text: string) => Number(/http_requests_total\{method="GET",route="\/api\/sdk\/v1\/catalog\/brands\/:brandId",status="200"\} (\d+)/.exec(text)?.[1] ?? 0);
    expect(count(metrics)).to.be.greaterThan(count(metricsBefore));
  });
});
