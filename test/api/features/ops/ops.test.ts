import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parseTagList } from '../../../../api/src/shared/http/conditional.js';
import addFormatsModule from 'ajv-formats';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { buildPatient } from '../../../../testkit/factories.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options'];

const EXPECTED_OPERATIONS = [
  'POST /api/platform/v1/patients',
  'GET /api/platform/v1/patients/{id}',
  'DELETE /api/platform/v1/patients/{id}',
  'POST /api/platform/v1/webhook-endpoints',
  'GET /api/platform/v1/webhook-endpoints',
  'GET /api/platform/v1/webhook-endpoints/{id}',
  'PATCH /api/platform/v1/webhook-endpoints/{id}',
  'DELETE /api/platform/v1/webhook-endpoints/{id}',
  'GET /api/platform/v1/webhook-endpoints/{id}/deliveries',
  'POST /api/platform/v1/webhook-endpoints/{id}/recover',
  'POST /api/platform/v1/webhook-endpoints/{id}/rotate-secret',
  'POST /api/platform/v1/webhook-endpoints/{id}/test',
  'POST /api/admin/v1/customer-accounts',
  'POST /api/admin/v1/customer-accounts/{id}/api-keys',
  'DELETE /api/admin/v1/api-keys/{keyId}',
  'POST /api/admin/v1/customer-accounts/{id}/apps',
  'PATCH /api/admin/v1/apps/{id}',
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /openapi.json',
];

interface Operation {
  key: string;
  path: string;
  op: any;
}

