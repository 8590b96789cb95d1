// The gateway as a FHIR server, driven by a stock FHIR client from npm (fhir-kit-client) over real HTTP against the
// embedded database: CapabilityStatement, GET and form-POST search, paging by `next`, read by id and by `fullUrl`,
// and OperationOutcome errors, with the same answers as the gateway's own search (one implementation behind both).
// Twice, like gateway.test.ts: over the connection's in-memory index and over the database.
import { expect } from 'chai';
import { Client } from 'fhir-kit-client';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../../testkit/catalog.js';
import { ManualClock } from '../../../../../testkit/clock.js';
import {
  bloodPressure,
  confidentiality,
  glucose,
  heartRate,
  hemoglobin,
  observationBundle,
  sensitivity,
} from '../../../../../testkit/observations.js';

const SEARCH = '/api/sdk/v1/observations/_search';

interface Bundle {
  [key: string]: unknown;
  resourceType: string;
  total: number;
  link: { relation: string; url: string }[];
  entry?: { fullUrl: string; resource: { id: string; resourceType: string } }[];
}
interface Outcome {
  resourceType: string;
  issue: { severity: string; code: string; details: { text: string }; diagnostics: string }[];
}

/** What fhir-kit-client throws for a non-2xx answer. */
async function refusal(call: Promise<unknown>): Promise<{ status: number; data: Outcome }> {
  try {
    await call;
  } catch (error) {
    const { response } = error as { response?: { status: number; data: Outcome } };
    if (response) return response;
    throw error;
  }
  throw new Error('expected the server to refuse');
}

