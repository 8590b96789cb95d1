// Absolute links without PUBLIC_BASE_URL (docs/api.md, "The catalog search"): the origin comes from a well-formed
// Host, from X-Forwarded-Proto/-Host only when PORTICO_TRUST_PROXY=true, and such responses vary on what they used.
import { expect } from 'chai';
import http from 'node:http';
import { TestApi } from '../../../../testkit/api.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';

function get(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            body: text ? JSON.parse(text) : undefined,
          }),
        );
      })
      .on('error', reject);
  });
}

for (const trustProxy of [false, true]) {
  describe(`sdk: link origins (PORTICO_TRUST_PROXY=${trustProxy})`, () => {
    let api: TestApi;
    let brandId: string;

    before(async () => {
      api = await TestApi.start({ env: trustProxy ? { PORTICO_TRUST_PROXY: 'true' } : {} });
      await publishTo(api, realSources());
      brandId = api.services.activeCatalog.get()!.index.search('examplelabs', { limit: 1 }).brands[0]!.id;
    });
    after(() => api.close());

    it(
      trustProxy
        ? 'takes the forwarded scheme and host, and varies on them'
        : 'ignores forwarded headers and varies on Host',
      async () => {
        const res = await get(`${api.url}/api/sdk/v1/catalog/brands/${brandId}`, {
          host: 'portico.test:8443',
          'x-forwarded-host': 'evil.example',
          'x-forwarded-proto': 'https',
        });
        expect(res.status).to.equal(200);
        const logoUrl = res.body.brand.logoUrl as string;
        if (trustProxy) {
          expect(logoUrl.startsWith('https://evil.example/')).to.equal(true);
          expect(res.headers.vary).to.equal('Host, X-Forwarded-Proto, X-Forwarded-Host');
        } else {
          expect(logoUrl.startsWith('http://portico.test:8443/')).to.equal(true);
          expect(res.headers.vary).to.equal('Host');
        }
      },
    );

    it('refuses a malformed host with 400', async () => {
      const res = await get(`${api.url}/api/sdk/v1/catalog/brands/${brandId}`, {
        host: trustProxy ? 'portico.test' : 'bad host!',
        ...(trustProxy && { 'x-forwarded-host': 'bad host!' }),
      });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('BAD_REQUEST');
    });
  });
}
