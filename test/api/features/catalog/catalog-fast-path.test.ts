// The catalog fast path answers exactly as the Koa routes do — same status, headers and bytes — because both
// call the same answer functions; everything else, errors included, reaches Koa, and no throw ever escapes.
import { expect } from 'chai';
import http, { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RequestObserver } from '../../../../api/src/shared/http/observe.js';
import { catalogFastPath } from '../../../../api/src/features/catalog/fast-path.js';
import { catalogRoutes } from '../../../../api/src/features/catalog/sdk.routes.js';
import { ApiRouter } from '../../../../api/src/shared/http/openapi.js';
import { TestApi } from '../../../../testkit/api.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { koaListener } from '../../../../testkit/koa.js';

/** A GET through node:http (fetch cannot set Host), redirects not followed. */
function get(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Map<string, string>; text: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            headers: new Map(Object.entries(response.headers).map(([k, v]) => [k, String(v)])),
            text,
          }),
        );
      })
      .on('error', reject);
  });
}

const COMPARED_HEADERS = [
  'content-type',
  'content-length',
  'etag',
  'cache-control',
  'location',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'vary',
];

/** The routers' table as the SDK surface registers the catalog's routes. */
function catalogTable(api: TestApi) {
  const router = new ApiRouter('/api/sdk/v1');
  catalogRoutes(router, { catalogAnswers: api.services.catalogAnswers, catalogService: api.services.catalogService });
  return router.table();
}

describe('sdk: the catalog fast path’s routes', () => {
  it('refuses to start when the routers do not serve the paths it answers', () => {
    const observer = new RequestObserver(pino({ level: 'silent' }), new Registry());
    const moved = [
      { operationId: 'searchBrands', method: 'get', path: '/api/sdk/v1/catalog/brands' },
      { operationId: 'getBrand', method: 'get', path: '/api/sdk/v1/catalog/brand/:brandId' },
      { operationId: 'getBrandLogo', method: 'get', path: '/api/sdk/v1/catalog/brands/:brandId/logo' },
    ];
    expect(() => catalogFastPath({} as never, observer, moved)).to.throw(/getBrand as GET/);
  });
});

for (const publicBaseUrl of ['https://api.portico.example', undefined]) {
  describe(`sdk: catalog fast path (${publicBaseUrl ? 'PUBLIC_BASE_URL set' : 'origin from the request'})`, () => {
    let api: TestApi;
    let koaOnly: Server;
    let koaUrl: string;
    let metricsBefore: string;
    let fastOnly: Server;
    let fastOnlyUrl: string;

    before(async () => {
      api = await TestApi.start({ env: publicBaseUrl ? { PUBLIC_BASE_URL: publicBaseUrl } : {} });
      await publishTo(api, realSources());
      koaOnly = createServer(koaListener(api.koa));
      await new Promise<void>((resolve) => koaOnly.listen(0, '127.0.0.1', resolve));
      koaUrl = `http://127.0.0.1:${(koaOnly.address() as AddressInfo).port}`;
      metricsBefore = await (await fetch(`${api.url}/metrics`)).text();
      // The fast path alone: 599 marks a request it declined.
      const fast = catalogFastPath(
        api.services.catalogAnswers,
        new RequestObserver(pino({ level: 'silent' }), new Registry()),
        catalogTable(api),
      );
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

    // Without PUBLIC_BASE_URL the origin comes from Host, which differs between the two servers: send the same.
    async function both(path: string, sent: Record<string, string> = {}) {
      const headers = { host: 'catalog.portico.test', ...sent };
      const [fast, koa] = await Promise.all([get(`${api.url}${path}`, headers), get(`${koaUrl}${path}`, headers)]);
      return { fast, koa, fastText: fast.text, koaText: koa.text };
    }

    it('gives byte-identical answers for lookups, searches and logo redirects (PNG and WebP), including 304s and errors', async () => {
      const search = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=examplelabs')).body.brands[0];
      const plain = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=larkmoor')).body.brands[0];
      const etag = (await both(`/api/sdk/v1/catalog/brands/${plain.id}`)).fast.headers.get('etag')!;
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
        const taken =
          (await fetch(`${fastOnlyUrl}${path}`, { headers: headers ?? {}, redirect: 'manual' })).status !== 599;
        expect(taken, `fast path takes ${path}`).to.equal(i < takenUpTo);
        const { fast, koa, fastText, koaText } = await both(path, headers);
        if (i === 1) expect(fast.status, 'the ETag of the same origin matches').to.equal(304);
        const what = `${path} ${JSON.stringify(headers ?? {})}`;
        expect(fast.status, what).to.equal(koa.status);
        expect(fastText, what).to.equal(koaText);
        for (const name of COMPARED_HEADERS)
          expect(fast.headers.get(name), `${what} ${name}`).to.equal(koa.headers.get(name));
        expect(fast.headers.get('x-request-id'), what).to.match(/^[0-9a-f-]{36}$/);
      }
      const logo = (format: string) =>
        fetch(`${fastOnlyUrl}/api/sdk/v1/catalog/brands/${search.id}/logo?format=${format}`, {
          redirect: 'manual',
        }).then((r) => r.headers.get('location'));
      expect([await logo('png'), await logo('webp')]).to.satisfy(
        ([png, webp]: string[]) => png!.endsWith('.png') && webp!.endsWith('.webp'),
      );
    });

    it('echoes a well-formed X-Request-Id and counts its requests under the Koa route templates', async () => {
      const brand = (await api.request('GET', '/api/sdk/v1/catalog/brands?q=larkmoor')).body.brands[0];
      const res = await fetch(`${api.url}/api/sdk/v1/catalog/brands/${brand.id}`, {
        headers: { 'x-request-id': 'trace-123' },
      });
      expect(res.headers.get('x-request-id')).to.equal('trace-123');
      const metrics = await (await fetch(`${api.url}/metrics`)).text();
      const count = (text: string) =>
        Number(
          /http_requests_total\{method="GET",route="\/api\/sdk\/v1\/catalog\/brands\/:brandId",status="200"\} (\d+)/.exec(
            text,
          )?.[1] ?? 0,
        );
      expect(count(metrics)).to.be.greaterThan(count(metricsBefore));
    });
  });
}
