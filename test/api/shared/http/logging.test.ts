import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { TestApi, ADMIN_TOKEN } from '../../../../testkit/api.js';
import { buildEndpoint, buildPatient } from '../../../../testkit/factories.js';

describe('http: logging', () => {
  let api: TestApi;
  let logs = '';

  before(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    api = await TestApi.start({ logs: stream });
  });
  after(() => api.close());

  it('logs every request with its route and status but never a key, token or secret', async () => {
    const tenant = await api.tenant();
    const patient = await api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() });
    await api.request('GET', `/api/platform/v1/patients/${patient.body.id}`, { key: tenant.key });
    const endpoint = await api.request('POST', '/api/platform/v1/webhook-endpoints', {
      key: tenant.key,
      body: buildEndpoint(),
    });
    await api.request('GET', '/api/platform/v1/patients/x', { key: 'sk_ThisIsNotAValidKeyButLooksLikeOne0123456789' });
    const app = await api.admin('POST', `/customer-accounts/${tenant.accountId}/apps`, {
      name: 'Logged app',
      grants: {
        resourceTypes: ['Observation'],
        loincCodes: ['*'],
        confidentiality: ['N'],
        sensitivity: [],
        lookbackDays: null,
      },
    });
    await new Promise((resolve) => setImmediate(resolve));

    const lines = logs
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.length).to.be.greaterThanOrEqual(7);
    expect(
      requests.some(
        (l) => l.route === '/api/platform/v1/patients/:id' && l.status === 200 && typeof l.requestId === 'string',
      ),
    ).to.equal(true);
    expect(requests.some((l) => l.credentialId === tenant.keyId)).to.equal(true);

    for (const secret of [
      tenant.key,
      ADMIN_TOKEN,
      endpoint.body.secret,
      app.body.publishableKey,
      app.body.secretKey,
      'sk_ThisIsNotAValidKeyButLooksLikeOne0123456789',
    ]) {
      expect(secret, 'a credential under test').to.be.a('string').with.length.greaterThan(10);
      expect(logs).to.not.include(secret);
    }
    expect(logs).to.not.match(/Bearer /);
  });
});
