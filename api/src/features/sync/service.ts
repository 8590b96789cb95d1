// Keeping a signed-in connection's records in sync with its health system (docs/connecting.md, "Sync"): a run
// reads `Observation?patient=<patient>&_count=100` (after the first, only what changed since the last run's
// high-water mark), one page at a time so memory stays flat however many pages a patient has, following `next`
// links on the FHIR server's own origin only. Each resource is checked as ingest checks it (invalid ones are
// skipped and counted), the valid ones upserted by id, so a page read twice (a run taken over) duplicates nothing.
// A run ends with `connection.synced` or `connection.sync_failed`, written with its state through the outbox.
import type { Clock } from '../../../../core/src/clock.js';
import type { AppUserService } from '../app-users/index.js';
import { readObservations, type IngestService, type NormalizedObservation } from '../clinical/index.js';
import type { EventOutbox } from '../webhooks/index.js';
import type { Principal } from '../../shared/http/auth.js';
import { AppError, notFound } from '../../shared/http/errors.js';
import { UUID } from '../../shared/http/ids.js';
import { readPage, SyncFailure, type PageReaderDeps } from './fhir-pages.js';
import { underBase } from '../smart/index.js';
import type { SyncRepository, SyncRun, SyncState } from './store.js';

export const PAGE_SIZE = 100;
/** Observations stored as one bundle (ingest's own limit): ten pages, so a sync's memory stays bounded. */
export const BATCH = 1000;
const NEVER = new Date('9999-12-31T00:00:00Z');

type Page = { resources: unknown[]; next: string | null };

export interface SyncServiceDeps {
  store: SyncRepository;
  users: AppUserService;
  ingest: IngestService;
  outbox: EventOutbox;
  pages: Omit<PageReaderDeps, 'beforeWait'>;
  /** Forgets a connection's tokens (its connection is gone). */
  forget: (connectionId: string) => Promise<void>;
  clock: Clock;
  intervalMs: number;
  /** How long a run's claim lasts without progress. */
  leaseMs: number;
}

export class SyncService {
  constructor(private readonly deps: SyncServiceDeps) {}

  /** `POST /connections/{id}/sync`: due now; a running sync goes on (it is not started twice). */
  async request(principal: Principal, connectionId: string): Promise<SyncState> {
    const live = UUID.test(connectionId) ? await this.deps.users.connectionOf(principal.accountId, connectionId) : null;
    if (!live) throw notFound('connection');
    if (!live.connection.health)
      throw new AppError(
        'CONFLICT',
        'The connection was not made by signing in at a health system; Portico has nothing to sync it from.',
      );
    const now = this.deps.clock.now();
    // A connection whose sync was never scheduled (its process died in between) gets one now.
    const state = (await this.deps.store.requestNow(connectionId, now)) ?? (await this.schedule(principal, live, now));
    if (!state) throw notFound('connection');
    return state;
  }

  private async schedule(
    principal: Principal,
    live: { appUserId: string; connection: { id: string; brandId: string } },
    now: Date,
  ) {
    const { id, brandId } = live.connection;
    await this.deps.store.schedule(
      { connectionId: id, accountId: principal.accountId, appUserId: live.appUserId, brandId },
      now,
    );
    return this.deps.store.get(id);
  }

  /** A sync's state, for `GET /app-users/{id}`. */
  state(connectionId: string): Promise<SyncState | null> {
    return this.deps.store.get(connectionId);
  }

  /** Runs a claimed sync to its end, until its claim is lost, or until `stop` fires (its claim then lapses). */
  async run(claimed: SyncState, stop?: AbortSignal): Promise<void> {
    const { connectionId, accountId } = claimed;
    const live = await this.deps.users.connectionOf(accountId, connectionId);
    const health = live?.connection.health;
    if (!live || !health) {
      await this.deps.store.remove(connectionId, this.deps.clock.now());
      await this.deps.forget(connectionId);
      return;
    }
    const run = { ...claimed.run! };
    try {
      if (live.connection.status === 'REAUTHORIZATION_REQUIRED')
        throw new SyncFailure('reauthorization_required', 'the connection needs the patient to sign in again');
      const origin = new URL(health.fhirBaseUrl).origin;
      const reader = { ...this.deps.pages, beforeWait: async () => void (await this.extend(connectionId, run)) };
      const read = (url: string) => readPage(reader, connectionId, url).then(bundleOf);
      // The next page is read while this one is checked and stored; pages are stored BATCH observations at a time.
      let upcoming: Promise<Page> | null = read(
        run.next ?? firstPage(health.fhirBaseUrl, health.patient, claimed.highWater),
      );
      const batch = new Map<string, NormalizedObservation>();
      let skipped = 0;
      let highWater = run.highWater;
      while (upcoming !== null) {
        if (stop?.aborted) return; // shutting down: another replica takes the run over where it stood
        const { resources, next }: Page = await upcoming;
        const foreign: boolean = next !== null && new URL(next).origin !== origin;
        upcoming = next !== null && !foreign ? read(next) : null;
        upcoming?.catch(() => {}); // its failure is met where it is awaited
        const { observations, invalid } = readObservations(resources);
        for (const observation of observations) batch.set(observation.resourceId, observation);
        skipped += invalid;
        highWater = latest(highWater, resources);
        if (batch.size >= BATCH || upcoming === null) {
          // At most BATCH a bundle, whatever a page held (a server may ignore _count).
          const all = [...batch.values()];
          for (let at = 0; at < all.length; at += BATCH) {
            const stored = await this.deps.ingest.store(accountId, connectionId, all.slice(at, at + BATCH));
            run.added += stored.ingested;
            run.updated += stored.updated;
          }
          Object.assign(run, { skipped: run.skipped + skipped, highWater, next: foreign ? null : next });
          batch.clear();
          skipped = 0;
        }
        // Every page extends the claim (and records what was stored): a live run is never taken over.
        if (!(await this.extend(connectionId, run))) return; // another replica took the run over
        if (foreign)
          throw new SyncFailure(
            'next_link_refused',
            `a next link leads off the FHIR server's origin (${new URL(next!).origin})`,
          );
      }
      await this.finish(claimed, run, null);
    } catch (error) {
      if (error instanceof SyncFailure) return this.finish(claimed, run, error.reason);
      // Portico's own trouble (its database): recorded as such, and the runner logs it.
      await this.finish(claimed, run, 'internal_error').catch(() => {});
      throw error;
    }
  }

