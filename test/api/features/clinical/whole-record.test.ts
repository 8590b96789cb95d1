// The whole record on a connection: a Synthea patient ingested through `POST /connections/{id}/resources`, then
// searched and read on the connection's FHIR base for every type, each US Core search compared with the answer of
// an independent FHIR implementation (Medplum's in-memory repository, @medplum/fhir-router, loaded with the same
// patient), with the grants per type. Twice: over the connection's index and over the database.
import { expect } from 'chai';
import { Client } from 'fhir-kit-client';
import { indexSearchParameterBundle, parseSearchRequest } from '@medplum/core';
import { MemoryRepository } from '@medplum/fhir-router';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { US_CORE_EXTRA_SEARCHES, usCoreExtraRecords } from '../../../../testkit/us-core-extra.js';
import { syntheaFiles, syntheaPatient } from '../../../../sandbox/src/fhir/synthea.js';
import { isRecordType } from '../../../../api/src/features/clinical/record-types.js';
import { warmSearchDefinitions } from '../../../../api/src/features/clinical/search/definitions.js';
import { clinicalDate, searchValues } from '../../../../api/src/features/clinical/search/values.js';

interface Bundle {
  resourceType: string;
  total?: number;
  link: { relation: string; url: string }[];
  entry?: { fullUrl: string; resource: { id: string; resourceType: string }; search?: { mode: string } }[];
}
type Resource = Record<string, unknown> & { resourceType: string; id: string };

/**
 * US Core 6.1's SHALL searches (and a few SHOULD ones), as `Type?query`: `{patient}` is the patient's id, `{gender}`
 * their gender, `{family}` the first three letters of their family name.
 */
const SEARCHES = [
  'AllergyIntolerance?patient={patient}',
  'CarePlan?patient={patient}&category=http://hl7.org/fhir/us/core/CodeSystem/careplan-category|assess-plan',
  'CareTeam?patient={patient}&status=active',
  'Condition?patient={patient}',
  'Condition?patient={patient}&category=encounter-diagnosis',
  'Condition?patient={patient}&clinical-status=http://terminology.hl7.org/CodeSystem/condition-clinical|active',
  'Condition?patient={patient}&code=http://snomed.info/sct|444814009',
  'Condition?patient={patient}&onset-date=ge2015-01-01',
  'Device?patient={patient}',
  'DiagnosticReport?patient={patient}&category=http://loinc.org|34117-2',
  'DiagnosticReport?patient={patient}&category=LAB&date=ge2020',
  'DiagnosticReport?patient={patient}&code=http://loinc.org|34117-2',
  'DocumentReference?patient={patient}',
  'DocumentReference?patient={patient}&category=clinical-note',
  'DocumentReference?patient={patient}&category=clinical-note&date=lt2020',
  'DocumentReference?patient={patient}&type=http://loinc.org|34117-2',
  'Encounter?patient={patient}',
  'Encounter?patient={patient}&date=ge2020-01-01&date=lt2023-01-01',
  'Encounter?patient={patient}&class=AMB',
  'Encounter?patient={patient}&status=finished',
  'Immunization?patient={patient}',
  'Immunization?patient={patient}&date=gt2019',
  'MedicationRequest?patient={patient}&intent=order',
  'MedicationRequest?patient={patient}&intent=order&status=active,stopped',
  'Observation?patient={patient}&category=laboratory',
  'Observation?patient={patient}&code=http://loinc.org|8302-2',
  'Observation?patient={patient}&category=vital-signs&date=ge2021',
  'Procedure?patient={patient}',
  'Procedure?patient={patient}&date=ge2018&date=lt2021',
  'Patient?_id={patient}',
  'Patient?gender={gender}',
  'Patient?family={family}',
];

