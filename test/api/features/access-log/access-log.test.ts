// The access log over real HTTP against the embedded database (docs/api.md, "The access log"): a scripted sequence of
// reads and refusals on the SDK gateway (its node:http fast path and Koa) and on the FHIR face is listed back exactly,
// one AuditEvent per request, newest first, each valid against FHIR R4's schema and holding no clinical value; the
// listing pages and filters; another account sees nothing and leaves nothing; entries past the retention are swept.
import { expect } from 'chai';
import { generateKey, hashKey } from '../../../../api/src/shared/http/keys.js';
import { schemaProblems } from '../../../../api/src/features/clinical/ingest/fhir-schema.js';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { glucose, heartRate, observationBundle } from '../../../../testkit/observations.js';

const SEARCH = '/api/sdk/v1/observations/_search';
const USER = 'patient-audited';
const MINUTE = 60_000;

type Event = Record<string, any>;

/** What a test expects of one entry; the AuditEvent's fixed parts follow from `interaction`. */
interface Expected {
  requestId: string;
  interaction: 'search' | 'read' | 'everything' | 'binary';
  resourceType: string | null;
  count: number;
  denied?: string;
  appId: string;
}

const SUBTYPE = { search: 'search-type', everything: 'operation', read: 'read', binary: 'read' } as const;
const ACTION = { search: 'E', everything: 'E', read: 'R', binary: 'R' } as const;
const PROFILE = {
  search: 'PatientQuery',
  everything: 'PatientQuery',
  read: 'PatientRead',
  binary: 'PatientRead',
} as const;

const detail = (event: Event, type: string): string | undefined =>
  event.entity[1].detail.find((d: { type: string }) => d.type === type)?.valueString;

/** The parts of an AuditEvent a test compares, in the shape of Expected. */
function summary(event: Event) {
  return {
    requestId: detail(event, 'requestId'),
    subtype: event.subtype[0].code,
    action: event.action,
    profile: event.meta.tag[0].code,
    outcome: event.outcome,
    outcomeDesc: event.outcomeDesc,
    resourceType: detail(event, 'resourceType') ?? null,
    count: detail(event, 'count'),
    appId: event.agent[0].who.identifier.value,
  };
}

function expected(e: Expected) {
  return {
    requestId: e.requestId,
    subtype: SUBTYPE[e.interaction],
    action: ACTION[e.interaction],
    profile: PROFILE[e.interaction],
    outcome: e.denied === undefined ? '0' : '4',
    outcomeDesc: e.denied,
    resourceType: e.resourceType,
    count: String(e.count),
    appId: e.appId,
  };
}

