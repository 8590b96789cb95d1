// The observation gateway over real HTTP against the embedded database: each check in the documented order,
// each grant filter singly and combined (inside the query: total counts only what the caller may see),
// FHIR parameters, and paging by the `next` link while observations are being ingested. Twice: searching the
// connection's in-memory index (the default), and the database (PORTICO_GATEWAY_INDEX_MB=0, the path of a
// connection too large to index).
import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { generateKey, hashKey } from '../../../../../api/src/shared/http/keys.js';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../../testkit/catalog.js';
import { ManualClock } from '../../../../../testkit/clock.js';
import {
  bloodPressure,
  confidentiality,
  glucose,
  hba1c,
  heartRate,
  hemoglobin,
  observationBundle,
  sensitivity,
} from '../../../../../testkit/observations.js';

const SEARCH = '/api/sdk/v1/observations/_search';
const ALL = { ...GRANTS, confidentiality: ['N', 'R'], sensitivity: ['HIV', 'PSY'] };

for (const [path, env] of [
  ['the index', {}],
  ['the database', { PORTICO_GATEWAY_INDEX_MB: '0' }],
] as const) {
  describe(`sdk: the observation gateway, searching ${path}`, () => {
    const clock = new ManualClock(new Date('2026-11-23T12:00:00.000Z'));
    let logs = '';
    let api: TestApi;
    let tenant: Tenant;
    let app: AppKeys;
    let brandId: string;
    let connectionId: string;
    const ids: Record<string, string> = {};

    before(async () => {
      const stream = new PassThrough();
      stream.on('data', (chunk: Buffer) => (logs += chunk.toString()));
      api = await TestApi.start({ clock, logs: stream, env });
      await publishTo(api, realSources());
      brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
      tenant = await api.tenant();
      app = await appOf(api, tenant, ALL);
      connectionId = await connectionOf(api, tenant, app, 'patient-amy', brandId);
      const resources = {
        hr2024: heartRate({ id: 'hr-2024' }), // 2024-03-05, N
        bp2024: bloodPressure({ id: 'bp-2024' }), // 2024-03-05, N
        glu2024: glucose({ id: 'glu-2024' }), // 2024-03-04, N
        a1c2024: hba1c({ id: 'a1c-2024' }), // 2024-02 (the month), N
        hgb2024: hemoglobin({ id: 'hgb-2024' }), // 2024-03-01, R + HIV
        hrRecent: heartRate({ id: 'hr-recent', effectiveDateTime: '2026-11-20T09:00:00Z' }), // within 7 days
        gluPsy: glucose({
          id: 'glu-psy',
          effectiveDateTime: '2026-10-01T07:00:00Z',
          meta: { security: [confidentiality('N'), sensitivity('PSY')] },
        }),
        hr2019: heartRate({ id: 'hr-2019', effectiveDateTime: '2019-06-01T10:00:00Z' }),
      };
      for (const [name, resource] of Object.entries(resources)) ids[name] = resource.id as string;
      const res = await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
        key: tenant.key,
        body: observationBundle(Object.values(resources)),
      });
      expect(res.status, res.text).to.equal(200);
    });
    after(() => api.close());

    const search = (body: Record<string, unknown>, key = app.ak) =>
      api.request('POST', SEARCH, { key, body: { connectionId, ...body } });
    const idsOf = (bundle: { entry: { resource: { id: string } }[] }) => bundle.entry.map((e) => e.resource.id);
    const setGrants = async (grants: Record<string, unknown>, status = 'ACTIVE') =>
      expect((await api.admin('PATCH', `/apps/${app.appId}`, { status, grants })).status).to.equal(200);

    it('answers a FHIR searchset: newest first, total, self link, absolute fullUrl, search.mode match', async () => {
      const res = await search({});
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/fhir\+json/);
      expect(res.body).to.include({ resourceType: 'Bundle', type: 'searchset', total: 8 });
      expect(idsOf(res.body)).to.deep.equal([
        'hr-recent',
        'glu-psy',
        'hr-2024',
        'bp-2024',
        'glu-2024',
        'hgb-2024',
        'a1c-2024',
        'hr-2019',
      ]);
      expect(res.body.link).to.have.length(1);
      expect(res.body.link[0].relation).to.equal('self');
      expect(res.body.entry[0].fullUrl).to.match(
        new RegExp(`^http://127\\.0\\.0\\.1:\\d+/api/sdk/v1/fhir/connections/${connectionId}/Observation/hr-recent$`),
      );
      expect(res.body.entry[0].search).to.deep.equal({ mode: 'match' });
      expect(res.body.entry[0].resource).to.include({ resourceType: 'Observation', id: 'hr-recent' });
    });

    it('filters by code, category and date (prefixes over ranges), and sorts both ways', async () => {
      expect(idsOf((await search({ code: 'http://loinc.org|8867-4' })).body)).to.deep.equal([
        'hr-recent',
        'hr-2024',
        'hr-2019',
      ]);
      expect(idsOf((await search({ code: '2339-0,4548-4', _sort: 'date' })).body)).to.deep.equal([
        'a1c-2024',
        'glu-2024',
        'glu-psy',
      ]);
      expect(
        (await search({ category: 'http://terminology.hl7.org/CodeSystem/observation-category|laboratory' })).body
          .total,
      ).to.equal(4);
      expect(idsOf((await search({ date: ['ge2024-03-01', 'lt2024-04'] })).body)).to.deep.equal([
        'hr-2024',
        'bp-2024',
        'glu-2024',
        'hgb-2024',
      ]);
      expect(idsOf((await search({ date: ['eq2024-02'] })).body)).to.deep.equal(['a1c-2024']); // the month lies inside February
      expect(idsOf((await search({ date: ['eq2024-02-10'] })).body)).to.deep.equal([]); // a month is not inside a day
      expect(idsOf((await search({ code: '8867-4', date: ['gt2024'] })).body)).to.deep.equal(['hr-recent']);
      expect((await search({ date: ['2024-13'] })).status).to.equal(400);
      expect((await search({ code: '' })).status).to.equal(400);
      expect((await search({ unknown: 1 })).status).to.equal(400);
    });

    it("applies the install's grants inside the query: total counts only what may be seen", async () => {
      try {
        await setGrants({ ...ALL, loincCodes: ['8867-4'] });
        expect((await search({})).body.total).to.equal(3);
        await setGrants({ ...ALL, confidentiality: ['N'] });
        expect(idsOf((await search({})).body)).to.not.include('hgb-2024');
        await setGrants({ ...ALL, sensitivity: ['HIV'] });
        expect(idsOf((await search({})).body)).to.not.include('glu-psy');
        expect(idsOf((await search({})).body)).to.include('hgb-2024');
        await setGrants({ ...ALL, sensitivity: [] });
        expect((await search({})).body.total).to.equal(6);
        await setGrants({ ...ALL, lookbackDays: 7 });
        expect(idsOf((await search({})).body)).to.deep.equal(['hr-recent']);
        await setGrants({ ...ALL, loincCodes: ['2339-0'], sensitivity: [], lookbackDays: 365 * 3 });
        const combined = await search({ date: ['ge2024'] });
        expect(idsOf(combined.body)).to.deep.equal(['glu-2024']);
        expect(combined.body.total).to.equal(1);
      } finally {
        await setGrants(ALL);
      }
    });

    it('checks in order: scope, residency (one identical 404), install, subject, resource type; and logs each denial once', async () => {
      const logsBefore = logs.length;
      // No observation:read: a secret app key stored without the scope.
      const scopeless = generateKey('ak');
      await api.services.keys.insert(hashKey(scopeless), {
        keyId: 'scopeless-key',
        kind: 'ak',
        accountId: tenant.accountId,
        appId: app.appId,
        name: null,
        scopes: [],
        createdAt: clock.now(),
        revokedAt: null,
      });
      const noScope = await search({}, scopeless);
      expect(noScope.status).to.equal(403);
      expect(noScope.body).to.include({ code: 'GATEWAY_ACCESS_DENIED' });
      expect(noScope.body.details).to.deep.equal({ reason: 'INSUFFICIENT_SCOPE' });
      // The scope comes first, ahead of the body's validation.
      const badBody = await api.request('POST', SEARCH, { key: scopeless, body: { nonsense: true } });
      expect(badBody.status).to.equal(403);
      expect(badBody.body.details).to.deep.equal({ reason: 'INSUFFICIENT_SCOPE' });

      // Residency: another app's, another account's, a revoked, an unknown connection: the same 404.
      const otherApp = await appOf(api, tenant, ALL);
      const stranger = await api.tenant();
      const strangerApp = await appOf(api, stranger, ALL);
      const theirs = await connectionOf(api, stranger, strangerApp, 'patient-amy', brandId);
      const revoked = await connectionOf(api, tenant, app, 'patient-bo', brandId);
      await api.request('DELETE', `/api/platform/v1/connections/${revoked}`, { key: tenant.key });
      const answers = [
        await search({}, otherApp.ak),
        await search({ connectionId: theirs }),
        await search({ connectionId: revoked }),
        await search({ connectionId: '00000000-0000-4000-8000-000000000000' }),
      ];
      for (const answer of answers) {
        expect(answer.status).to.equal(404);
        expect({ ...answer.body, instance: undefined }).to.deep.equal({ ...answers[0]!.body, instance: undefined });
      }

      // A suspended app's keys are refused before the gateway looks (the same 401 as an unknown key), so the
      // install check's APP_NOT_INSTALLED only guards a suspension the key check has not seen.
      await setGrants(ALL, 'SUSPENDED');
      expect((await search({})).status).to.equal(401);
      await setGrants(ALL);

      // The subject: a user caught mid-change (a live connection, the state already moved on).
      const user = (await api.services.appUsers.find(tenant.accountId, 'patient-amy'))!;
      await api.services.appUsers.update(
        tenant.accountId,
        'patient-amy',
        user.version,
        { state: 'LIMITED' },
        clock.now(),
        'test-change',
      );
      expect((await search({})).body.details).to.deep.equal({ reason: 'SUBJECT_NOT_ACTIVE' });
      await api.services.appUsers.update(
        tenant.accountId,
        'patient-amy',
        user.version + 1,
        { state: 'ACTIVE' },
        clock.now(),
        'test-change-back',
      );

      await setGrants({ ...ALL, resourceTypes: [] });
      expect((await search({})).body.details).to.deep.equal({ reason: 'RESOURCE_TYPE_NOT_GRANTED' });
      await setGrants(ALL);
      expect((await search({})).status).to.equal(200);

      expect((await search({}, tenant.key)).status).to.equal(401);
      expect((await search({}, app.pk)).status).to.equal(401);
      const denials = logs
        .slice(logsBefore)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'observation gateway denied a search');
      // Eight denied requests, each logged once (the node:http fast path leaves denials to Koa, which logs them).
      expect(denials.map((d) => d.reason)).to.deep.equal([
        'INSUFFICIENT_SCOPE',
        'INSUFFICIENT_SCOPE',
        ...Array(4).fill('CONNECTION_NOT_FOUND'),
        'SUBJECT_NOT_ACTIVE',
        'RESOURCE_TYPE_NOT_GRANTED',
      ]);
      expect(new Set(denials.map((d) => d.requestId)).size).to.equal(8);
      for (const denial of denials) expect(denial.requestId).to.be.a('string');
      const appKeyId = (await api.services.keys.findByHash(hashKey(app.ak)))!.keyId;
      expect(denials.find((d) => d.reason === 'SUBJECT_NOT_ACTIVE')).to.include({ keyId: appKeyId });
      expect(denials.find((d) => d.reason === 'INSUFFICIENT_SCOPE')).to.include({ keyId: 'scopeless-key' });
    });

    it('pages by the next link (GET, same key) and returns every visible observation once while more are ingested', async () => {
      const seen: string[] = [];
      let page = await search({ _count: 3 });
      expect(page.body.total).to.equal(8);
      for (let round = 0; ; round++) {
        seen.push(...idsOf(page.body));
        const next = page.body.link.find((l: { relation: string }) => l.relation === 'next');
        if (!next) break;
        clock.advance(1000);
        const arrival = heartRate({ id: `late-${round}`, effectiveDateTime: '2026-11-22T10:00:00Z' });
        await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
          key: tenant.key,
          body: observationBundle([arrival]),
        });
        const url = new URL(next.url);
        page = await api.request('GET', `${url.pathname}${url.search}`, { key: app.ak });
        expect(page.status, page.text).to.equal(200);
        expect(page.body.total).to.equal(8); // the walk's point in time
      }
      expect(seen).to.deep.equal([
        'hr-recent',
        'glu-psy',
        'hr-2024',
        'bp-2024',
        'glu-2024',
        'hgb-2024',
        'a1c-2024',
        'hr-2019',
      ]);
      const cursor = new URL(
        (await search({ _count: 3 })).body.link.find((l: { relation: string }) => l.relation === 'next').url,
      ).searchParams.get('cursor')!;
      const otherApp = await appOf(api, tenant, ALL);
      expect(
        (await api.request('GET', `${SEARCH}?cursor=${encodeURIComponent(cursor)}`, { key: otherApp.ak })).status,
      ).to.equal(400);
      const continued = await search({ cursor });
      expect(continued.status, continued.text).to.equal(200);
      expect((await search({ cursor, code: '8867-4' })).status).to.equal(400);
      expect((await api.request('GET', `${SEARCH}?cursor=forged`, { key: app.ak })).status).to.equal(400);
    });
  });
}
