import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { TestApi, withTestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildPatient } from '../../../../testkit/factories.js';

const PATIENTS = '/api/platform/v1/patients';
const MIB = 1024 * 1024;

/** Every problem carries all eight fields, consistent with the HTTP status and the request path. */
function expectProblem(res: Response, status: number, code: string, path: string, retryable = false): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json(;|$)/);
  expect(res.body).to.include.all.keys('type', 'title', 'status', 'detail', 'instance', 'code', 'details', 'retryable');
  expect(res.body.type).to.equal(`https://portico.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`);
  expect(res.body.title).to.be.a('string').that.is.not.empty;
  expect(res.body.status).to.equal(status);
  expect(res.body.detail).to.be.a('string').that.is.not.empty;
  expect(res.body.instance).to.equal(path);
  expect(res.body.code).to.equal(code);
  expect(res.body.details).to.be.an('object').that.is.not.an('array');
  expect(res.body.retryable).to.equal(retryable);
}

/** A body of `total` bytes sent chunked (no Content-Length), as a streaming client would. */
function chunkedBody(total: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= total) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.length;
    },
  });
}

/**
 * Over a raw socket (no HTTP client in between to hide what the server does): a chunked upload of `size`
 * bytes, then — unless the server announced `Connection: close` — a second request on the same connection.
 */
function uploadThenReuse(api: TestApi, key: string, size: number): Promise<{ first: string; second: string | null }> {
  const { port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    let first: string | null = null;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer on the reused connection within 20 s (first answer: ${first?.split('\r\n')[0]})`));
    }, 20_000); // only how long a hanging connection takes to fail the test: generous for a loaded machine
    const finish = (second: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ first: first!, second });
    };
    socket.on('error', (error) => (first ? finish(null) : reject(error)));
    socket.on('end', () => first && finish(null));
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      const head = received.indexOf('\r\n\r\n');
      const length = Number(/content-length: *(\d+)/i.exec(received)?.[1] ?? 0);
      if (first === null && head >= 0 && received.length >= head + 4 + length) {
        first = received.slice(0, head + 4 + length);
        received = received.slice(first.length);
        if (/^connection: *close/im.test(first.slice(0, head))) return; // the server closes: fine
        socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      } else if (first !== null && /^HTTP\/1\.1 \d{3}/.test(received) && received.includes('\r\n\r\n')) {
        finish(received);
      }
    });
    socket.write(
      `POST ${PATIENTS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let written = 0;
    const pump = (): void => {
      while (written < size && !socket.destroyed) {
        written += chunk.length;
        if (!socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])))
          return void socket.once('drain', pump);
      }
      if (!socket.destroyed) socket.write('0\r\n\r\n');
    };
    pump();
  });
}