describe('access log: every read of clinical data, listed as AuditEvents', function () {
  this.timeout(60_000);
  const clock = new ManualClock(new Date('2026-12-01T09:00:00.000Z'));
  let api: TestApi;
  let tenant: Tenant;
  let app: AppKeys;
  let connectionId: string;
  let brandId: string;
  /** Every request the log must hold, oldest first. */
  const recorded: Expected[] = [];
  /** When each was made (the clock moves a minute before each request). */
  const madeAt = new Map<string, Date>();
  let sequence = 0;

  const resources = {
    hrA: heartRate({
      id: 'hr-a',
      valueQuantity: { value: 187.25, unit: 'beats/min', system: 'http://unitsofmeasure.org', code: '/min' },
    }),
    hrB: heartRate({
      id: 'hr-b',
      effectiveDateTime: '2025-01-02T03:04:05Z',
      note: [{ text: 'patient anxious at draw' }],
    }),
    hrC: heartRate({ id: 'hr-c', effectiveDateTime: '2025-06-02T03:04:05Z' }),
    glu: glucose({
      id: 'glu-a',
      valueQuantity: { value: 93.625, unit: 'mg/dL', system: 'http://unitsofmeasure.org', code: 'mg/dL' },
    }),
  };
  const patient = {
    resourceType: 'Patient',
    id: 'pat-audited',
    name: [{ family: 'Quillfeather', given: ['Ottoline'] }],
    gender: 'female',
    birthDate: '1961-04-17',
  };
  const condition = {
    resourceType: 'Condition',
    id: 'cond-audited',
    subject: { reference: 'Patient/pat-audited' },
    code: { coding: [{ system: 'http://snomed.info/sct', code: '44054006', display: 'Diabetes mellitus type 2' }] },
    clinicalStatus: {
      coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }],
    },
  };
  /** Texts of the record and of the searches' parameters that must never reach the log. */
  const CLINICAL = [
    '8867-4',
    'Heart rate',
    '2339-0',
    'Glucose',
    '187.25',
    '93.625',
    'beats/min',
    'mg/dL',
    'patient anxious',
    'Quillfeather',
    'Ottoline',
    '1961-04-17',
    '44054006',
    'Diabetes',
    'vital-signs',
    'ge2025-01-01',
    '2025-01-01',
  ];

  /** A request with its own X-Request-Id, a minute after the previous one. */
  async function call(method: string, path: string, options: { key?: string; body?: unknown } = {}) {
    clock.advance(MINUTE);
    const requestId = `audit-${++sequence}`;
    madeAt.set(requestId, clock.now());
    const res = await api.request(method, path, { ...options, headers: { 'x-request-id': requestId } });
    expect(res.headers.get('x-request-id')).to.equal(requestId);
    return { ...res, requestId };
  }

  const fhir = (path: string, key = app.ak) =>
    call('GET', `/api/sdk/v1/fhir/connections/${connectionId}/${path}`, { key });
  const list = (query: string, key = tenant.key, user = USER) =>
    api.request('GET', `/api/platform/v1/app-users/${user}/access-log?${query}`, { key });
  const scopeless = async (accountId: string, appId: string) => {
    const key = generateKey('ak');
    await api.services.keys.insert(hashKey(key), {
      keyId: `scopeless-${appId}`,
      kind: 'ak',
      accountId,
      appId,
      name: null,
      scopes: [],
      createdAt: clock.now(),
      revokedAt: null,
    });
    return key;
  };

  before(async () => {
    api = await TestApi.start({ clock });
    await publishTo(api, realSources());
    brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await api.tenant();
    // Observations and the patient, not conditions: a search of Condition is refused.
    app = await appOf(api, tenant, { ...GRANTS, resourceTypes: ['Observation', 'Patient'] });
    connectionId = await connectionOf(api, tenant, app, USER, brandId);
    const observations = await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
      key: tenant.key,
      body: observationBundle(Object.values(resources)),
    });
    expect(observations.status, observations.text).to.equal(200);
    const others = await api.request('POST', `/api/platform/v1/connections/${connectionId}/resources`, {
      key: tenant.key,
      body: { resourceType: 'Bundle', type: 'collection', entry: [{ resource: patient }, { resource: condition }] },
      headers: { 'content-type': 'application/fhir+json' },
    });
    expect(others.status, others.text).to.equal(200);
  });
  after(() => api.close());

  /** Which path searched each request: `requestId:fast` or `requestId:koa`. */
  const paths: string[] = [];
  /** The request ids of the FHIR face's searches. */
  const named: Record<string, string> = {};

  // The scripted reads and refusals, made once for every test below (which only read the log).
  before(async () => {
    // Which path searched: the fast path searches with logDenials false and leaves refusals to Koa.
    const gateway = api.services.gateway;
    const search = gateway.search.bind(gateway);
    gateway.search = (principal, requestId, input, options) => (
      paths.push(`${requestId}:${options?.logDenials === false ? 'fast' : 'koa'}`),
      search(principal, requestId, input, options)
    );
    const records = api.services.recordSearch;
    const searchRecords = records.search.bind(records);
    records.search = (principal, requestId, connection, type, parameters, options) => (
      paths.push(`${requestId}:${options?.logDenials === false ? 'fast' : 'koa'}`),
      searchRecords(principal, requestId, connection, type, parameters, options)
    );
    const ok = (e: Omit<Expected, 'appId'> & { appId?: string }) => recorded.push({ appId: app.appId, ...e });
    try {
      // The SDK gateway on the fast path: a page of two of the three heart rates, then its next page.
      const first = await call('POST', SEARCH, {
        key: app.ak,
        body: { connectionId, code: 'http://loinc.org|8867-4', _count: 2 },
      });
      expect(first.status, first.text).to.equal(200);
      expect(first.body.entry).to.have.length(2);
      ok({ requestId: first.requestId, interaction: 'search', resourceType: 'Observation', count: 2 });
      const next = new URL(first.body.link.find((l: { relation: string }) => l.relation === 'next').url);
      const second = await call('GET', next.pathname + next.search, { key: app.ak });
      expect(second.status, second.text).to.equal(200);
      ok({ requestId: second.requestId, interaction: 'search', resourceType: 'Observation', count: 1 });

      // The same search in a chunked body: Koa reads and answers it.
      clock.advance(MINUTE);
      const chunkedId = `audit-${++sequence}`;
      madeAt.set(chunkedId, clock.now());
      const body = JSON.stringify({ connectionId, category: 'vital-signs', date: ['ge2025-01-01'] });
      const chunked = await fetch(api.url + SEARCH, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.ak}`, 'content-type': 'application/json', 'x-request-id': chunkedId },
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(body.slice(0, 10)));
            controller.enqueue(new TextEncoder().encode(body.slice(10)));
            controller.close();
          },
        }),
        duplex: 'half',
      });
      expect(chunked.status, await chunked.clone().text()).to.equal(200);
      expect(((await chunked.json()) as { entry: unknown[] }).entry).to.have.length(2);
      ok({ requestId: chunkedId, interaction: 'search', resourceType: 'Observation', count: 2 });

      // Another app of the same account asks for this connection: a refusal, on the fast path first, recorded
      // once (by Koa), under that app.
      const sibling = await appOf(api, tenant, GRANTS);
      const stranger = await call('POST', SEARCH, { key: sibling.ak, body: { connectionId } });
      expect(stranger.status).to.equal(404);
      ok({
        requestId: stranger.requestId,
        interaction: 'search',
        resourceType: 'Observation',
        count: 0,
        denied: 'CONNECTION_NOT_FOUND',
        appId: sibling.appId,
      });

      // A key without observation:read on the gateway's own search is refused before its body is read: its
      // connection is unknown then, so nothing is recorded.
      const noScope = await scopeless(tenant.accountId, app.appId);
      const unattributed = await call('POST', SEARCH, { key: noScope, body: { connectionId } });
      expect(unattributed.status).to.equal(403);

      // The FHIR face: a read, a read of nothing, a type not granted (fast path, then Koa), $everything, Binary,
      // and a scope refusal on a path naming the connection.
      const read = await fhir('Observation/hr-a');
      expect(read.status, read.text).to.equal(200);
      ok({ requestId: read.requestId, interaction: 'read', resourceType: 'Observation', count: 1 });
      const missing = await fhir('Observation/no-such-id');
      expect(missing.status).to.equal(404);
      ok({ requestId: missing.requestId, interaction: 'read', resourceType: 'Observation', count: 0 });
      const conditions = await fhir('Condition?patient=pat-audited&code=44054006');
      expect(conditions.status).to.equal(403);
      named.conditions = conditions.requestId;
      ok({
        requestId: conditions.requestId,
        interaction: 'search',
        resourceType: 'Condition',
        count: 0,
        denied: 'RESOURCE_TYPE_NOT_GRANTED',
      });
      const fhirSearch = await fhir('Observation?code=http://loinc.org|2339-0');
      expect(fhirSearch.status, fhirSearch.text).to.equal(200);
      named.fhirSearch = fhirSearch.requestId;
      ok({ requestId: fhirSearch.requestId, interaction: 'search', resourceType: 'Observation', count: 1 });
      const everything = await fhir('Patient/pat-audited/$everything?_count=2');
      expect(everything.status, everything.text).to.equal(200);
      expect(everything.body.entry).to.have.length(2);
      ok({ requestId: everything.requestId, interaction: 'everything', resourceType: null, count: 2 });
      const nobody = await fhir('Patient/someone-else/$everything');
      expect(nobody.status).to.equal(404);
      ok({ requestId: nobody.requestId, interaction: 'everything', resourceType: null, count: 0 });
      const binary = await fhir('Binary/no-such-attachment');
      expect(binary.status).to.equal(404);
      ok({ requestId: binary.requestId, interaction: 'binary', resourceType: 'Binary', count: 0 });
      const scopeRefused = await fhir('Observation/hr-a', noScope);
      expect(scopeRefused.status).to.equal(403);
      ok({
        requestId: scopeRefused.requestId,
        interaction: 'read',
        resourceType: 'Observation',
        count: 0,
        denied: 'INSUFFICIENT_SCOPE',
      });
    } finally {
      gateway.search = search;
      records.search = searchRecords;
    }
  });

  it('records each read and refusal once, before answering, and lists exactly them newest first', async () => {
    // Both paths searched: the fast path answered the plain POST, its next link and the FHIR face's search; the
    // chunked body reached Koa; the refusals of a stranger app and of an ungranted type reached Koa after the fast
    // path handed them over. Each was still recorded once (below).
    expect(paths).to.deep.equal([
      `${recorded[0]!.requestId}:fast`,
      `${recorded[1]!.requestId}:fast`,
      `${recorded[2]!.requestId}:koa`,
      `${recorded[3]!.requestId}:fast`,
      `${recorded[3]!.requestId}:koa`,
      `${named.conditions}:fast`,
      `${named.conditions}:koa`,
      `${named.fhirSearch}:fast`,
    ]);

    const listed = await list('limit=100');
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.headers.get('cache-control')).to.match(/no-store|private/);
    expect(listed.body.data.map(summary)).to.deep.equal([...recorded].reverse().map(expected));
    expect(listed.body.pagination).to.deep.equal({ nextCursor: null, hasMore: false });
    for (const event of listed.body.data as Event[]) {
      expect(new Date(event.recorded).getTime(), event.id).to.equal(madeAt.get(detail(event, 'requestId')!)!.getTime());
      expect(event.entity[0].what.identifier.value).to.equal(USER);
      expect(event.entity[1].what.identifier.value).to.equal(connectionId);
      expect(detail(event, 'brandId')).to.equal(brandId);
      expect(event.agent[1].who.identifier.value).to.equal(tenant.accountId);
      expect(event.agent[0].who.display).to.equal('Connect test app');
      expect(event.entity[1].what.display, 'the health system is named').to.be.a('string').and.not.equal('');
    }
  });

  it('holds no clinical value, and every entry is a valid FHIR R4 AuditEvent', async () => {
    const listed = await list('limit=100');
    expect(listed.body.data).to.have.length(recorded.length);
    const text = JSON.stringify(listed.body);
    for (const value of CLINICAL) expect(text, value).not.to.include(value);
    // Nor any of the record's numbers as a JSON number.
    for (const number of [187.25, 93.625, 72, 95]) expect(text).not.to.match(new RegExp(`[:\\[,]${number}[,}\\]]`));
    for (const event of listed.body.data as Event[])
      expect(schemaProblems('AuditEvent', event), JSON.stringify(event)).to.deep.equal([]);
  });

  it('pages newest first by its cursor, filters by since, and refuses a cursor of another list', async () => {
    const all = (await list('limit=100')).body.data.map((e: Event) => e.id);
    const paged: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await list(`limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.status, page.text).to.equal(200);
      expect(page.body.data.length).to.be.at.most(2);
      paged.push(...page.body.data.map((e: Event) => e.id));
      cursor = page.body.pagination.nextCursor;
      expect(page.body.pagination.hasMore).to.equal(cursor !== null);
      pages++;
    } while (cursor);
    expect(paged).to.deep.equal(all);
    expect(pages).to.equal(Math.ceil(all.length / 2));

    // Since the fourth-newest request: those four.
    const since = madeAt.get([...recorded].reverse()[3]!.requestId)!.toISOString();
    const recent = await list(`since=${encodeURIComponent(since)}&limit=2`);
    const rest = await list(
      `since=${encodeURIComponent(since)}&limit=2&cursor=${encodeURIComponent(recent.body.pagination.nextCursor)}`,
    );
    expect([...recent.body.data, ...rest.body.data].map((e: Event) => e.id)).to.deep.equal(all.slice(0, 4));
    expect(rest.body.pagination.nextCursor).to.equal(null);

    // The cursor of one list continues that list only.
    const other = await list(`limit=2&cursor=${encodeURIComponent(recent.body.pagination.nextCursor)}`);
    expect(other.status).to.equal(400);
    const otherSince = await list(
      `since=2026-01-01T00:00:00Z&limit=2&cursor=${encodeURIComponent(recent.body.pagination.nextCursor)}`,
    );
    expect(otherSince.status).to.equal(400);
    expect((await list('limit=0')).status).to.equal(400);
    expect((await list('limit=101')).status).to.equal(400);
    expect((await list('since=yesterday')).status).to.equal(400);
  });

  it('lists nothing to another account, and records nothing of its attempts on this account’s connection', async () => {
    const before = (await list('limit=100')).body.data.length;
    const other = await api.tenant();
    const otherApp = await appOf(api, other, GRANTS);
    const seen = await list('limit=100', other.key);
    expect(seen.status, seen.text).to.equal(200);
    expect(seen.body.data).to.deep.equal([]);

    expect((await call('POST', SEARCH, { key: otherApp.ak, body: { connectionId } })).status).to.equal(404);
    expect((await fhir('Observation/hr-a', otherApp.ak)).status).to.equal(404);
    expect((await fhir('Patient/pat-audited/$everything', otherApp.ak)).status).to.equal(404);
    // Without the scope, on a path naming this connection: refused, and not recorded either.
    expect((await fhir('Observation/hr-a', await scopeless(other.accountId, otherApp.appId))).status).to.equal(403);

    expect((await list('limit=100')).body.data).to.have.length(before);
    expect((await list('limit=100', other.key)).body.data).to.deep.equal([]);
    // (Every write was acknowledged before its answer: nothing is waiting to appear.)
    await api.services.accessLogWriter.flushed();
    expect((await list('limit=100')).body.data).to.have.length(before);
  });

  it('needs app_user:read', async () => {
    const { key } = await api.keyFor(tenant.accountId, ['app_user:write']);
    expect((await list('limit=1', key)).status).to.equal(403);
  });
});

