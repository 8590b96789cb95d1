// Clinical ingest (docs/api.md, "Clinical records and the observation gateway"): a FHIR R4 Bundle of up to 1000
// Observations for one live connection of the account, validated whole before anything is written
// (features/clinical/ingest/observations.ts), then upserted by Observation.id within the connection. A revoke that lands
// between the liveness check and the write leaves the bundle stored under the revoked connection, where no search
// reaches it (the gateway serves live connections only): the ingest counts as made just before the revoke.
import type { Clock } from '#core/clock.js';
import type { AppUserStore } from '../../app-users/index.js';
import type { RecordStore } from '../records/store.js';
import { MAX_PROBLEMS, validateBundle, type NormalizedObservation } from './observations.js';
import { changing, type Generations } from '../../../shared/infra/generations.js';
import type { Principal } from '../../../shared/http/auth.js';
import { badRequest, notFound } from '../../../shared/http/errors.js';
import { UUID } from '../../../shared/http/ids.js';

export interface IngestServiceDeps {
  users: AppUserStore;
  observations: RecordStore;
  generations?: Generations;
  clock: Clock;
}

export class IngestService {
  constructor(private readonly deps: IngestServiceDeps) {}

  async ingest(
    principal: Principal,
    connectionId: string,
    body: unknown,
  ): Promise<{ ingested: number; updated: number }> {
    await this.liveConnection(principal.accountId, connectionId);
    const checked = validateBundle(body);
    if (!checked.ok) {
      const count = checked.problems.filter((p) => p.index >= 0).length;
      throw badRequest(
        `The bundle is not valid${count > 0 ? `: ${count} problem(s) in its entries` : ''}; nothing was written.`,
        checked.problems.map((p) => ({
          in: 'body',
          name: p.path,
          detail: p.index >= 0 ? `entry ${p.index}: ${p.problem}` : p.problem,
        })),
        { limit: MAX_PROBLEMS }, // validateBundle lists up to 100 itself, as this operation documents
      );
    }
    // Every replica's index of the connection is stale from here (the gateway checks `obs:<id>` per search).
    return changing(this.deps.generations, [`obs:${connectionId}`], () =>
      this.deps.observations.upsert(
        { accountId: principal.accountId, connectionId },
        checked.observations,
        this.deps.clock.now(),
      ),
    );
  }

  /** Upserts observations a sync read from the connection's health system (already checked, readObservations). */
  store(accountId: string, connectionId: string, observations: NormalizedObservation[]) {
    return changing(this.deps.generations, [`obs:${connectionId}`], () =>
      this.deps.observations.upsert({ accountId, connectionId }, observations, this.deps.clock.now()),
    );
  }

  /** 404 unless the connection is the account's and live (its user still lists it). */
  private async liveConnection(accountId: string, connectionId: string): Promise<void> {
    const record = UUID.test(connectionId) ? await this.deps.users.connection(accountId, connectionId) : null;
    const user = record && (await this.deps.users.find(accountId, record.appUserId));
    if (!user?.connections.some((c) => c.id === connectionId)) throw notFound('connection');
  }
}