/** Over node:http, which sends any method (fetch refuses TRACE); the body parsed when it is JSON. */
function rawRequest(
  api: TestApi,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(api.url + path, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        const responseHeaders = new Headers(Object.entries(res.headers).map(([name, value]) => [name, String(value)]));
        resolve({
          status: res.statusCode!,
          headers: responseHeaders,
          text,
          body: /json/.test(res.headers['content-type'] ?? '') && text !== '' ? JSON.parse(text) : undefined,
        });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('http: problem details', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  const post = (headers: Record<string, string>, raw: string | Buffer) =>
    api.request('POST', PATIENTS, { key: tenant.key, headers, raw });

  describe('routing', () => {
    it('answers an unknown route with a 404 problem whose instance is the path without the query', async () => {
      const path = `/nowhere-${randomUUID()}`;
      expectProblem(await api.request('GET', `${path}?x=1`), 404, 'NOT_FOUND', path);
      expectProblem(
        await api.request('GET', `/api/platform/v1/unknown`, { key: tenant.key }),
        404,
        'NOT_FOUND',
        '/api/platform/v1/unknown',
      );
    });

    it('answers a known path with another method with 405 and an Allow header listing what is allowed', async () => {
      const res = await api.request('PUT', PATIENTS, { key: tenant.key, body: buildPatient() });
      expectProblem(res, 405, 'METHOD_NOT_ALLOWED', PATIENTS);
      expect(res.headers.get('allow')).to.include('POST');

      const byId = `${PATIENTS}/${randomUUID()}`;
      const other = await api.request('PATCH', byId, { key: tenant.key, body: {} });
      expectProblem(other, 405, 'METHOD_NOT_ALLOWED', byId);
      const allowed = other.headers.get('allow')!.split(/\s*,\s*/);
      expect(allowed).to.include.members(['GET', 'DELETE']).and.not.include('PATCH');
    });

    // Every surface, the operations routes, and the paths the catalog and keyed fast paths answer ahead of Koa.
    const KNOWN_PATHS = [
      '/healthz',
      '/readyz',
      '/metrics',
      '/openapi.json',
      '/api/sdk/v1/catalog/brands',
      '/api/sdk/v1/catalog/brands/some-brand',
      '/api/sdk/v1/catalog/brands/some-brand/logo',
      '/api/sdk/v1/app-users/some-user/lifecycle',
      '/api/sdk/v1/observations/_search',
      PATIENTS,
      `${PATIENTS}/00000000-0000-4000-8000-000000000000`,
      '/api/admin/v1/customer-accounts',
    ];
    for (const method of ['TRACE', 'PROPFIND', 'LOCK', 'PURGE', 'SEARCH']) {
      it(`answers ${method}, which no route serves, with a 405 problem and Allow on every known path`, async () => {
        for (const path of KNOWN_PATHS) {
          const res = await rawRequest(api, method, path, { authorization: `Bearer ${tenant.key}` });
          expectProblem(res, 405, 'METHOD_NOT_ALLOWED', path);
          expect(res.headers.get('allow'), `${method} ${path}`).to.match(/GET|POST/);
        }
      });
    }

    it('answers TRACE on a path nothing serves with a 404 problem', async () => {
      for (const path of ['/nowhere', '/api/sdk/v1/catalog/nowhere', '/api/platform/v1/nowhere'])
        expectProblem(await rawRequest(api, 'TRACE', path), 404, 'NOT_FOUND', path);
    });

    it('takes a next link with a cursor of the largest size, and answers a request head over 32 KiB with a 431 problem', async () => {
      const fits = await rawRequest(
        api,
        'GET',
        `/api/sdk/v1/observations/_search?cursor=${'a'.repeat(8 * 1024)}.${'b'.repeat(8 * 1024 - 1)}`,
      );
      expect(fits.status, fits.text).to.equal(401); // read, and refused for its missing key
      const res = await rawRequest(api, 'GET', `/api/sdk/v1/observations/_search?cursor=${'a'.repeat(33 * 1024)}`);
      expect(res.status).to.equal(431);
      expect(res.headers.get('content-type')).to.equal('application/problem+json');
      expect(res.body).to.include({ status: 431, code: 'REQUEST_HEADER_FIELDS_TOO_LARGE', retryable: false });
      expect(res.headers.get('connection')).to.equal('close');
    });
  });

  describe('every problem', () => {
    it('has the eight fields for 401, 403, 404, 409 in use and 422 as well', async () => {
      expectProblem(
        await api.request('GET', '/api/platform/v1/webhook-endpoints'),
        401,
        'UNAUTHORIZED',
        '/api/platform/v1/webhook-endpoints',
      );
      const reader = await api.keyFor(tenant.accountId, ['patient:read']);
      expectProblem(
        await api.request('POST', PATIENTS, { key: reader.key, body: buildPatient() }),
        403,
        'PLATFORM_ACCESS_DENIED',
        PATIENTS,
      );
      const missing = `/api/platform/v1/webhook-endpoints/${randomUUID()}`;
      expectProblem(await api.request('GET', missing, { key: tenant.key }), 404, 'NOT_FOUND', missing);

      const key = `problems-${randomUUID()}`;
      const body = buildPatient();
      const send = (sent = body) =>
        api.request('POST', PATIENTS, { key: tenant.key, body: sent, headers: { 'idempotency-key': key } });
      const answers = await Promise.all([send(), send(), send(), send(), send()]);
      expect(answers.map((a) => a.status)).to.include(201);
      for (const busy of answers.filter((a) => a.status !== 201))
        expectProblem(busy, 409, 'IDEMPOTENCY_KEY_IN_USE', PATIENTS, true);
      expectProblem(await send(buildPatient()), 422, 'IDEMPOTENCY_KEY_REUSED', PATIENTS);
    });
  });

  describe('request bodies', () => {
    it('answers malformed JSON with 400 and no parser internals', async () => {
      for (const raw of ['{"givenName": "Ada",', '{givenName: "Ada"}', "{'a': 1}", '\u0000']) {
        const res = await post({ 'content-type': 'application/json' }, raw);
        expectProblem(res, 400, 'BAD_REQUEST', PATIENTS);
        expect(res.text, raw).to.not.match(/SyntaxError|Unexpected token|JSON\.parse|at .*\.js/);
      }
    });

    it('describes at most 20 problems of a body with 90,000 unknown properties and counts the rest, in a short answer', async () => {
      const body: Record<string, unknown> = buildPatient();
      for (let i = 0; i < 90_000; i++) body[`p${i}`] = 0;
      const raw = JSON.stringify(body);
      expect(raw.length).to.be.above(700_000);
      const res = await post({ 'content-type': 'application/json' }, raw);
      expectProblem(res, 400, 'BAD_REQUEST', PATIENTS);
      expect(res.body.details.errors).to.have.length(20);
      expect(res.body.details.errors[0]).to.deep.equal({
        in: 'body',
        name: 'p0',
        detail: 'is not an allowed property',
      });
      expect(res.body.details.errorsOmitted).to.equal(90_000 - 20);
      expect(res.text.length).to.be.below(5_000);
    });

    it('leaves errorsOmitted out when every problem is listed', async () => {
      const res = await api.request('POST', PATIENTS, {
        key: tenant.key,
        body: { ...buildPatient(), extra: 1, other: 2 },
      });
      expectProblem(res, 400, 'BAD_REQUEST', PATIENTS);
      expect(res.body.details).to.have.all.keys('errors');
      expect(res.body.details.errors).to.have.length(2);
    });

    it('refuses a body that is not UTF-8 with 400 instead of storing U+FFFD, creating nothing', async () => {
      const before = await api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });
      const bad: [string, number[]][] = [
        ['a stray continuation byte', [0x80]],
        ['an invalid byte', [0xff]],
        ['an overlong "/"', [0xc0, 0xaf]],
        ['a UTF-16 surrogate encoded as UTF-8', [0xed, 0xa0, 0x80]],
        ['a truncated sequence', [0xe2, 0x82]],
      ];
      for (const [what, bytes] of bad) {
        const raw = Buffer.concat([
          Buffer.from('{"givenName":"Ad'),
          Buffer.from(bytes),
          Buffer.from('","familyName":"Lovelace"}'),
        ]);
        const res = await post({ 'content-type': 'application/json' }, raw);
        expectProblem(res, 400, 'BAD_REQUEST', PATIENTS);
        expect(res.body.detail, what).to.match(/UTF-8/);
      }
      expect(await api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId })).to.equal(before);
      // Well-formed UTF-8 beyond ASCII is read as sent.
      const ok = await post(
        { 'content-type': 'application/json' },
        Buffer.from(JSON.stringify({ givenName: 'Zoë', familyName: '李 😀' })),
      );
      expect(ok.status, ok.text).to.equal(201);
      expect(ok.body).to.include({ givenName: 'Zoë', familyName: '李 😀' });
    });

    it('refuses an escaped unpaired surrogate anywhere in a body with 400 naming where it is, creating nothing', async () => {
      const before = await api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });
      const bad: [string, string, string][] = [
        ['a lone high surrogate in a field', '{"givenName":"Ad\\ud800a","familyName":"Lovelace"}', 'givenName'],
        [
          'a lone low surrogate in a nested array',
          '{"givenName":"Ada","familyName":"Lovelace","identifiers":[{"system":"x","value":"\\udc00"}]}',
          'identifiers[0].value',
        ],
        ['two high surrogates', '{"givenName":"\\ud83d\\ud83d","familyName":"Lovelace"}', 'givenName'],
        ['a lone surrogate in a member name', '{"givenName":"Ada","familyName":"Lovelace","\\ud800":1}', '\ud800'],
      ];
      for (const [what, raw, name] of bad) {
        const res = await post({ 'content-type': 'application/json' }, raw);
        expectProblem(res, 400, 'BAD_REQUEST', PATIENTS);
        expect(res.body.details.errors, what).to.deep.equal([{ in: 'body', name, detail: 'unpaired surrogate' }]);
      }
      expect(await api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId })).to.equal(before);
      // A pair written as escapes is one character, read as sent; so is an escaped backslash before "ud800".
      const ok = await post(
        { 'content-type': 'application/json' },
        '{"givenName":"Ada \\ud83d\\ude00","familyName":"Love\\\\ud800lace"}',
      );
      expect(ok.status, ok.text).to.equal(201);
      expect(ok.body).to.include({ givenName: 'Ada 😀', familyName: 'Love\\ud800lace' });
    });

    it('gives one fixed title per code, whatever the detail', async () => {
      const malformed = await post({ 'content-type': 'application/json' }, '{');
      const invalid = await api.request('POST', PATIENTS, { key: tenant.key, body: { ...buildPatient(), sex: 'M' } });
      expect(malformed.body.detail).to.not.equal(invalid.body.detail);
      expect(malformed.body.title).to.equal(invalid.body.title);
    });

    const unsupported: [string, Record<string, string>, string | Buffer][] = [
      ['text/plain', { 'content-type': 'text/plain' }, JSON.stringify(buildPatient())],
      ['form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }, 'givenName=Ada&familyName=Lovelace'],
      ['no content type at all', {}, Buffer.from(JSON.stringify(buildPatient()))],
      ['a malformed content type', { 'content-type': 'json' }, JSON.stringify(buildPatient())],
    ];
    for (const [what, headers, raw] of unsupported) {
      it(`answers a body sent as ${what} with 415, creating nothing`, async () => {
        const before = await api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });
        expectProblem(await post(headers, raw), 415, 'UNSUPPORTED_MEDIA_TYPE', PATIENTS);
        expect(await api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId })).to.equal(
          before,
        );
      });
    }

    it('accepts application/json with parameters (charset)', async () => {
      const res = await post({ 'content-type': 'application/json; charset=utf-8' }, JSON.stringify(buildPatient()));
      expect(res.status, res.text).to.equal(201);
    });

    it('answers a declared body over 1 MiB with 413', async () => {
      const raw = Buffer.alloc(MIB + 1, 0x20);
      expectProblem(await post({ 'content-type': 'application/json' }, raw), 413, 'PAYLOAD_TOO_LARGE', PATIENTS);
    });

    it('reads a body of exactly 1 MiB (it is then judged on its content, not its size)', async () => {
      const prefix = '{"givenName":"';
      const raw = prefix + 'a'.repeat(MIB - prefix.length - 2) + '"}';
      expect(Buffer.byteLength(raw)).to.equal(MIB);
      expectProblem(await post({ 'content-type': 'application/json' }, raw), 400, 'BAD_REQUEST', PATIENTS);
    });

    describe('sent chunked, without Content-Length', () => {
      // Its own server: an early answer to an unfinished upload must not disturb the other tests' connections.
      let own: TestApi;
      let ownTenant: Tenant;
      before(async () => {
        own = await TestApi.start();
        ownTenant = await own.tenant();
      });
      after(() => own.close());

      it('answers a body that grows past 1 MiB with 413', async () => {
        const response = await fetch(own.url + PATIENTS, {
          method: 'POST',
          headers: { authorization: `Bearer ${ownTenant.key}`, 'content-type': 'application/json' },
          body: chunkedBody(2 * MIB),
          duplex: 'half',
        });
        const text = await response.text();
        expectProblem(
          { status: response.status, headers: response.headers, text, body: JSON.parse(text) },
          413,
          'PAYLOAD_TOO_LARGE',
          PATIENTS,
        );
      });

      it('leaves the connection usable for the next request after that 413, or closes it', async () => {
        const { first, second } = await uploadThenReuse(own, ownTenant.key, 2 * MIB);
        expect(first).to.match(/^HTTP\/1\.1 413 /);
        if (second !== null) expect(second).to.match(/^HTTP\/1\.1 200 /);
      });
    });
  });

  describe('X-Request-Id', () => {
    const ID = /^[A-Za-z0-9._:-]{1,128}$/;

    it('echoes a well-formed incoming id', async () => {
      for (const id of [randomUUID(), 'req-42', 'trace:abc.DEF_1']) {
        const res = await api.request('GET', '/healthz', { headers: { 'x-request-id': id } });
        expect(res.headers.get('x-request-id')).to.equal(id);
      }
    });

    it('replaces a malformed incoming id with a new well-formed one', async () => {
      for (const id of ['has spaces in it', 'x'.repeat(200), 'semi;colon', '<script>']) {
        const res = await api.request('GET', '/healthz', { headers: { 'x-request-id': id } });
        const sent = res.headers.get('x-request-id');
        expect(sent, id).to.match(ID).and.not.equal(id);
      }
    });

    it('mints a different id for each request that brings none', async () => {
      const ids = await Promise.all(
        [1, 2, 3].map(async () => (await api.request('GET', '/healthz')).headers.get('x-request-id')),
      );
      for (const id of ids) expect(id).to.match(ID);
      expect(new Set(ids).size).to.equal(3);
    });

    it('is on every response: errors, 201 and 304 included', async () => {
      const created = await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
      expect(created.status).to.equal(201);
      const answers = [
        created,
        await api.request('GET', `/nowhere-${randomUUID()}`),
        await api.request('PUT', PATIENTS, { key: tenant.key }),
        await api.request('GET', `${PATIENTS}/${created.body.id}`),
        await post({ 'content-type': 'text/plain' }, 'x'),
        await post({ 'content-type': 'application/json' }, '{'),
        await api.request('GET', `${PATIENTS}/${created.body.id}`, {
          key: tenant.key,
          headers: { 'if-none-match': '"1"' },
        }),
      ];
      expect(answers.map((a) => a.status)).to.deep.equal([201, 404, 405, 401, 415, 400, 304]);
      for (const answer of answers) expect(answer.headers.get('x-request-id'), String(answer.status)).to.match(ID);
      const echoed = await api.request('GET', `${PATIENTS}/${created.body.id}`, {
        key: tenant.key,
        headers: { 'if-none-match': '"1"', 'x-request-id': 'cond-1' },
      });
      expect(echoed.status).to.equal(304);
      expect(echoed.headers.get('x-request-id')).to.equal('cond-1');
    });
  });
});