  private async extend(connectionId: string, run: SyncRun): Promise<boolean> {
    run.until = new Date(this.deps.clock.now().getTime() + this.deps.leaseMs);
    return this.deps.store.progress(connectionId, run);
  }

  /** Ends the run with its state and event; nothing when the run was taken over meanwhile. */
  private async finish(claimed: SyncState, run: SyncRun, failure: string | null): Promise<void> {
    const { store, outbox, clock } = this.deps;
    const current = await store.get(claimed.connectionId);
    if (current?.run?.holder !== run.holder) return;
    const now = clock.now();
    const base = { connectionId: claimed.connectionId, appUserId: claimed.appUserId, brandId: claimed.brandId };
    const event =
      failure === null
        ? outbox.event('connection.synced', claimed.accountId, `connection:${claimed.connectionId}`, {
            ...base,
            added: run.added,
            updated: run.updated,
          })
        : outbox.event('connection.sync_failed', claimed.accountId, `connection:${claimed.connectionId}`, {
            ...base,
            reason: failure,
          });
    await outbox.record(
      [event],
      store.target(claimed.connectionId, current.version + 1),
      async (changeId) =>
        (await store.finish(
          claimed.connectionId,
          current.version,
          {
            status: failure === null ? 'IDLE' : 'FAILED',
            lastSkipped: run.skipped,
            lastError: failure,
            ...(failure === null && { lastSyncedAt: now }),
            highWater: failure === null ? (run.highWater ?? current.highWater) : current.highWater,
            addObservations: run.added,
            // A connection waiting for its patient is not tried again on schedule (a reconnect schedules it).
            nextAt: failure === 'reauthorization_required' ? NEVER : new Date(now.getTime() + this.deps.intervalMs),
          },
          now,
          changeId,
        )) ?? undefined,
    );
  }
}

function firstPage(fhirBaseUrl: string, patient: string, highWater: string | null): string {
  const url = new URL(underBase(fhirBaseUrl, 'Observation'));
  url.searchParams.set('patient', patient);
  url.searchParams.set('_count', String(PAGE_SIZE));
  if (highWater !== null) url.searchParams.set('_lastUpdated', `gt${highWater}`);
  return url.href;
}

/** A searchset's resources and its next link; anything else is an invalid response. */
function bundleOf(page: unknown): { resources: unknown[]; next: string | null } {
  const bundle = page as { resourceType?: unknown; entry?: unknown; link?: unknown };
  if (typeof page !== 'object' || page === null || bundle.resourceType !== 'Bundle')
    throw new SyncFailure('invalid_response', 'the FHIR server answered something other than a Bundle');
  const entries = Array.isArray(bundle.entry) ? bundle.entry : [];
  const resources = entries
    .filter((e: { search?: { mode?: string } }) => e?.search?.mode === undefined || e.search.mode === 'match')
    .map((e: { resource?: unknown }) => e?.resource);
  const links = Array.isArray(bundle.link) ? (bundle.link as { relation?: unknown; url?: unknown }[]) : [];
  const next = links.find((l) => l?.relation === 'next' && typeof l.url === 'string')?.url as string | undefined;
  if (next !== undefined && !URL.canParse(next)) throw new SyncFailure('invalid_response', 'a next link is not a URL');
  return { resources, next: next ?? null };
}

/** The later of `highWater` and the resources' `meta.lastUpdated` (FHIR instants compare as times). */
function latest(highWater: string | null, resources: unknown[]): string | null {
  let best = highWater;
  let bestMs = best === null ? -Infinity : Date.parse(best);
  for (const resource of resources) {
    const value = (resource as { meta?: { lastUpdated?: unknown } } | null)?.meta?.lastUpdated;
    if (typeof value !== 'string') continue;
    const ms = Date.parse(value);
    if (Number.isFinite(ms) && ms > bestMs) {
      best = value;
      bestMs = ms;
    }
  }
  return best;
}
