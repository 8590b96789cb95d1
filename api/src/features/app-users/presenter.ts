import type { AppUser } from './store.js';

/** A signed-in connection's sync, as `GET /app-users/{id}` shows it (features/connections/sync). */
export interface SyncView {
  status: 'IDLE' | 'RUNNING' | 'FAILED';
  lastSyncedAt: Date | null;
  lastError: string | null;
  observations: number;
  lastSkipped?: number;
  lastForeignPatient?: number;
  types?: Record<
    string,
    {
      count: number;
      status: 'SYNCED' | 'SKIPPED' | 'FAILED';
      httpStatus?: number;
      invalid: number;
      foreignPatient: number;
    }
  >;
}

export function presentAppUser(
  appUserId: string,
  user: AppUser | null,
  syncs: ReadonlyMap<string, SyncView> = new Map(),
) {
  return {
    appUserId,
    state: user?.state ?? 'UNLINKED',
    connections: (user?.connections ?? []).map((c) => ({
      id: c.id,
      appId: c.appId,
      brandId: c.brandId,
      createdAt: c.createdAt.toISOString(),
      status: c.status ?? 'ACTIVE',
      ...(c.status === 'REAUTHORIZATION_REQUIRED' && c.statusReason && { statusReason: c.statusReason }),
      ...(c.health && {
        fhirBaseUrl: c.health.fhirBaseUrl,
        patient: c.health.patient,
        scope: c.health.scope,
        sync: presentSync(syncs.get(c.id)),
      }),
    })),
    createdAt: user?.createdAt.toISOString() ?? null,
    updatedAt: user?.updatedAt.toISOString() ?? null,
    _version: String(user?.version ?? 0),
  };
}

export function presentSync(sync: SyncView | undefined) {
  return {
    status: sync?.status ?? 'IDLE',
    lastSyncedAt: sync?.lastSyncedAt?.toISOString() ?? null,
    lastError: sync?.lastError ?? null,
    observations: Math.max(0, sync?.observations ?? 0),
    skipped: sync?.lastSkipped ?? 0,
    foreignPatient: sync?.lastForeignPatient ?? 0,
    resources: Object.values(sync?.types ?? {}).reduce((sum, t) => sum + t.count, 0),
    types: sync?.types ?? {},
  };
}