describe('access log: retention (PORTICO_AUDIT_RETENTION)', function () {
  this.timeout(60_000);
  const DAY = 86_400_000;
  const clock = new ManualClock(new Date('2026-12-01T09:00:00.000Z'));
  let api: TestApi;
  let tenant: Tenant;
  let app: AppKeys;
  let connectionId: string;

  before(async () => {
    api = await TestApi.start({ clock, env: { PORTICO_AUDIT_RETENTION: '2d' } });
    await publishTo(api, realSources());
    const brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await api.tenant();
    app = await appOf(api, tenant);
    connectionId = await connectionOf(api, tenant, app, USER, brandId);
  });
  after(() => api.close());

  const searched = async (requestId: string) => {
    const res = await api.request('POST', SEARCH, {
      key: app.ak,
      body: { connectionId },
      headers: { 'x-request-id': requestId },
    });
    expect(res.status, res.text).to.equal(200);
  };
  const requestIds = async () =>
    (
      await api.request('GET', `/api/platform/v1/app-users/${USER}/access-log?limit=100`, { key: tenant.key })
    ).body.data.map((event: Event) => detail(event, 'requestId'));

  it('sweeps the entries older than the retention and keeps the newer ones', async () => {
    await searched('kept-long-ago');
    clock.advance(DAY);
    await searched('kept-yesterday');
    clock.advance(DAY - MINUTE);
    // Two days less a minute: nothing is old enough yet.
    expect(await api.services.accessLogRetention.sweep(1000)).to.equal(0);
    clock.advance(2 * MINUTE);
    expect(await api.services.accessLogRetention.sweep(1000)).to.equal(1);
    expect(await requestIds()).to.deep.equal(['kept-yesterday']);
    clock.advance(DAY);
    expect(await api.services.accessLogRetention.sweep(1000)).to.equal(1);
    expect(await requestIds()).to.deep.equal([]);
  });
});
