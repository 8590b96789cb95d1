// The keyed fast path (lifecycle probe, patient read, observation search, record search) answers exactly as the Koa routes
// do — status, the headers that matter and the bytes — because both call the same answer function; anything
// that is not a plain 200 or 304 is left to Koa, which the full handler then reaches (a body the fast path
// read is handed to Koa as it was read).
import { expect } from 'chai';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { buildEndpoint, buildPatient } from '../../../../testkit/factories.js';
import { glucose, heartRate, observationBundle } from '../../../../testkit/observations.js';
import { koaListener } from '../../../../testkit/koa.js';

const COMPARED = ['content-type', 'content-length', 'etag', 'cache-control', 'vary'];

describe('http: the keyed fast path', () => {
  let api: TestApi;
  let koaOnly: Server;
  let koaUrl: string;
  let tenant: Tenant;
  let app: AppKeys;
  let patientId: string;
  let connectionId: string;

  before(async () => {
    // A fixed clock: the search's cursors carry the time it began, so both paths sign the same cursors.
    api = await TestApi.start({ clock: new ManualClock(new Date('2026-11-23T12:00:00.000Z')) });
    await publishTo(api, realSources());
    tenant = await api.tenant();
    app = await appOf(api, tenant);
    connectionId = await connectionOf(
      api,
      tenant,
      app,
      'fast-user',
      api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id,
    );
    const ingested = await api.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
      key: tenant.key,
      body: observationBundle([
        heartRate({ id: 'hr-1' }),
        glucose({ id: 'glu-1' }),
        heartRate({ id: 'hr-2', effectiveDateTime: '2025-01-02T03:04:05Z' }),
      ]),
    });
    expect(ingested.status, ingested.text).to.equal(200);
    patientId = (await api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() })).body
      .id;
    koaOnly = createServer(koaListener(api.koa));
    await new Promise<void>((resolve) => koaOnly.listen(0, '127.0.0.1', resolve));
    koaUrl = `http://127.0.0.1:${(koaOnly.address() as AddressInfo).port}`;
  });
  after(async () => {
    koaOnly.closeAllConnections();
    await new Promise((resolve) => koaOnly.close(resolve));
    await api.close();
  });

  async function both(path: string, headers: Record<string, string>) {
    const [fast, koa] = await Promise.all([fetch(api.url + path, { headers }), fetch(koaUrl + path, { headers })]);
    const read = async (r: Response) => ({
      status: r.status,
      headers: Object.fromEntries(COMPARED.map((h) => [h, r.headers.get(h)])),
      text: await r.text(),
    });
    const [a, b] = await Promise.all([read(fast), read(koa)]);
    expect(a, path).to.deep.equal(b);
    return a;
  }

  it('answers the probe as Koa does: 200, 304, and the errors Koa owns', async () => {
    const first = await both('/api/sdk/v1/app-users/fast-user/lifecycle', { authorization: `Bearer ${app.pk}` });
    expect(first.status).to.equal(200);
    expect(JSON.parse(first.text)).to.deep.equal({ appUserId: 'fast-user', state: 'ACTIVE' });
    expect(
      (
        await both('/api/sdk/v1/app-users/fast-user/lifecycle', {
          authorization: `Bearer ${app.pk}`,
          'if-none-match': first.headers.etag!,
        })
      ).status,
    ).to.equal(304);
    expect(
      (await both('/api/sdk/v1/app-users/never%40seen/lifecycle', { authorization: `Bearer ${app.pk}` })).text,
    ).to.include('UNLINKED');
    expect(
      (await both('/api/sdk/v1/app-users/bad%20id/lifecycle', { authorization: `Bearer ${app.pk}` })).status,
    ).to.equal(400);
    expect(
      (await both('/api/sdk/v1/app-users/%E0%A4%A/lifecycle', { authorization: `Bearer ${app.pk}` })).status,
    ).to.equal(400);
    expect((await both('/api/sdk/v1/app-users/fast-user/lifecycle', {})).status).to.equal(401);
    expect(
      (await both('/api/sdk/v1/app-users/fast-user/lifecycle', { authorization: `Bearer ${tenant.key}` })).status,
    ).to.equal(401);
  });

  it('answers the patient read as Koa does, leaving denials and absences to Koa', async () => {
    const auth = { authorization: `Bearer ${tenant.key}` };
    const first = await both(`/api/platform/v1/patients/${patientId}`, auth);
    expect(first.status).to.equal(200);
    expect(
      (await both(`/api/platform/v1/patients/${patientId}`, { ...auth, 'if-none-match': first.headers.etag! })).status,
    ).to.equal(304);
    expect((await both('/api/platform/v1/patients/00000000-0000-4000-8000-000000000000', auth)).status).to.equal(403);
    const reader = await api.keyFor(tenant.accountId, ['webhook:read']);
    expect(
      (await both(`/api/platform/v1/patients/${patientId}`, { authorization: `Bearer ${reader.key}` })).status,
    ).to.equal(403);
    const other = await api.tenant();
    expect(
      (await both(`/api/platform/v1/patients/${patientId}`, { authorization: `Bearer ${other.key}` })).status,
    ).to.equal(403);
  });

  it('answers the webhook endpoint list as Koa does: pages, cursors, and the errors Koa owns', async () => {
    const auth = { authorization: `Bearer ${tenant.key}` };
    for (let i = 0; i < 3; i++) {
      const created = await api.request('POST', '/api/platform/v1/webhook-endpoints', {
        key: tenant.key,
        body: buildEndpoint(),
      });
      expect(created.status, created.text).to.equal(201);
    }
    // Which path asked for the page: the fast path's serve() is on the stack when it did (Koa's has fastPathFailure).
    const service = api.services.webhookEndpointService;
    const list = service.list.bind(service);
    let fromFastPath = 0;
    service.list = (...args) => {
      if (/\bserve \(.*keyed-fast-path/.test(new Error().stack ?? '')) fromFastPath++;
      return list(...args);
    };
    const first = await both('/api/platform/v1/webhook-endpoints?limit=2', auth);
    expect(first.status).to.equal(200);
    const { data, pagination } = JSON.parse(first.text) as {
      data: unknown[];
      pagination: { nextCursor: string | null; hasMore: boolean };
    };
    expect(data).to.have.length(2);
    expect(pagination.hasMore).to.equal(true);
    // Asked again: the page's cursor, now kept with its last endpoint, is the same.
    expect((await both('/api/platform/v1/webhook-endpoints?limit=2', auth)).text).to.equal(first.text);
    const cursor = encodeURIComponent(pagination.nextCursor!);
    const second = await both(`/api/platform/v1/webhook-endpoints?limit=2&cursor=${cursor}`, auth);
    expect(JSON.parse(second.text).data).to.have.length(1);
    expect((await both('/api/platform/v1/webhook-endpoints', auth)).status).to.equal(200);
    expect(fromFastPath, 'the four pages above came from the fast path').to.equal(4);
    service.list = list; // counting the valid pages only: the errors below are Koa's
    for (const query of ['limit=0', 'limit=2&limit=3', 'limit=x', `cursor=${cursor}x`])
      expect((await both(`/api/platform/v1/webhook-endpoints?${query}`, auth)).status, query).to.equal(400);
    const other = await api.tenant();
    expect(
      (await both(`/api/platform/v1/webhook-endpoints?cursor=${cursor}`, { authorization: `Bearer ${other.key}` }))
        .status,
    ).to.equal(400);
    const writer = await api.keyFor(tenant.accountId, ['patient:read']);
    expect(
      (await both('/api/platform/v1/webhook-endpoints', { authorization: `Bearer ${writer.key}` })).status,
    ).to.equal(403);
    expect((await both('/api/platform/v1/webhook-endpoints', {})).status).to.equal(401);
  });

  /** One request to each server, with the same Host (the search's links are built from it); a body in `chunks` is sent
   * chunked. */
  async function bothRaw(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string | Buffer | string[],
  ) {
    const send = (base: string) =>
      new Promise<{ status: number; headers: Record<string, string | null>; text: string }>((resolve, reject) => {
        const whole = typeof body === 'string' || Buffer.isBuffer(body);
        const req = request(
          base + path,
          {
            method,
            headers: {
              host: 'api.example.test',
              ...headers,
              ...(whole && { 'content-length': String(Buffer.byteLength(body)) }),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () =>
              resolve({
                status: res.statusCode!,
                headers: Object.fromEntries(
                  [...COMPARED, 'connection'].map((h) => [h, (res.headers[h] as string | undefined) ?? null]),
                ),
                text: Buffer.concat(chunks).toString(),
              }),
            );
          },
        );
        req.on('error', reject);
        for (const piece of whole ? [body] : (body ?? [])) req.write(piece);
        req.end();
      });
    const [fast, koa] = await Promise.all([send(api.url), send(koaUrl)]);
    expect(fast, `${method} ${path}`).to.deep.equal(koa);
    return fast;
  }

  it('answers the observation search as Koa does: POST, the next link, and the bodies and errors Koa owns', async () => {
    const auth = { authorization: `Bearer ${app.ak}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const path = '/api/sdk/v1/observations/_search';
    const first = await bothRaw('POST', path, json, JSON.stringify({ connectionId, _count: 2 }));
    expect(first.status, first.text).to.equal(200);
    expect(first.headers['content-type']).to.equal('application/fhir+json; charset=utf-8');
    expect(first.headers.vary).to.equal('Host');
    const bundle = JSON.parse(first.text);
    expect(bundle.total).to.equal(3);
    const next = new URL(bundle.link.find((l: { relation: string }) => l.relation === 'next').url);
    expect(next.origin).to.equal('http://api.example.test');
    expect(JSON.parse((await bothRaw('GET', next.pathname + next.search, auth)).text).entry).to.have.length(1);
    expect(
      (
        await bothRaw(
          'POST',
          path,
          { ...auth, 'content-type': 'application/fhir+json' },
          JSON.stringify({ connectionId, code: 'http://loinc.org|8867-4' }),
        )
      ).status,
    ).to.equal(200);
    expect(
      (
        await bothRaw(
          'POST',
          path,
          { ...auth, 'content-type': 'application/json; charset=utf-8' },
          JSON.stringify({ connectionId }),
        )
      ).status,
    ).to.equal(200);
    // Chunked: Koa reads it.
    expect(
      (
        await bothRaw('POST', path, { ...json, 'transfer-encoding': 'chunked' }, [
          '{"connectionId":',
          JSON.stringify(connectionId),
          '}',
        ])
      ).status,
    ).to.equal(200);
    // Read by the fast path, then answered by Koa from the same bytes.
    expect((await bothRaw('POST', path, json, JSON.stringify({ connectionId, _count: 0 }))).status).to.equal(400);
    expect((await bothRaw('POST', path, json, '{"connectionId": ')).status).to.equal(400);
    expect(
      (await bothRaw('POST', path, json, JSON.stringify({ connectionId, date: ['gt2024-13-45'] }))).status,
    ).to.equal(400);
    expect(
      (await bothRaw('POST', path, json, JSON.stringify({ connectionId: '00000000-0000-4000-8000-000000000000' })))
        .status,
    ).to.equal(404);
    expect(
      (await bothRaw('POST', path, { ...auth, 'content-type': 'text/plain' }, JSON.stringify({ connectionId }))).status,
    ).to.equal(415);
    const tooLarge = await bothRaw('POST', path, json, JSON.stringify({ connectionId, pad: 'x'.repeat(1024 * 1024) }));
    expect(tooLarge.status).to.equal(413);
    expect(
      (await bothRaw('POST', path, { 'content-type': 'application/json' }, JSON.stringify({ connectionId }))).status,
    ).to.equal(401);
    expect(
      (await bothRaw('POST', path, { ...json, authorization: `Bearer ${app.pk}` }, JSON.stringify({ connectionId })))
        .status,
    ).to.equal(401);
    expect((await bothRaw('GET', `${path}?cursor=forged`, auth)).status).to.equal(400);
    expect((await bothRaw('GET', path, auth)).status).to.equal(400);
    // Bytes that are not UTF-8: refused by both (the fast path leaves them to Koa), never read as U+FFFD.
    const notUtf8 = Buffer.concat([
      Buffer.from(`{"connectionId":${JSON.stringify(connectionId)},"code":"8867-4`),
      Buffer.from([0xff]),
      Buffer.from('"}'),
    ]);
    const refused = await bothRaw('POST', path, json, notUtf8);
    expect(refused.status, refused.text).to.equal(400);
    expect(JSON.parse(refused.text).detail).to.match(/UTF-8/);
    // A method neither path serves: Koa's 405 problem, with Allow.
    const trace = await bothRaw('TRACE', path, auth);
    expect(trace.status).to.equal(405);
    expect(trace.headers['content-type']).to.match(/^application\/problem\+json/);

    // A plain search is answered by the fast path alone (it searches quietly; Koa would search again, logging).
    const gateway = api.services.gateway;
    const calls: (boolean | undefined)[] = [];
    const search = gateway.search.bind(gateway);
    gateway.search = (principal, requestId, input, options) => (
      calls.push(options?.logDenials),
      search(principal, requestId, input, options)
    );
    try {
      expect((await api.request('POST', path, { key: app.ak, body: { connectionId } })).status).to.equal(200);
      expect((await api.request('GET', `${next.pathname}${next.search}`, { key: app.ak })).status).to.equal(200);
      expect(
        (
          await api.request('POST', path, {
            key: app.ak,
            body: { connectionId },
            headers: { 'content-type': 'application/json; charset=utf-8' },
          })
        ).status,
      ).to.equal(200);
      expect(calls).to.deep.equal([false, false, false]);
      calls.length = 0;
      expect(
        (
          await api.request('POST', path, {
            key: app.ak,
            body: { connectionId: '00000000-0000-4000-8000-000000000000' },
          })
        ).status,
      ).to.equal(404);
      expect(calls).to.deep.equal([false, undefined]);
    } finally {
      gateway.search = search;
    }
  });

  it('answers a search of one record type as Koa does, leaving metadata, Observation, denials and problems to Koa', async () => {
    const whole = await appOf(api, tenant, { ...GRANTS, resourceTypes: ['*'] });
    const brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    const records = await connectionOf(api, tenant, whole, 'fast-records', brandId);
    const condition = (id: string, recordedDate: string) => ({
      resourceType: 'Condition',
      id,
      subject: { reference: 'Patient/p-1' },
      code: { coding: [{ system: 'http://snomed.info/sct', code: '44054006' }] },
      clinicalStatus: {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }],
      },
      recordedDate,
    });
    const ingested = await api.request('POST', `/api/platform/v1/connections/${records}/resources`, {
      key: tenant.key,
      body: {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [condition('c-1', '2024-01-01'), condition('c-2', '2025-01-01'), condition('c-3', '2026-01-01')].map(
          (resource) => ({ resource }),
        ),
      },
    });
    expect(ingested.status, ingested.text).to.equal(200);
    const auth = { authorization: `Bearer ${whole.ak}` };
    const base = `/api/sdk/v1/fhir/connections/${records}`;
    const first = await bothRaw('GET', `${base}/Condition?clinical-status=active&_count=2`, auth);
    expect(first.status, first.text).to.equal(200);
    const bundle = JSON.parse(first.text);
    expect(bundle.total).to.equal(3);
    const next = new URL(bundle.link.find((l: { relation: string }) => l.relation === 'next').url);
    expect(JSON.parse((await bothRaw('GET', next.pathname + next.search, auth)).text).entry).to.have.length(1);
    expect((await both(`${base}/Condition?colour=blue`, auth)).status).to.equal(400);
    expect((await both(`${base}/Claim`, auth)).status).to.equal(404);
    // Another app's connection; a type the install was not granted (Observation only).
    expect((await both(`${base}/Condition`, { authorization: `Bearer ${app.ak}` })).status).to.equal(404);
    expect(
      (await both(`/api/sdk/v1/fhir/connections/${connectionId}/Condition`, { authorization: `Bearer ${app.ak}` }))
        .status,
    ).to.equal(403);
    expect((await both(`/api/sdk/v1/fhir/connections/${connectionId}/Condition`, auth)).status).to.equal(404);
    expect((await both(`${base}/Condition`, {})).status).to.equal(401);
    // Routes of their own that the template also matches: the statement needs no key (a wrong one included).
    expect((await both(`${base}/metadata`, { authorization: 'Bearer ak_test_not-a-key' })).status).to.equal(200);
    expect((await bothRaw('GET', `${base}/Observation?_count=1`, auth)).status).to.equal(200);
    // The FHIR face's Observation search: the gateway's own, the record search for other parameters, and problems.
    const observations = `/api/sdk/v1/fhir/connections/${connectionId}/Observation`;
    const gatewayOwn = await bothRaw('GET', `${observations}?code=http://loinc.org|8867-4&_count=1`, {
      authorization: `Bearer ${app.ak}`,
    });
    expect([gatewayOwn.status, JSON.parse(gatewayOwn.text).total]).to.deep.equal([200, 2]);
    const further = JSON.parse(gatewayOwn.text).link.find((l: { relation: string }) => l.relation === 'next').url;
    expect(
      (await bothRaw('GET', new URL(further).pathname + new URL(further).search, { authorization: `Bearer ${app.ak}` }))
        .status,
    ).to.equal(200);
    const other = await bothRaw('GET', `${observations}?status=final`, { authorization: `Bearer ${app.ak}` });
    expect([other.status, JSON.parse(other.text).total]).to.deep.equal([200, 3]);
    expect((await both(`${observations}?colour=blue`, { authorization: `Bearer ${app.ak}` })).status).to.equal(400);
    expect((await both(`${observations}?_count=0`, { authorization: `Bearer ${app.ak}` })).status).to.equal(400);
  });

  it('counts its requests under the Koa route templates', async () => {
    await fetch(`${api.url}/api/sdk/v1/app-users/fast-user/lifecycle`, {
      headers: { authorization: `Bearer ${app.pk}` },
    });
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    expect(metrics).to.match(
      /http_requests_total\{method="GET",route="\/api\/sdk\/v1\/app-users\/:appUserId\/lifecycle",status="200"\} [1-9]/,
    );
    expect(metrics).to.match(
      /http_requests_total\{method="GET",route="\/api\/platform\/v1\/patients\/:id",status="(200|304)"\} [1-9]/,
    );
    expect(metrics).to.match(
      /http_requests_total\{method="POST",route="\/api\/sdk\/v1\/observations\/_search",status="200"\} [1-9]/,
    );
  });
});
