// When MongoDB or Redis is unreachable the API answers 503 problem details that invite a retry, instead of
// hanging or leaking driver errors.
import { expect } from 'chai';
import { TestApi } from '../../../../testkit/api.js';
import { buildPatient } from '../../../../testkit/factories.js';

describe('http: unreachable dependencies', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After when MongoDB is gone', async () => {
    const api = await TestApi.start();
    try {
      const tenant = await api.tenant();
      await api.mongo.client.close();
      const res = await api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() });
      expect(res.status).to.equal(503);
      expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(res.body.detail)
        .to.include('MongoDB')
        .and.not.match(/topology|Mongo[A-Z]\w+Error/);
      expect(res.headers.get('retry-after')).to.equal('5');
    } finally {
      await api.close();
    }
  });

  it('answers 503 when the Redis holding idempotency records is gone, and executes nothing', async () => {
    const api = await TestApi.start({ redis: true });
    try {
      const tenant = await api.tenant();
      const patients = () => api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });
      api.redis!.disconnect();
      const res = await api.request('POST', '/api/platform/v1/patients', {
        key: tenant.key,
        body: buildPatient(),
        headers: { 'idempotency-key': 'redis-down' },
      });
      expect(res.status).to.equal(503);
      expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(await patients()).to.equal(0);
    } finally {
      await api.close();
    }
  });
});
