// Connections for the fault suite's ingests, made as a customer makes them against replicas running as
// processes: a catalog of one brand published into their database (they find it by polling), an app, and for
// each connection a session initiated with the app's publishable key and completed with the secret key.
import os from 'node:os';
import path from 'node:path';
import type { Db } from 'mongodb';
import { systemClock } from '#core/clock.js';
import { parseCatalogRef } from '#core/config.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { openObjectStorage } from '#core/object-storage/index.js';
import { parseSource } from '../operator/src/pipeline/index.js';
import { publishCatalog } from '../operator/src/pipeline/publish.js';
import { ADMIN_TOKEN } from './api.js';
import { GRANTS } from './apps.js';
import { until } from './until.js';

const BRAND = { name: 'Fault Injection Clinic', fhirBaseUrl: 'https://fhir.fault-injection.example/r4' };

/** `count` live connections of one app user each, in the account `accountId` whose secret key is `credential`. */
export async function connectionsFor(
  db: Db,
  url: string,
  credential: string,
  accountId: string,
  count: number,
): Promise<string[]> {
  await publishCatalog({
    ref: parseCatalogRef('default/default')!,
    spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 } },
    sources: [
      {
        name: 'fault',
        priority: 1,
        platformType: 'OTHER',
        parsed: parseSource('csv', `name,fhirBaseUrl\n${BRAND.name},${BRAND.fhirBaseUrl}\n`),
      },
    ],
    store: new SnapshotStore(db, await documentLocksFor(db), systemClock),
    storage: openObjectStorage(`file://${path.join(os.tmpdir(), `portico-fault-catalog-${db.databaseName}`)}`),
  });
  const call = async (method: string, route: string, key: string | undefined, body?: unknown) => {
    const res = await fetch(url + route, {
      method,
      headers: { ...(key && { authorization: `Bearer ${key}` }), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const brandId = await until('the replica to serve the published brand', async () => {
    const found = await call('GET', `/api/sdk/v1/catalog/brands?q=${encodeURIComponent(BRAND.fhirBaseUrl)}`, undefined);
    return found.status === 200 ? (found.body.brands?.[0]?.id as string | undefined) : undefined;
  });
  const app = await call('POST', `/api/admin/v1/customer-accounts/${accountId}/apps`, ADMIN_TOKEN, {
    name: 'Fault injection app',
    grants: GRANTS,
  });
  if (app.status !== 201) throw new Error(`cannot create the app: ${JSON.stringify(app.body)}`);
  const connections: string[] = [];
  for (let i = 0; i < count; i++) {
    const session = await call('POST', '/api/sdk/v1/connect-sessions', app.body.publishableKey, {
      appUserId: `fault-user-${i}`,
      brandId,
    });
    if (session.status !== 201) throw new Error(`cannot initiate a session: ${JSON.stringify(session.body)}`);
    const done = await call('POST', `/api/platform/v1/connect-sessions/${session.body.id}/complete`, credential);
    if (done.status !== 200) throw new Error(`cannot complete a session: ${JSON.stringify(done.body)}`);
    connections.push(done.body.connection.id);
  }
  return connections;
}
