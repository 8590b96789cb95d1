// The operator's /readyz: a standby is ready while the API server answers it; the leader also needs the
// database; a silent API server (past the contact window) or a failing database is a 503 naming the check.
import { expect } from 'chai';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OperatorMetrics } from '../../operator/src/shared/metrics.js';
import { serveOperatorEndpoints } from '../../operator/src/http.js';
import { operatorReadiness } from '../../operator/src/readiness.js';

describe('operator: readiness', () => {
  const state = { contact: undefined as number | undefined, leading: false, database: true, pings: 0 };
  let server: Server;
  let url: string;

  before(async () => {
    const readiness = operatorReadiness(
      {
        lastContact: () => state.contact,
        leading: () => state.leading,
        pingDatabase: async () => (state.pings++, state.database),
      },
      10_000,
    );
    server = await serveOperatorEndpoints(new OperatorMetrics(), '127.0.0.1', 0, readiness);
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;
  });
  after(() => server.close());

  const readyz = async () => {
    const res = await fetch(url);
    return { status: res.status, body: await res.json() };
  };

  it('is not ready before the API server first answers, or once it has been silent past the window', async () => {
    expect(await readyz()).to.deep.equal({ status: 503, body: { status: 'not ready', checks: { kubernetes: false } } });
    state.contact = performance.now() - 11_000;
    expect((await readyz()).status).to.equal(503);
  });

  it('is ready as a standby with a connection, without asking the database', async () => {
    state.contact = performance.now();
    state.pings = 0;
    expect(await readyz()).to.deep.equal({ status: 200, body: { status: 'ready', checks: { kubernetes: true } } });
    expect(state.pings).to.equal(0);
  });

  it('needs the database while leading', async () => {
    state.leading = true;
    expect(await readyz()).to.deep.equal({
      status: 200,
      body: { status: 'ready', checks: { kubernetes: true, database: true } },
    });
    state.database = false;
    expect(await readyz()).to.deep.equal({
      status: 503,
      body: { status: 'not ready', checks: { kubernetes: true, database: false } },
    });
  });
});