for (const [path, env] of [
  ['the index', {}],
  ['the database', { PORTICO_GATEWAY_INDEX_MB: '0' }],
] as const) {
  describe(`sdk: the whole record on the FHIR face, searching ${path}`, function () {
    this.timeout(60_000);
    const clock = new ManualClock(new Date('2026-12-02T12:00:00.000Z'));
    let api: TestApi;
    let tenant: Tenant;
    let app: AppKeys;
    let connectionId: string;
    let base: string;
    let client: Client;
    let resources: Resource[];
    let patient: string;
    const oracle = new MemoryRepository();

    before(async () => {
      api = await TestApi.start({ clock, env });
      await publishTo(api, realSources());
      const brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
      tenant = await api.tenant();
      app = await appOf(api, tenant, { ...GRANTS, resourceTypes: ['*'] });
      connectionId = await connectionOf(api, tenant, app, 'patient-whole', brandId);
      // The patient with the most record types (allergies included).
      resources = syntheaFiles()
        .map((file) => syntheaPatient(file).filter((r) => isRecordType(r.resourceType)))
        .sort((a, b) => new Set(b.map((r) => r.resourceType)).size - new Set(a.map((r) => r.resourceType)).size)[0]!;
      patient = resources.find((r) => r.resourceType === 'Patient')!.id;
      // With the types Synthea never writes, so that every record type is stored, searched and served.
      resources.push(...usCoreExtraRecords(patient));
      for (let i = 0; i < resources.length; i += 500) {
        const res = await api.request('POST', `/api/platform/v1/connections/${connectionId}/resources`, {
          key: tenant.key,
          body: {
            resourceType: 'Bundle',
            type: 'collection',
            entry: resources.slice(i, i + 500).map((resource) => ({ resource })),
          },
          headers: { 'content-type': 'application/fhir+json' },
        });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
      }
      warmSearchDefinitions(); // (indexes R4's search parameters for the oracle too)
      indexSearchParameterBundle({ resourceType: 'Bundle', type: 'collection', entry: [] } as never);
      await oracle.withSeeding(async () => {
        for (const resource of resources) await oracle.updateResource(resource as never);
      });
      base = `${api.url}/api/sdk/v1/fhir/connections/${connectionId}`;
      client = new Client({ baseUrl: base, customHeaders: { Authorization: `Bearer ${app.ak}` } });
    });

    after(() => api.close());

    it('counts, per type, what was ingested', async () => {
      const byType = new Map<string, number>();
      for (const r of resources) byType.set(r.resourceType, (byType.get(r.resourceType) ?? 0) + 1);
      for (const [type, count] of byType) {
        const bundle = (await client.search({
          resourceType: type,
          searchParams: { _summary: 'count' },
        })) as unknown as Bundle;
        expect([type, bundle.total, bundle.entry]).to.deep.equal([type, count, undefined]);
      }
    });

    for (const search of [...SEARCHES, ...US_CORE_EXTRA_SEARCHES]) {
      it(`answers ${search} as an independent FHIR server does`, async () => {
        const person = resources.find((r) => r.resourceType === 'Patient') as unknown as {
          gender: string;
          name: { family: string }[];
        };
        const query = search
          .replaceAll('{patient}', patient)
          .replaceAll('{gender}', person.gender)
          .replaceAll('{family}', person.name[0]!.family.slice(0, 3));
        const [type, params] = query.split('?') as [string, string];
        const expected = await oracle.search(parseSearchRequest(`${type}?${params}&_count=1000`));
        const ids: string[] = [];
        let bundle = (await client.search({
          resourceType: type,
          searchParams: Object.fromEntries(new URLSearchParams(`${params}&_count=100`).entries()),
        })) as unknown as Bundle;
        // (A repeated parameter, such as two dates, goes in the query as written.)
        if (params.split('&').length !== new URLSearchParams(params).size || /date=.*&date=/.test(params)) {
          const res = await fetch(`${base}/${type}?${params}&_count=100`, {
            headers: { authorization: `Bearer ${app.ak}` },
          });
          bundle = (await res.json()) as Bundle;
        }
        for (;;) {
          ids.push(...(bundle.entry ?? []).map((e) => e.resource.id));
          const next = bundle.link.find((l) => l.relation === 'next');
          if (!next) break;
          bundle = (await client.nextPage({ bundle } as never)) as unknown as Bundle;
        }
        const wanted = (expected.entry ?? []).map((e) => e.resource!.id).sort();
        expect(ids.sort()).to.deep.equal(wanted);
        expect(wanted.length, 'a search that finds nothing compares nothing').to.be.greaterThan(0);
      });
    }

    it('reads each type by id, the patient included', async () => {
      for (const type of new Set(resources.map((r) => r.resourceType))) {
        const one = resources.find((r) => r.resourceType === type)!;
        expect(await client.read({ resourceType: type, id: one.id })).to.deep.equal(one);
      }
    });

    it('refuses a type it does not serve (404), an unknown parameter (400), and a type the install was not granted (403)', async () => {
      const get = (url: string, key = app.ak) => fetch(url, { headers: { authorization: `Bearer ${key}` } });
      expect((await get(`${base}/Claim?patient=${patient}`)).status).to.equal(404);
      const unknown = await get(`${base}/Condition?colour=blue`);
      expect(unknown.status).to.equal(400);
      expect(((await unknown.json()) as { resourceType: string }).resourceType).to.equal('OperationOutcome');
      const narrow = await appOf(api, tenant, { ...GRANTS, resourceTypes: ['Observation', 'Condition'] });
      const narrowConnection = await connectionOf(
        api,
        tenant,
        narrow,
        'patient-narrow',
        api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id,
      );
      const denied = await get(`${api.url}/api/sdk/v1/fhir/connections/${narrowConnection}/Encounter`, narrow.ak);
      expect(denied.status).to.equal(403);
      const outcome = (await denied.json()) as { issue: { details: { text: string } }[] };
      expect(outcome.issue[0]!.details.text).to.equal('RESOURCE_TYPE_NOT_GRANTED');
      expect(
        (await get(`${api.url}/api/sdk/v1/fhir/connections/${narrowConnection}/Condition`, narrow.ak)).status,
      ).to.equal(200);
    });

    it('answers $everything paged by 100: each granted resource exactly once, the patient first', async () => {
      const seen: string[] = [];
      let bundle = (await (
        await fetch(`${base}/Patient/${patient}/$everything?_count=100`, {
          headers: { authorization: `Bearer ${app.ak}` },
        })
      ).json()) as Bundle;
      expect(bundle.total).to.equal(resources.length);
      expect(bundle.entry![0]!.resource.resourceType).to.equal('Patient');
      for (;;) {
        for (const entry of bundle.entry ?? []) {
          expect(entry.fullUrl).to.equal(`${base}/${entry.resource.resourceType}/${entry.resource.id}`);
          seen.push(`${entry.resource.resourceType}/${entry.resource.id}`);
        }
        const next = bundle.link.find((l) => l.relation === 'next');
        if (!next) break;
        bundle = (await (await fetch(next.url, { headers: { authorization: `Bearer ${app.ak}` } })).json()) as Bundle;
      }
      expect(seen.length).to.equal(new Set(seen).size);
      expect([...seen].sort()).to.deep.equal(resources.map((r) => `${r.resourceType}/${r.id}`).sort());

      const one = await fetch(`${base}/Patient/${patient}/$everything?_type=Condition,Immunization&_count=100`, {
        headers: { authorization: `Bearer ${app.ak}` },
      });
      const only = (await one.json()) as Bundle;
      expect(new Set(only.entry!.map((e) => e.resource.resourceType))).to.deep.equal(
        new Set(['Condition', 'Immunization']),
      );
      const stranger = await fetch(`${base}/Patient/someone-else/$everything`, {
        headers: { authorization: `Bearer ${app.ak}` },
      });
      expect(stranger.status).to.equal(404);
    });

    it('includes the medications of MedicationRequests, and the Provenance of any record', async () => {
      const requests = resources.filter((r) => r.resourceType === 'MedicationRequest');
      const named = new Set(
        requests.flatMap((r) => {
          const reference = (r.medicationReference as { reference?: string } | undefined)?.reference;
          return reference ? [reference] : [];
        }),
      );
      const res = await fetch(`${base}/MedicationRequest?_include=MedicationRequest:medication&_count=100`, {
        headers: { authorization: `Bearer ${app.ak}` },
      });
      const bundle = (await res.json()) as Required<Bundle>;
      const included = bundle.entry.filter((e) => e.search!.mode === 'include');
      expect(included.map((e) => `Medication/${e.resource.id}`).sort()).to.deep.equal([...named].sort());
      expect(bundle.entry.filter((e) => e.search!.mode === 'match').length).to.equal(requests.length);

      const provenance = resources.filter((r) => r.resourceType === 'Provenance');
      const encounters = (await (
        await fetch(`${base}/Encounter?_revinclude=Provenance:target&_count=5`, {
          headers: { authorization: `Bearer ${app.ak}` },
        })
      ).json()) as Required<Bundle>;
      expect(encounters.entry.filter((e) => e.search!.mode === 'include').map((e) => e.resource.id)).to.deep.equal(
        provenance.map((p) => p.id),
      );
      const refused = await fetch(`${base}/Encounter?_include=Encounter:patient`, {
        headers: { authorization: `Bearer ${app.ak}` },
      });
      expect(refused.status).to.equal(400);
    });

    it('describes every record type, its search parameters and $everything in its CapabilityStatement', async () => {
      const statement = (await (await fetch(`${base}/metadata`)).json()) as {
        rest: { resource: { type: string; searchParam?: { name: string }[]; operation?: { name: string }[] }[] }[];
      };
      const types = statement.rest[0]!.resource.map((r) => r.type);
      expect(types).to.include.members([
        'Patient',
        'Condition',
        'MedicationRequest',
        'Encounter',
        'Medication',
        'Binary',
      ]);
      const condition = statement.rest[0]!.resource.find((r) => r.type === 'Condition')!;
      expect(condition.searchParam!.map((p) => p.name)).to.include.members([
        'category',
        'clinical-status',
        'code',
        'onset-date',
        'patient',
        '_id',
        '_lastUpdated',
        'asserted-date',
      ]);
      const patientEntry = statement.rest[0]!.resource.find((r) => r.type === 'Patient')!;
      expect(patientEntry.operation!.map((o) => o.name)).to.deep.equal(['everything']);
    });

    it('applies the look-back window to each type’s clinical date, keeping what has none', async () => {
      const days = 3 * 365;
      const recent = await appOf(api, tenant, { ...GRANTS, resourceTypes: ['*'], lookbackDays: days });
      const brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
      const recentConnection = await connectionOf(api, tenant, recent, 'patient-recent', brandId);
      const body = { resourceType: 'Bundle', type: 'collection', entry: resources.map((resource) => ({ resource })) };
      for (let i = 0; i < resources.length; i += 500) {
        const res = await api.request('POST', `/api/platform/v1/connections/${recentConnection}/resources`, {
          key: tenant.key,
          body: { ...body, entry: body.entry.slice(i, i + 500) },
          headers: { 'content-type': 'application/fhir+json' },
        });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
      }
      const from = clock.now().getTime() - days * 86_400_000;
      let hidden = 0;
      for (const type of ['Condition', 'MedicationRequest', 'Encounter', 'Procedure', 'Immunization', 'CarePlan']) {
        // What the window keeps: a clinical date ending inside it, or none (an Observation without one is left out).
        const kept = resources.filter((r) => {
          if (r.resourceType !== type) return false;
          const date = clinicalDate(type, searchValues(r));
          return date === null || date.e >= from;
        }).length;
        const res = await fetch(`${api.url}/api/sdk/v1/fhir/connections/${recentConnection}/${type}?_summary=count`, {
          headers: { authorization: `Bearer ${recent.ak}` },
        });
        const total = ((await res.json()) as Bundle).total;
        expect([type, total]).to.deep.equal([type, kept]);
        hidden += resources.filter((r) => r.resourceType === type).length - kept;
      }
      expect(hidden, 'the window hides something').to.be.greaterThan(0);
    });

    it('pages a type by _count with next links, each resource once', async () => {
      const ids: string[] = [];
      let bundle = (await client.search({
        resourceType: 'Procedure',
        searchParams: { _count: 25 },
      })) as unknown as Bundle;
      for (;;) {
        ids.push(...(bundle.entry ?? []).map((e) => e.resource.id));
        if (!bundle.link.some((l) => l.relation === 'next')) break;
        bundle = (await client.nextPage({ bundle } as never)) as unknown as Bundle;
      }
      const procedures = resources.filter((r) => r.resourceType === 'Procedure').map((r) => r.id);
      expect(ids.length).to.equal(procedures.length);
      expect([...ids].sort()).to.deep.equal([...procedures].sort());
    });

    it('sorts by each of a type’s clinical dates by its own value: Condition by recorded-date and by onset-date', async () => {
      const brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
      const sorted = await connectionOf(api, tenant, app, 'patient-sorted', brandId);
      // Recorded in one order, begun in the reverse one (Synthea's conditions have both dates equal); one not begun.
      const condition = (id: string, recordedDate: string, onsetDateTime?: string) => ({
        resourceType: 'Condition',
        id,
        subject: { reference: `Patient/${patient}` },
        code: { text: id },
        recordedDate,
        ...(onsetDateTime && { onsetDateTime }),
      });
      const conditions = [
        condition('c-a', '2020-01-01', '2019-03-01'),
        condition('c-b', '2021-01-01', '2018-03-01'),
        condition('c-c', '2022-01-01', '2017-03-01'),
        condition('c-d', '2023-01-01'),
        // Begun, never recorded: its clinical date is its onset, yet by recorded-date it has none.
        { ...condition('c-e', '', '2024-06-01'), recordedDate: undefined },
      ];
      const res = await api.request('POST', `/api/platform/v1/connections/${sorted}/resources`, {
        key: tenant.key,
        body: { resourceType: 'Bundle', type: 'collection', entry: conditions.map((resource) => ({ resource })) },
        headers: { 'content-type': 'application/fhir+json' },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const ids = async (sort: string) =>
        (
          (await (
            await fetch(`${api.url}/api/sdk/v1/fhir/connections/${sorted}/Condition?_sort=${sort}`, {
              headers: { authorization: `Bearer ${app.ak}` },
            })
          ).json()) as Bundle
        ).entry!.map((e) => e.resource.id);
      // Without the value, a record sorts first ascending (as one without a clinical date does).
      expect(await ids('recorded-date')).to.deep.equal(['c-e', 'c-a', 'c-b', 'c-c', 'c-d']);
      expect(await ids('-recorded-date')).to.deep.equal(['c-d', 'c-c', 'c-b', 'c-a', 'c-e']);
      expect(await ids('onset-date')).to.deep.equal(['c-d', 'c-c', 'c-b', 'c-a', 'c-e']);
      expect(await ids('-onset-date')).to.deep.equal(['c-e', 'c-a', 'c-b', 'c-c', 'c-d']);
    });
  });
}
