// Apps (with their publishable and secret app keys) and connections made the way a customer makes them:
// initiate with the publishable key, complete with the secret platform key.
import { expect } from 'chai';
import type { TestApi, Tenant } from './api.js';

export const GRANTS = {
  resourceTypes: ['Observation'],
  loincCodes: ['*'],
  confidentiality: ['N'],
  sensitivity: [],
  lookbackDays: null,
};

export interface AppKeys {
  appId: string;
  pk: string;
  ak: string;
}

export async function appOf(
  api: TestApi,
  tenant: Tenant,
  grants: Record<string, unknown> = GRANTS,
  name = 'Connect test app',
): Promise<AppKeys> {
  const app = await api.admin('POST', `/customer-accounts/${tenant.accountId}/apps`, {
    name,
    grants,
  });
  expect(app.status, app.text).to.equal(201);
  return { appId: app.body.id, pk: app.body.publishableKey, ak: app.body.secretKey };
}

/** A live connection of `appUserId` to `brandId` through `app` (the user becomes ACTIVE). */
export async function connectionOf(
  api: TestApi,
  tenant: Tenant,
  app: AppKeys,
  appUserId: string,
  brandId: string,
): Promise<string> {
  const started = await api.request('POST', '/api/sdk/v1/connect-sessions', {
    key: app.pk,
    body: { appUserId, brandId },
  });
  expect(started.status, started.text).to.equal(201);
  const done = await api.request('POST', `/api/platform/v1/connect-sessions/${started.body.id}/complete`, {
    key: tenant.key,
  });
  expect(done.status, done.text).to.equal(200);
  return done.body.connection.id;
}
