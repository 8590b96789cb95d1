// The benchmark server's app-user and clinical seed: an app (publishable and secret app keys), a LIMITED
// user for the lifecycle probe, an ACTIVE user whose connection holds OBSERVATIONS observations spread over
// ten years (real LOINC codes, vital signs and laboratory, some labelled R/HIV), and a second connection
// for the driver's ingest runs.
import { randomUUID } from 'node:crypto';
import type { Services } from '../api/src/wiring.js';
import { bloodPressure, glucose, hba1c, heartRate, hemoglobin, observationBundle } from '../testkit/observations.js';

export const OBSERVATIONS = Number(process.env.BENCH_OBSERVATIONS ?? 10_000);
const KINDS = [heartRate, bloodPressure, glucose, hba1c, hemoglobin];
const TEN_YEARS_MS = 10 * 365.25 * 24 * 3_600_000;

export interface ClinicalSeed {
  publishableKey: string;
  appSecretKey: string;
  clinicalKey: string;
  pollerId: string;
  gatewayConnectionId: string;
  ingestConnectionId: string;
  observations: number;
}

/** `count` observations of the five kinds, effective dates spread evenly over the ten years before now. */
export function spreadObservations(count: number, now = Date.now()): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(now - TEN_YEARS_MS + (i * TEN_YEARS_MS) / count).toISOString();
    const kind = KINDS[i % KINDS.length]!;
    return kind === hemoglobin ? kind({ effectivePeriod: { start: at, end: at } }) : kind({ effectiveDateTime: at });
  });
}

export async function seedClinical(services: Services, accountId: string, brandId: string): Promise<ClinicalSeed> {
  const grants = {
    resourceTypes: ['Observation' as const],
    loincCodes: ['*'] as ['*'],
    confidentiality: ['N', 'R'],
    sensitivity: ['HIV'],
    lookbackDays: null,
  };
  const app = await services.admin.createApp(accountId, 'Benchmark app', grants);
  const clinical = await services.admin.issueKey(accountId, {
    scopes: ['clinical:write', 'app_user:read', 'app_user:write'],
  });
  const pollerId = 'bench-poller';
  await services.users.provision(accountId, pollerId);
  const connect = async (appUserId: string) => {
    await services.users.provision(accountId, appUserId);
    return (
      await services.connections.lifecycle.connect(accountId, appUserId, {
        appId: app.app.id,
        brandId,
        sessionId: randomUUID(),
        connectionId: randomUUID(),
      })
    ).id;
  };
  const gatewayConnectionId = await connect('bench-patient');
  const principal = {
    keyId: clinical.id,
    kind: 'sk' as const,
    accountId,
    appId: null,
    scopes: new Set(['clinical:write']),
  };
  const all = spreadObservations(OBSERVATIONS);
  for (let i = 0; i < all.length; i += 1000)
    await services.ingest.ingest(principal, gatewayConnectionId, observationBundle(all.slice(i, i + 1000)));
  return {
    publishableKey: app.publishableKey,
    appSecretKey: app.secretKey,
    clinicalKey: clinical.key,
    pollerId,
    gatewayConnectionId,
    ingestConnectionId: await connect('bench-ingest'),
    observations: OBSERVATIONS,
  };
}