for (const [path, env] of [
  ['the index', {}],
  ['the database', { PORTICO_GATEWAY_INDEX_MB: '0' }],
] as const) {
  describe(`sdk: the gateway as a FHIR server (fhir-kit-client), searching ${path}`, () => {
    const clock = new ManualClock(new Date('2026-11-23T12:00:00.000Z'));
    let api: TestApi;
    let tenant: Tenant;
    let app: AppKeys;
    let connectionId: string;
    let base: string;
    let client: Client;

    before(async () => {
      api = await TestApi.start({ clock, env });
      await publishTo(api, realSources());
      const brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
      tenant = await api.tenant();
      // Everything but R and HIV: hgb-2024 (R + HIV) is hidden by the grants.
      app = await appOf(api, tenant, { ...GRANTS, confidentiality: ['N'], sensitivity: ['PSY'] });
      connectionId = await connectionOf(api, tenant, app, 'patient-fhir', brandId);
      const res = await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
        key: tenant.key,
        body: observationBundle([
          heartRate({ id: 'hr-2024' }),
          bloodPressure({ id: 'bp-2024' }),
          glucose({ id: 'glu-2024' }),
          hemoglobin({ id: 'hgb-2024' }),
          heartRate({ id: 'hr-recent', effectiveDateTime: '2026-11-20T09:00:00Z' }),
          glucose({
            id: 'glu-psy',
            effectiveDateTime: '2026-10-01T07:00:00Z',
            meta: { security: [confidentiality('N'), sensitivity('PSY')] },
          }),
          heartRate({ id: 'hr-2019', effectiveDateTime: '2019-06-01T10:00:00Z' }),
        ]),
      });
      expect(res.status, res.text).to.equal(200);
      base = `${api.url}/api/sdk/v1/fhir/connections/${connectionId}`;
      client = new Client({ baseUrl: base, bearerToken: app.ak });
    });
    after(() => api.close());

    const gatewaySearch = async (body: Record<string, unknown>) => {
      const res = await api.request('POST', SEARCH, { key: app.ak, body: { connectionId, ...body } });
      expect(res.status, res.text).to.equal(200);
      return res.body as Bundle;
    };
    const ids = (bundle: Bundle) => (bundle.entry ?? []).map((entry) => entry.resource.id);

    it('describes itself: a CapabilityStatement for FHIR 4.0.1 with Observation read and search, without a key', async () => {
      const statement = (await new Client({ baseUrl: base }).capabilityStatement()) as {
        resourceType: string;
        fhirVersion: string;
        format: string[];
        rest: { resource: { type: string; interaction: { code: string }[]; searchParam: { name: string }[] }[] }[];
      };
      expect(statement).to.include({ resourceType: 'CapabilityStatement', fhirVersion: '4.0.1' });
      expect(statement.format).to.include('json');
      const observation = statement.rest[0]!.resource.find((r) => r.type === 'Observation')!;
      expect(observation.interaction.map((i) => i.code)).to.have.members(['read', 'search-type']);
      expect(observation.searchParam.map((p) => p.name)).to.include.members([
        'code',
        'category',
        'date',
        '_count',
        '_sort',
      ]);
    });

    it('searches with GET and with a form POST, answering what the gateway answers', async () => {
      const cases: { params: Record<string, string | string[]>; body: Record<string, unknown> }[] = [
        { params: {}, body: {} },
        { params: { code: 'http://loinc.org|8867-4' }, body: { code: 'http://loinc.org|8867-4' } },
        { params: { code: '2339-0,8867-4', _sort: 'date' }, body: { code: '2339-0,8867-4', _sort: 'date' } },
        { params: { date: ['ge2024-01-01', 'lt2025'] }, body: { date: ['ge2024-01-01', 'lt2025'] } },
        {
          params: { category: 'vital-signs', date: 'ge2020' },
          body: { category: 'vital-signs', date: ['ge2020'] },
        },
      ];
      for (const { params, body } of cases) {
        const expected = await gatewaySearch(body);
        for (const postSearch of [false, true]) {
          const bundle = (await client.search({
            resourceType: 'Observation',
            searchParams: params,
            options: { postSearch },
          })) as unknown as Bundle;
          const label = `${postSearch ? 'POST' : 'GET'} ${JSON.stringify(params)}`;
          expect(bundle.resourceType, label).to.equal('Bundle');
          expect(bundle.total, label).to.equal(expected.total);
          expect(ids(bundle), label).to.deep.equal(ids(expected));
        }
      }
      // GET on _search, which FHIR allows too.
      const viaGet = await fetch(`${base}/Observation/_search?code=${encodeURIComponent('http://loinc.org|8867-4')}`, {
        headers: { authorization: `Bearer ${app.ak}` },
      });
      expect(ids((await viaGet.json()) as Bundle)).to.deep.equal(
        ids(await gatewaySearch({ code: 'http://loinc.org|8867-4' })),
      );
      // The grants hide hgb-2024 from every face.
      expect(ids(await gatewaySearch({}))).to.not.include('hgb-2024');
    });

    it('pages by the next link, which stays on the FHIR base, through every match once', async () => {
      const all = ids(await gatewaySearch({}));
      let bundle = (await client.search({
        resourceType: 'Observation',
        searchParams: { _count: '2' },
      })) as unknown as Bundle;
      const seen = [...ids(bundle)];
      let pages = 1;
      for (;;) {
        const next = bundle.link.find((link) => link.relation === 'next');
        if (!next) break;
        expect(next.url.startsWith(`${base}/Observation?cursor=`), next.url).to.equal(true);
        bundle = (await client.nextPage({ bundle })) as unknown as Bundle;
        expect(bundle.total).to.equal(all.length);
        seen.push(...ids(bundle));
        pages++;
      }
      expect(seen).to.deep.equal(all);
      expect(pages).to.equal(Math.ceil(all.length / 2));
    });

    it("reads an observation by id and by its entry's fullUrl; one the grants hide is not found, like one that does not exist", async () => {
      const read = (await client.read({ resourceType: 'Observation', id: 'hr-recent' })) as unknown as { id: string };
      expect(read).to.include({ resourceType: 'Observation', id: 'hr-recent' });
      const entry = (await gatewaySearch({ code: 'http://loinc.org|8867-4' })).entry![0]!;
      expect(entry.fullUrl).to.equal(`${base}/Observation/hr-recent`);
      const fetched = await fetch(entry.fullUrl, { headers: { authorization: `Bearer ${app.ak}` } });
      expect(fetched.status).to.equal(200);
      expect(fetched.headers.get('content-type')).to.match(/^application\/fhir\+json/);
      expect(await fetched.json()).to.deep.equal(entry.resource);
      for (const id of ['hgb-2024', 'no-such-observation']) {
        const { status, data } = await refusal(client.read({ resourceType: 'Observation', id }));
        expect(status, id).to.equal(404);
        expect(data.resourceType).to.equal('OperationOutcome');
        expect(data.issue[0]).to.include({ severity: 'error', code: 'not-found' });
        expect(data.issue[0]!.details.text).to.equal('NOT_FOUND');
      }
    });

    it('tells every error as an OperationOutcome with the status the gateway gives', async () => {
      const unauthenticated = await refusal(
        new Client({ baseUrl: base }).search({ resourceType: 'Observation', searchParams: {} }),
      );
      expect(unauthenticated.status).to.equal(401);
      expect(unauthenticated.data.issue[0]).to.include({ code: 'security' });

      const invalid = await refusal(client.search({ resourceType: 'Observation', searchParams: { colour: 'x' } }));
      expect(invalid.status).to.equal(400);
      expect(invalid.data.issue[0]).to.include({ code: 'invalid' });
      expect(invalid.data.issue[0]!.details.text).to.equal('BAD_REQUEST');
      expect(invalid.data.issue[0]!.diagnostics).to.contain('colour');

      // Another tenant's connection, and one that does not exist: one identical 404.
      const other = await api.tenant();
      const otherApp = await appOf(api, other, GRANTS);
      const stranger = new Client({ baseUrl: base, bearerToken: otherApp.ak });
      const foreign = await refusal(stranger.search({ resourceType: 'Observation', searchParams: {} }));
      const missing = await refusal(
        new Client({
          baseUrl: `${api.url}/api/sdk/v1/fhir/connections/00000000-0000-4000-8000-000000000000`,
          bearerToken: otherApp.ak,
        }).search({ resourceType: 'Observation', searchParams: {} }),
      );
      expect(foreign.status).to.equal(404);
      expect(foreign.data).to.deep.equal(
        JSON.parse(JSON.stringify(missing.data).replaceAll('00000000-0000-4000-8000-000000000000', connectionId)),
      );
      expect(foreign.data.issue[0]).to.include({ code: 'not-found' });

      // The resource type is not granted: 403 with the reason.
      const patched = await api.admin('PATCH', `/apps/${app.appId}`, {
        status: 'ACTIVE',
        grants: { ...GRANTS, resourceTypes: [] },
      });
      expect(patched.status, patched.text).to.equal(200);
      try {
        const denied = await refusal(client.search({ resourceType: 'Observation', searchParams: {} }));
        expect(denied.status).to.equal(403);
        expect(denied.data.issue[0]).to.include({ code: 'security' });
        expect(denied.data.issue[0]!.details.text).to.equal('RESOURCE_TYPE_NOT_GRANTED');
        const deniedRead = await refusal(client.read({ resourceType: 'Observation', id: 'hr-recent' }));
        expect(deniedRead.status).to.equal(403);
      } finally {
        await api.admin('PATCH', `/apps/${app.appId}`, {
          status: 'ACTIVE',
          grants: { ...GRANTS, confidentiality: ['N'], sensitivity: ['PSY'] },
        });
      }

      // A flood of parameters is refused before it is read; repeated code, a bad _count or _format, each a 400.
      const flood = new URLSearchParams();
      for (let i = 0; i < 100_000; i++) flood.append(`p${i}`, 'x');
      const flooded = await fetch(`${base}/Observation/_search`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.ak}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: flood.toString(),
      });
      expect(flooded.status).to.equal(400);
      expect(((await flooded.json()) as Outcome).issue[0]!.diagnostics).to.include('at most 32');
      for (const query of ['code=a&code=b', '_count=0', '_count=101', '_count=abc', '_format=xml']) {
        const res = await fetch(`${base}/Observation?${query}`, { headers: { authorization: `Bearer ${app.ak}` } });
        expect(res.status, query).to.equal(400);
        expect(((await res.json()) as Outcome).issue[0]!.code, query).to.equal('invalid');
      }
      expect(
        (
          await fetch(`${base}/Observation?_pretty=true&_format=json`, {
            headers: { authorization: `Bearer ${app.ak}` },
          })
        ).status,
      ).to.equal(200);

      // A path the FHIR base does not serve.
      const res = await fetch(`${base}/Claim`, { headers: { authorization: `Bearer ${app.ak}` } });
      expect(res.status).to.equal(404);
      expect(((await res.json()) as Outcome).resourceType).to.equal('OperationOutcome');
    });
  });
}
