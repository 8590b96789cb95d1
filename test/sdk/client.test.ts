// The SDK against a real API: catalog search, initiating a connect session, the errors it throws, and the
// observation gateway followed across pages.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createPortico, PorticoError, type Portico } from '../../sdk/js/src/index.js';
import { TestApi, type Tenant } from '../../testkit/api.js';
import { appOf, connectionOf, type AppKeys } from '../../testkit/apps.js';
import { publishTo, realSources } from '../../testkit/catalog.js';
import { freePort } from '../../testkit/machine.js';
import { heartRate, observationBundle } from '../../testkit/observations.js';
import { recordingFetch } from './support/recording-fetch.js';

async function rejection(promise: Promise<unknown>): Promise<PorticoError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(PorticoError);
    return error as PorticoError;
  }
  throw new Error('expected a PorticoError, the call succeeded');
}

describe('sdk/js: catalog, connect sessions, errors and the observation gateway', () => {
  let api: TestApi;
  let tenant: Tenant;
  let app: AppKeys;
  let portico: Portico;
  let brandId: string;
  let word: string;

  before(async () => {
    api = await TestApi.start();
    tenant = await api.tenant();
    app = await appOf(api, tenant);
    await publishTo(api, realSources());
    portico = createPortico({ baseUrl: api.url, publishableKey: app.pk, appKey: app.ak });
    const some = await api.request('GET', '/api/sdk/v1/catalog/brands?q=health&limit=1');
    expect(some.body.brands, some.text).to.have.length(1);
    brandId = some.body.brands[0].id;
    word = (some.body.brands[0].name as string).split(/\s+/)[0]!;
  });
  after(() => api.close());

  describe('searchBrands', () => {
    it('returns the catalog search result the API answers', async () => {
      const result = await portico.searchBrands({ q: word, limit: 5 });
      const raw = await api.request('GET', `/api/sdk/v1/catalog/brands?q=${encodeURIComponent(word)}&limit=5`);
      expect(result).to.deep.equal(raw.body);
      expect(result.count).to.be.within(1, 5);
      expect(result.brands.map((brand) => brand.name).join(' ')).to.include(word);
    });

    it('passes platform and near through', async () => {
      const epic = await portico.searchBrands({ q: 'health', platform: 'epic', limit: 10 });
      expect(epic.count).to.be.greaterThan(0);
      expect(epic.brands.every((brand) => brand.platformType === 'EPIC')).to.be.true;
      const near = await portico.searchBrands({ near: '10001', limit: 3 });
      expect(near.brands).to.have.length(3);
      expect(near.brands[0]!.distanceKm).to.be.a('number');
    });

    it('sends no credential (the catalog is public)', async () => {
      const recorded: (string | null)[] = [];
      const sdk = createPortico({
        baseUrl: api.url,
        publishableKey: app.pk,
        fetch: (request) => {
          recorded.push(request.headers.get('authorization'));
          return fetch(request);
        },
      });
      await sdk.searchBrands({ q: word });
      expect(recorded).to.deep.equal([null]);
    });
  });

  describe('initiateConnect', () => {
    it('creates a PENDING session for 30 minutes and the app user becomes LIMITED', async () => {
      const appUserId = `sdk-${randomUUID()}`;
      const before = Date.now();
      const session = await portico.initiateConnect({ appUserId, brandId });
      expect(session).to.include({ appUserId, brandId, status: 'PENDING' });
      expect(session.id).to.match(/^[0-9a-f-]{36}$/);
      expect(Date.parse(session.expiresAt) - before).to.be.within(29 * 60_000, 31 * 60_000);
      const probe = await api.request('GET', `/api/sdk/v1/app-users/${appUserId}/lifecycle`, { key: app.pk });
      expect(probe.body.state).to.equal('LIMITED');
    });

    it('replays an idempotent initiate', async () => {
      const appUserId = `sdk-${randomUUID()}`;
      const idempotencyKey = randomUUID();
      const first = await portico.initiateConnect({ appUserId, brandId }, { idempotencyKey });
      const again = await portico.initiateConnect({ appUserId, brandId }, { idempotencyKey });
      expect(again.id).to.equal(first.id);
    });
  });

  describe('PorticoError', () => {
    it('carries status, code, detail and retryable from the problem details', async () => {
      const error = await rejection(portico.searchBrands({ q: 'x'.repeat(201) }));
      expect(error).to.include({ status: 400, code: 'BAD_REQUEST', retryable: false });
      expect(error.detail).to.be.a('string').that.is.not.empty;
      expect(error.details.errors).to.be.an('array').that.is.not.empty;
      expect(error.requestId).to.be.a('string');
      expect(error.message).to.include('BAD_REQUEST');
    });

    it('for an unknown brand, a refused key and a missing key', async () => {
      const unknown = await rejection(portico.initiateConnect({ appUserId: 'sdk-unknown', brandId: 'b-nope' }));
      expect(unknown).to.include({ status: 400, code: 'BAD_REQUEST' });
      const refused = createPortico({ baseUrl: api.url, publishableKey: `pk_${'x'.repeat(40)}` });
      const unauthorized = await rejection(refused.initiateConnect({ appUserId: 'sdk-refused', brandId }));
      expect(unauthorized).to.include({ status: 401, code: 'UNAUTHORIZED', retryable: false });
      const keyless = createPortico({ baseUrl: api.url });
      const missing = await rejection(keyless.initiateConnect({ appUserId: 'sdk-keyless', brandId }));
      expect(missing).to.include({ status: 0, code: 'MISSING_KEY', retryable: false });
      const gatewayless = await rejection(keyless.searchObservationsPage({ connectionId: randomUUID() }));
      expect(gatewayless.code).to.equal('MISSING_KEY');
    });

    it('with status 0 and retryable when no answer arrives', async () => {
      const nowhere = createPortico({ baseUrl: `http://127.0.0.1:${await freePort()}` });
      const error = await rejection(nowhere.searchBrands({ q: 'health' }));
      expect(error).to.include({ status: 0, code: 'NETWORK_ERROR', retryable: true });
      expect(error.cause).to.be.instanceOf(Error);
    });

    it('refuses a secret app key where a browser document exists', () => {
      const global = globalThis as { document?: unknown };
      global.document = {};
      try {
        expect(() => createPortico({ baseUrl: api.url, appKey: app.ak }))
          .to.throw(PorticoError)
          .with.property('code', 'SECRET_KEY_IN_BROWSER');
        expect(() => createPortico({ baseUrl: api.url, appKey: app.ak, allowSecretKeyInBrowser: true })).not.to.throw();
      } finally {
        delete global.document;
      }
    });
  });

  describe('searchObservations', () => {
    let connectionId: string;
    let ingested: string[];

    before(async () => {
      connectionId = await connectionOf(api, tenant, app, `sdk-obs-${randomUUID()}`, brandId);
      // Heart rates on 23 days (none with a security label the app's grants would hide).
      const resources = Array.from({ length: 23 }, (_, i) =>
        heartRate({ effectiveDateTime: `2024-03-${String(i + 1).padStart(2, '0')}T08:30:00Z` }),
      );
      ingested = resources.map((resource) => resource.id as string);
      const res = await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
        key: tenant.key,
        body: observationBundle(resources),
      });
      expect(res.status, res.text).to.equal(200);
    });

    it('reads one page with its total and the cursor of the next', async () => {
      const first = await portico.searchObservationsPage({ connectionId, _count: 10 });
      expect(first.observations).to.have.length(10);
      expect(first.total).to.equal(23);
      expect(first.bundle).to.include({ resourceType: 'Bundle', type: 'searchset' });
      expect(first.nextCursor).to.be.a('string');
      const second = await portico.searchObservationsPage({ connectionId, cursor: first.nextCursor! });
      expect(second.observations).to.have.length(10);
      const ids = [...first.observations, ...second.observations].map((o) => o.id);
      expect(new Set(ids).size).to.equal(20);
    });

    it('yields every observation across pages by following next', async () => {
      const { fetch, calls } = recordingFetch();
      const sdk = createPortico({ baseUrl: api.url, appKey: app.ak, fetch });
      const seen: string[] = [];
      for await (const observation of sdk.searchObservations({ connectionId, _count: 10, _sort: 'date' })) {
        expect(observation.resourceType).to.equal('Observation');
        seen.push(observation.id as string);
      }
      expect(seen).to.deep.equal(ingested); // oldest first, as ingested
      expect(calls.map((call) => `${call.method} ${call.path.split('?')[0]} ${call.status}`)).to.deep.equal([
        'POST /api/sdk/v1/observations/_search 200',
        'GET /api/sdk/v1/observations/_search 200',
        'GET /api/sdk/v1/observations/_search 200',
      ]);
    });

    it('stops at the first page when the caller stops iterating', async () => {
      const { fetch, calls } = recordingFetch();
      const sdk = createPortico({ baseUrl: api.url, appKey: app.ak, fetch });
      for await (const _ of sdk.searchObservations({ connectionId, _count: 5 })) break;
      expect(calls).to.have.length(1);
    });

    it('throws the gateway’s PorticoError (a connection of nobody’s)', async () => {
      const error = await rejection(portico.searchObservationsPage({ connectionId: randomUUID() }));
      expect(error).to.include({ status: 404, code: 'NOT_FOUND', retryable: false });
    });
  });

  describe('searchRecords and everything', () => {
    let connectionId: string;
    let whole: Portico;

    before(async () => {
      const wholeApp = await appOf(api, tenant, {
        resourceTypes: ['*'],
        loincCodes: ['*'],
        confidentiality: ['N'],
        sensitivity: [],
        lookbackDays: null,
      });
      whole = createPortico({ baseUrl: api.url, appKey: wholeApp.ak });
      connectionId = await connectionOf(api, tenant, wholeApp, `sdk-records-${randomUUID()}`, brandId);
      const conditions = Array.from({ length: 12 }, (_, i) => ({
        resourceType: 'Condition',
        id: `c${i}`,
        subject: { reference: 'Patient/p1' },
        clinicalStatus: {
          coding: [
            { system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: i % 3 ? 'active' : 'resolved' },
          ],
        },
        code: { coding: [{ system: 'http://snomed.info/sct', code: '44054006' }] },
        recordedDate: `2024-0${(i % 9) + 1}-01`,
      }));
      const entry = [{ resourceType: 'Patient', id: 'p1', gender: 'female' }, ...conditions].map((resource) => ({
        resource,
      }));
      const res = await api.request('POST', `/api/platform/v1/connections/${connectionId}/resources`, {
        key: tenant.key,
        body: { resourceType: 'Bundle', type: 'collection', entry },
        headers: { 'content-type': 'application/fhir+json' },
      });
      expect(res.status, res.text).to.equal(200);
    });

    it('searches any record type with FHIR parameters, page after page', async () => {
      const page = await whole.searchRecordsPage(connectionId, 'Condition', {
        'clinical-status': 'active',
        _count: '3',
      });
      expect([page.total, page.resources.length, typeof page.nextCursor]).to.deep.equal([8, 3, 'string']);
      const all: string[] = [];
      for await (const condition of whole.searchRecords(connectionId, 'Condition', {
        'clinical-status': 'active',
        _count: '3',
      }))
        all.push(condition.id);
      expect(all).to.have.length(8);
      expect(new Set(all).size).to.equal(8);
    });

    it('walks the patient’s $everything', async () => {
      const seen: string[] = [];
      for await (const resource of whole.everything(connectionId, 'p1', { _count: 5 }))
        seen.push(`${resource.resourceType}/${resource.id}`);
      expect(seen[0]).to.equal('Patient/p1');
      expect(seen).to.have.length(13);
    });
  });
});
