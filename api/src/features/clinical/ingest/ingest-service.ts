// Clinical ingest (docs/api.md, "Clinical records and the observation gateway" and "The whole record"): a FHIR R4
// Bundle of up to 1000 Observations, or of records of any type, for one live connection of the account, validated
// whole before anything is written (ingest/observations.ts, ingest/records.ts), then upserted by type and id within
// the connection. A revoke that lands
// between the liveness check and the write leaves the bundle stored under the revoked connection, where no search
// reaches it (the gateway serves live connections only): the ingest counts as made just before the revoke.
import type { Clock } from '#core/clock.js';
import type { AppUserStore, Connection } from '../../app-users/index.js';
import type { RecordStore } from '../records/store.js';
import { MAX_PROBLEMS, validateBundle, type BundleResult, type NormalizedObservation } from './observations.js';
import { validateRecordBundle } from './records.js';
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
    return this.write(principal.accountId, connectionId, validateBundle(body));
  }

  /** `POST /connections/{id}/resources`: records of any type, with the patient check (ingest/records.ts). */
  async ingestRecords(
    principal: Principal,
    connectionId: string,
    body: unknown,
  ): Promise<{ ingested: number; updated: number }> {
    const connection = await this.liveConnection(principal.accountId, connectionId);
    return this.write(principal.accountId, connectionId, validateRecordBundle(body, connection.health?.patient));
  }

  private async write(
    accountId: string,
    connectionId: string,
    checked: BundleResult,
  ): Promise<{ ingested: number; updated: number }> {
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
      this.deps.observations.upsert({ accountId, connectionId }, checked.observations, this.deps.clock.now()),
    );
  }

  /** Upserts observations a sync read from the connection's health system (already checked, readObservations). */
  store(accountId: string, connectionId: string, observations: NormalizedObservation[]) {
    return changing(this.deps.generations, [`obs:${connectionId}`], () =>
      this.deps.observations.upsert({ accountId, connectionId }, observations, this.deps.clock.now()),
    );
  }

  /**
   * Removes what a full sync's complete passes of `types` did not write (records last written before `before`): how
   * many, by type (and after each bundle of removals, `onRemoved`).
   */
  removeStale(
    accountId: string,
    connectionId: string,
    types: readonly string[],
    before: Date,
    onRemoved?: (counts: Map<string, number>) => Promise<void>,
  ) {
    return changing(this.deps.generations, [`obs:${connectionId}`], () =>
      this.deps.observations.removeStale({ accountId, connectionId }, types, before, this.deps.clock.now(), onRemoved),
    );
  }

  /** 404 unless the connection is the account's and live (its user still lists it). */
  private async liveConnection(accountId: string, connectionId: string): Promise<Connection> {
    const record = UUID.test(connectionId) ? await this.deps.users.connection(accountId, connectionId) : null;
    const user = record && (await this.deps.users.find(accountId, record.appUserId));
    const connection = user?.connections.find((c) => c.id === connectionId);
    if (!connection) throw notFound('connection');
    return connection;
  }
}
