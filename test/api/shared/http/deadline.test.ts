// A request the deadline answers leaves no connection behind while its work goes on: the server closes it
// once the 503 is written (a request whose handler never ends, a body that stops arriving).
import { expect } from 'chai';
import { once } from 'node:events';
import { request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { withRequestDeadline } from '../../../../api/src/shared/http/deadline.js';
import { createApiServer } from '../../../../api/src/shared/http/server.js';
import { until } from '../../../../testkit/until.js';

describe('http: the connection of a request the deadline answered', () => {
  let server: Server;
  let port: number;
  const pending: ServerResponse[] = [];

  before(async () => {
    // Reads the body, then never answers: work that outlives the deadline.
    const handler = withRequestDeadline(
      (req: IncomingMessage, res: ServerResponse) => {
        req.resume();
        pending.push(res);
      },
      { timeoutMs: 300, logger: pino({ level: 'silent' }), registry: new Registry() },
    );
    server = createApiServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const connections = () =>
    new Promise<number>((resolve, reject) =>
      server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );

  for (const [what, send] of [
    ['a whole request', (body: string) => body],
    ['a body that stops arriving', (body: string) => body.slice(0, 5)],
  ] as const) {
    it(`closes it after the 503, the work still going on: ${what}`, async () => {
      const body = JSON.stringify({ hello: 'world' });
      const req = request({
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/x',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.write(send(body));
      const [res] = (await once(req, 'response')) as [IncomingMessage];
      expect(res.statusCode).to.equal(503);
      expect(res.headers.connection).to.equal('close');
      res.resume();
      await until('the server to close the connection', async () => (await connections()) === 0);
      expect(pending.at(-1)!.writableEnded, 'the work has not answered').to.equal(false);
      req.destroy();
    });
  }
});

describe("http: the deadline's 503 in the form a path's errors take", () => {
  it('answers with the body, media type and headers errorFor gives (the FHIR base, CORS routes), else problem details', async () => {
    const handler = withRequestDeadline(
      (req: IncomingMessage) => {
        req.resume(); // never answered
      },
      {
        timeoutMs: 200,
        logger: pino({ level: 'silent' }),
        registry: new Registry(),
        errorFor: (path, error) =>
          path.startsWith('/fhir/')
            ? {
                contentType: 'application/fhir+json',
                body: JSON.stringify({ resourceType: 'OperationOutcome', code: error.code }),
              }
            : path === '/cors'
              ? { headers: { 'Access-Control-Allow-Origin': '*' } }
              : undefined,
      },
    );
    const server = createApiServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const fhir = await fetch(`${base}/fhir/x`);
      expect([fhir.status, fhir.headers.get('content-type')]).to.deep.equal([503, 'application/fhir+json']);
      expect(await fhir.json()).to.deep.equal({ resourceType: 'OperationOutcome', code: 'SERVICE_UNAVAILABLE' });
      expect(fhir.headers.get('retry-after')).to.match(/^\d+$/);
      const cors = await fetch(`${base}/cors`);
      expect(cors.headers.get('access-control-allow-origin')).to.equal('*');
      expect(cors.headers.get('content-type')).to.equal('application/problem+json');
      const other = await fetch(`${base}/other`);
      expect([other.status, other.headers.get('access-control-allow-origin')]).to.deep.equal([503, null]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
