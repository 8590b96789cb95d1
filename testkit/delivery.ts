// Shared by the webhook delivery tests.
import type { Db } from 'mongodb';
import nock from 'nock';
import { until } from './until.js';

export const PATIENTS = '/api/platform/v1/patients';
export { WEBHOOKS } from './webhooks.js';

/** Loopback receivers need http and private addresses: development settings, with fast retries. */
export const DELIVERY_ENV = {
  PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  PORTICO_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
  PORTICO_WEBHOOK_POLL_MS: '200',
};

/** The dispatcher's sockets are real ones: nock would stand between them and the receivers. */
export function withRealSockets(): void {
  before(() => nock.restore());
  after(() => nock.activate());
}

/** Waits until every committed event in the database is dispatched and no retry is queued: every attempt they needed
 * was made. */
export async function settled(db: Db, ms = 20_000): Promise<void> {
  await until(
    'every event dispatched and no retry queued',
    async () =>
      (await db.collection('outbox_events').countDocuments({ status: { $ne: 'dispatched' } })) === 0 &&
      (await db.collection('webhook_deliveries').countDocuments({})) === 0,
    { timeoutMs: ms },
  );
}
