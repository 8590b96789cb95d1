// What the public catalog does when something behind it fails: a throw while answering is a 500 problem and
// the process keeps serving (the fast path hands the request to Koa instead of crashing), and object storage
// that cannot answer is a retryable 503, never a 404 that says the artwork does not exist.
import { expect } from 'chai';
import { TestApi } from '../../../../testkit/api.js';

describe('sdk: catalog failures', () => {
  it('answers a brand whose stored artwork key is corrupt with a 500 problem and keeps serving', async () => {
    const api = await TestApi.start();
    try {
      const ref = api.config.catalog;
      const brand = {
        id: 'bcorrupt',
        name: 'Corrupt Artwork Clinic',
        aliases: [],
        platformType: 'OTHER' as const,
        fhirBaseUrl: 'https://fhir.corrupt.example/r4',
        city: null,
        state: null,
        portalUrl: null,
      };
      const assets = { '64': '../escape.png', '128': '../escape.png', '256': '../escape.png', '512': '../escape.png' };
      const { header } = await api.services.snapshots.write(
        ref,
        [brand].map((b) => ({ ...b, logo: { kind: 'rendered' as const, assets } })),
      );
      await api.services.snapshots.activate(ref, header.id, null);
      await api.services.activeCatalog.refresh();

      const res = await api.request('GET', '/api/sdk/v1/catalog/brands/bcorrupt/logo');
      expect(res.status).to.equal(500);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(res.body).to.include({ code: 'INTERNAL_ERROR', retryable: true });
      expect(res.text).to.not.include('escape');
      // The same process goes on answering, through the fast path too.
      expect((await api.request('GET', '/healthz')).status).to.equal(200);
      expect((await api.request('GET', '/api/sdk/v1/catalog/brands/bcorrupt')).status).to.equal(200);
    } finally {
      await api.close();
    }
  });

  it('answers an asset with 503 when object storage cannot be reached, and 404 only for a key that cannot exist', async () => {
    // An S3 endpoint nothing listens on: every call fails to connect.
    const api = await TestApi.start({
      env: {
        PORTICO_OBJECT_STORAGE: 's3://portico-down?endpoint=http://127.0.0.1:9&region=us-east-1&forcePathStyle=true',
      },
    });
    try {
      const res = await api.request('GET', '/api/sdk/v1/catalog/assets/logo-0123456789abcdef.png');
      expect(res.status).to.equal(503);
      expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(res.headers.get('retry-after')).to.match(/^\d+$/);
      expect((await api.request('GET', '/api/sdk/v1/catalog/assets/a..b')).status).to.equal(404);
    } finally {
      await api.close();
    }
  });
});