describe('ops: health, readiness, metrics and the OpenAPI document', () => {
  let api: TestApi;
  let tenant: Tenant;
  let doc: any;
  let operations: Operation[];

  before(async () => {
    api = await TestApi.start();
    tenant = await api.tenant();
    const res = await api.request('GET', '/openapi.json');
    expect(res.status).to.equal(200);
    doc = res.body;
    operations = Object.entries<any>(doc.paths ?? {}).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({ key: `${m.toUpperCase()} ${path}`, path, op: item[m] })),
    );
  });
  after(() => api.close());

  it('/healthz answers 200 without a credential', async () => {
    const res = await api.request('GET', '/healthz');
    expect(res.status).to.equal(200);
    expect(res.body).to.be.an('object');
  });

  it('/readyz answers 200 naming each checked dependency', async () => {
    const res = await api.request('GET', '/readyz');
    expect(res.status).to.equal(200);
    expect(res.body.checks).to.be.an('object').that.is.not.empty;
    expect(Object.values(res.body.checks).every((v) => v === true)).to.equal(true);
  });

  it('/readyz answers a 503 problem naming what is down when a dependency does not answer', async () => {
    const withRedis = await TestApi.start({ redis: true });
    try {
      expect((await withRedis.request('GET', '/readyz')).body.checks).to.deep.equal({
        mongodb: true,
        redis: true,
        catalog: true,
      });
      withRedis.redis!.disconnect();
      const res = await withRedis.request('GET', '/readyz');
      expect(res.status).to.equal(503);
      expect(res.headers.get('retry-after')).to.match(/^\d+$/);
      expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', status: 503, retryable: true });
      expect(res.body.detail).to.include('redis').and.not.include('mongodb');
      expect(res.body.details.checks).to.deep.equal({ mongodb: true, redis: false, catalog: true });
    } finally {
      await withRedis.close();
    }
  });

  describe('/metrics', () => {
    const ROUTE = '/api/platform/v1/patients/:id';
    const counterLine = (text: string) =>
      text
        .split('\n')
        .find(
          (l) =>
            l.startsWith('http_requests_total{') &&
            l.includes(`route="${ROUTE}"`) &&
            l.includes('method="GET"') &&
            l.includes('status="200"'),
        );

    it('is the Prometheus text format with request counts and latencies by route template', async () => {
      const patient = await api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() });
      const read = () => api.request('GET', `/api/platform/v1/patients/${patient.body.id}`, { key: tenant.key });
      expect((await read()).status).to.equal(200);
      const first = await api.request('GET', '/metrics');
      expect(first.status).to.equal(200);
      expect(first.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
      expect(first.text).to.match(/^# TYPE http_requests_total counter$/m);
      expect(first.text).to.match(/^# TYPE http_request_duration_seconds histogram$/m);
      const line = counterLine(first.text);
      expect(line, 'a counter for GET patients/:id 200').to.be.a('string');
      expect(first.text).to.match(new RegExp(`^http_request_duration_seconds_bucket\\{[^}]*route="${ROUTE}"`, 'm'));
      expect(first.text).to.not.include(patient.body.id);

      expect((await read()).status).to.equal(200);
      const second = await api.request('GET', '/metrics');
      const value = (l: string | undefined) => Number(l!.split(' ').pop());
      expect(value(counterLine(second.text))).to.equal(value(line) + 1);
    });

    it('does not make a label of an unknown path', async () => {
      const path = `/nowhere-${randomUUID()}`;
      expect((await api.request('GET', path)).status).to.equal(404);
      expect((await api.request('GET', '/metrics')).text).to.not.include(path);
    });
  });

  describe('/openapi.json', () => {
    it('is an OpenAPI 3.1 document', () => {
      expect(doc.openapi).to.match(/^3\.1\.\d+$/);
      expect(doc.info.title).to.be.a('string').that.is.not.empty;
      expect(doc.info.version).to.be.a('string').that.is.not.empty;
    });

    it('describes every operation the API serves', () => {
      expect(operations.map((o) => o.key)).to.include.members(EXPECTED_OPERATIONS);
    });

    it('gives each operation a unique operationId and its responses', () => {
      for (const { key, op } of operations) {
        expect(op.operationId, key).to.be.a('string').that.is.not.empty;
        expect(Object.keys(op.responses ?? {}), key).to.not.be.empty;
        for (const [status, response] of Object.entries<any>(op.responses))
          expect(response.description, `${key} ${status}`).to.be.a('string');
      }
      const ids = operations.map((o) => o.op.operationId);
      expect(new Set(ids).size).to.equal(ids.length);
    });

    it('declares every path parameter, and every security scheme it names', () => {
      const schemes = Object.keys(doc.components?.securitySchemes ?? {});
      for (const { key, path, op } of operations) {
        const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name);
        const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        expect(declared.sort(), key).to.deep.equal(templated.sort());
        for (const requirement of op.security ?? doc.security ?? []) {
          for (const name of Object.keys(requirement)) expect(schemes, `${key} security ${name}`).to.include(name);
        }
      }
    });

    it('documents the webhook PATCH: If-Match, Idempotency-Key and JSON merge patch', () => {
      const patch = doc.paths['/api/platform/v1/webhook-endpoints/{id}'].patch;
      const headers = patch.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name.toLowerCase());
      expect(headers).to.include.members(['if-match', 'idempotency-key']);
      expect(Object.keys(patch.requestBody.content)).to.include.members([
        'application/merge-patch+json',
        'application/json',
      ]);
    });

    it('documents Idempotency-Key on every platform and admin POST, PATCH and DELETE', () => {
      const writes = operations.filter((o) => /^(POST|PATCH|DELETE) \/api\/(platform|admin)\//.test(o.key));
      expect(writes).to.not.be.empty;
      for (const { key, op } of writes) {
        expect(
          (op.parameters ?? []).map((p: any) => `${p.in}:${p.name.toLowerCase()}`),
          key,
        ).to.include('header:idempotency-key');
      }
    });

    it('defines the Problem schema with all eight fields, and it matches what the API sends', async () => {
      const problem = doc.components.schemas.Problem;
      expect(problem.required).to.include.members([
        'type',
        'title',
        'status',
        'detail',
        'instance',
        'code',
        'details',
        'retryable',
      ]);
      const check = addFormats(new Ajv({ strict: false })).compile(problem);
      const sent = await api.request('GET', `/nowhere-${randomUUID()}`);
      expect(check(sent.body), JSON.stringify(check.errors)).to.equal(true);
    });

    it('has request-body schemas that compile with ajv and say what the API accepts', () => {
      // Strict: a misspelt keyword would silently validate nothing. OpenAPI's own schema keywords are allowed.
      const ajv = addFormats(new Ajv({ allErrors: true, strict: true }));
      ajv.addVocabulary(['discriminator', 'xml', 'externalDocs', 'example']);
      // Portico's own string formats (free text), described in the document's notes.
      expect(doc.info.description).to.include('`format: text`');
      for (const format of ['text', 'text-not-blank']) ajv.addFormat(format, true);
      let compiled = 0;
      for (const { key, op } of operations) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
          expect(() => ajv.compile(media.schema), `${key} ${type}`).to.not.throw();
          compiled++;
        }
      }
      expect(compiled).to.be.at.least(EXPECTED_OPERATIONS.filter((k) => /^(POST|PATCH) \/api\//.test(k)).length);
      const patient = ajv.compile(
        doc.paths['/api/platform/v1/patients'].post.requestBody.content['application/json'].schema,
      );
      expect(patient(buildPatient())).to.equal(true);
      expect(patient({ ...buildPatient(), ssn: '123-45-6789' })).to.equal(false);
      expect(patient({ familyName: 'Doe' })).to.equal(false);
    });

    // Found by Schemathesis (test/fuzz/schemathesis.test.ts): schemas that were not JSON Schema 2020-12, and
    // parameters documented looser or stricter than the API checks them.
    it('has only JSON Schema 2020-12 in every parameter, request and response (OpenAPI 3.1)', () => {
      const ajv = addFormats(new Ajv2020({ strict: false }));
      ajv.addSchema(doc.components.schemas.Problem, 'problem');
      let compiled = 0;
      for (const { key, op } of operations) {
        const schemas = [
          ...(op.parameters ?? []).map((p: any) => [`${p.in} ${p.name}`, p.schema]),
          ...Object.entries<any>(op.requestBody?.content ?? {}).map(([type, media]) => [`body ${type}`, media.schema]),
          ...Object.entries<any>(op.responses).flatMap(([status, r]) =>
            Object.entries<any>(r.content ?? {}).map(([type, media]) => [`${status} ${type}`, media.schema]),
          ),
        ];
        for (const [where, schema] of schemas) {
          expect(
            () =>
              ajv.compile(
                JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/Problem', 'problem')) as object,
              ),
            `${key} ${where}`,
          ).to.not.throw();
          compiled++;
        }
      }
      expect(compiled).to.be.greaterThan(100);
    });

    it('documents query parameters with a default as optional, and the values the API takes', () => {
      const parameter = (key: string, name: string) =>
        operations.find((o) => o.key === key)!.op.parameters.find((p: any) => p.name === name);
      for (const [key, name] of [
        ['GET /api/platform/v1/webhook-endpoints', 'limit'],
        ['GET /api/sdk/v1/catalog/brands', 'limit'],
        ['GET /api/sdk/v1/catalog/brands/{brandId}/logo', 'size'],
      ]) {
        expect(parameter(key!, name!).required, `${key} ${name}`).to.equal(false);
      }
      expect(parameter('GET /api/sdk/v1/catalog/brands/{brandId}/logo', 'size').schema.enum).to.deep.equal([
        64, 128, 256, 512,
      ]);
      const platform = new RegExp(parameter('GET /api/sdk/v1/catalog/brands', 'platform').schema.pattern);
      expect(['epic', 'EPIC', 'Practice_Fusion', 'other'].filter((p) => !platform.test(p))).to.deep.equal([]);
      expect(['epic-ish', 'EPICS', '', 'practice fusion'].filter((p) => platform.test(p))).to.deep.equal([]);
      const appUserId = new RegExp(parameter('GET /api/platform/v1/app-users/{appUserId}', 'appUserId').schema.pattern);
      expect([appUserId.test('user-8f3a2c'), appUserId.test('a'.repeat(129)), appUserId.test('a b')]).to.deep.equal([
        true,
        false,
        false,
      ]);
      const cursor = new RegExp(parameter('GET /api/sdk/v1/observations/_search', 'cursor').schema.pattern);
      expect([cursor.test('eyJyIjoiYSJ9.c2ln-_'), cursor.test('0'), cursor.test('a.b.c')]).to.deep.equal([
        true,
        false,
        false,
      ]);
      for (const key of ['POST /api/sdk/v1/observations/_search', 'GET /api/sdk/v1/observations/_search']) {
        expect(Object.keys(operations.find((o) => o.key === key)!.op.responses['200'].content), key).to.deep.equal([
          'application/fhir+json',
        ]);
      }
    });

    it('documents the If-Match and Idempotency-Key syntax the API enforces', async () => {
      const header = (key: string, name: string) =>
        new RegExp(
          operations.find((o) => o.key === key)!.op.parameters.find((p: any) => p.name === name).schema.pattern,
        );
      const ifMatch = header('DELETE /api/platform/v1/patients/{id}', 'If-Match');
      for (const value of [
        '*',
        '"1"',
        'W/"1"',
        '"1", "2"',
        '"a,b",W/"c"',
        '"1",',
        ', "1"',
        '"1",,"2"',
        '',
        '0',
        '1',
        '"1" "2"',
        'W/1',
        '"1", ,',
        '**',
        '"a"b',
      ]) {
        expect(ifMatch.test(value), JSON.stringify(value)).to.equal(value === '' || parseTagList(value) !== undefined);
      }
      const idempotencyKey = header('POST /api/platform/v1/patients', 'Idempotency-Key');
      for (const value of [
        'k',
        '"k"',
        'a'.repeat(255),
        `"${'a'.repeat(255)}"`,
        '"',
        '""',
        'a'.repeat(256),
        'a b',
        'é',
      ]) {
        const res = await api.request('DELETE', `/api/platform/v1/patients/${randomUUID()}`, {
          key: tenant.key,
          headers: { 'Idempotency-Key': value },
        });
        expect(idempotencyKey.test(value), JSON.stringify(value)).to.equal(
          !/Idempotency-Key/.test(res.body?.detail ?? ''),
        );
      }
    });
  });
});
