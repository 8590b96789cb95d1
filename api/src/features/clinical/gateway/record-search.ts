// Search and read of any record type on a connection's FHIR base (docs/api.md, "The whole record"): the gateway's
// checks in the gateway's order (GatewayService.authorize, with the type asked for in place of Observation), the
// install's grants for that type (labels, look-back by its clinical date, LOINC codes for an Observation), then the
// FHIR search parameters as clauses over the stored search values (search/matching.ts), over the connection's index
// or, for a connection too large to index, over its records read from the database. Paging is by keyset, carried in
// a signed cursor bound to the account and app, as the observation gateway's.
import type { Clock } from '#core/clock.js';
import type { Principal } from '../../../shared/http/auth.js';
import type { CursorCodec } from '../../../shared/http/cursor.js';
import { notFound } from '../../../shared/http/errors.js';
import type { RecordStore } from '../records/store.js';
import { attachmentsOf, type Attachment, type AttachmentStore } from '../attachments/store.js';
import { resourceOfTail } from './entries.js';
import { RECORD_TYPES } from '../record-types.js';
import type { Clause } from '../search/matching.js';
import { clausesOf, encodeRecordWalk, everythingWalkOf, recordWalkOf, type Walk } from './record-walks.js';
import { ConnectionIndex } from './connection-index.js';
import type { IndexedObservation as Found } from './entries.js';
import type { DateValue } from '../search/values.js';
import { BEGINNING } from '../dates.js';
import type { ConnectionIndexes } from './connection-indexes.js';
import { typeGranted, type Access, type GatewayService } from './service.js';

export interface RecordPage {
  connectionId: string;
  type: string;
  /** Undefined with `_total=none`. */
  total: number | undefined;
  items: Found[];
  /** What `_include` and `_revinclude` brought in (entries of search mode `include`). */
  included: Found[];
  next: string | null;
  self: string;
}

export interface RecordSearchDeps {
  gateway: GatewayService;
  /** The attachments syncs fetched (Binary). */
  attachments?: Pick<AttachmentStore, 'get'>;
  records: RecordStore;
  indexes: ConnectionIndexes;
  cursors: CursorCodec;
  clock: Clock;
}

export class RecordSearch {
  constructor(private readonly deps: RecordSearchDeps) {}

  /**
   * A page of a search of `type` with FHIR parameters, or of the walk a cursor continues. `logDenials: false` is for
   * the node:http fast path, which leaves any denial to Koa to answer (and log) again.
   */
  async search(
    principal: Principal,
    requestId: string,
    connectionId: string,
    type: string,
    parameters: [string, string][],
    { logDenials = true } = {},
  ): Promise<RecordPage> {
    await this.deps.gateway.requireScope(principal, requestId, connectionId, {
      interaction: 'search',
      type,
      log: logDenials,
    });
    const walk = recordWalkOf(this.deps, principal, connectionId, type, parameters);
    const clauses = clausesOf(type, walk.params); // (checked in walkOf: a 400 comes before any check reads)
    const access = await this.deps.gateway.authorize(principal, requestId, connectionId, logDenials, type);
    const { grants, obs } = access;
    const matched = await this.matching(walk, grants, obs, clauses);
    const keyOf = sortKey(walk.sort.by);
    // Ascending in (key, id); the matches are in the index's (date) order already, and kept (never changed here).
    const ordered =
      walk.sort.by === 'date' ? matched : [...matched].sort((a, b) => order(keyOf(a), a.id, keyOf(b), b.id));
    const n = ordered.length;
    const at = walk.sort.descending ? (k: number) => ordered[n - 1 - k]! : (k: number) => ordered[k]!;
    const direction = walk.sort.descending ? -1 : 1;
    const after = walk.after;
    // The first match past `after` in the walk's direction (matches are sorted that way: a binary search).
    let from = 0;
    if (after) {
      let high = n;
      while (from < high) {
        const middle = (from + high) >>> 1;
        const found = at(middle);
        if (direction * order(keyOf(found), found.id, after.key, after.id) > 0) high = middle;
        else from = middle + 1;
      }
    }
    const items: Found[] = [];
    for (let k = from; !walk.summaryCount && k < n && items.length < walk.count; k++) items.push(at(k));
    const last = items.at(-1);
    const next =
      !walk.summaryCount && last && from + walk.count < ordered.length
        ? encodeRecordWalk(this.deps.cursors, principal, { ...walk, after: { key: keyOf(last), id: last.id } })
        : null;
    const included = await this.included(walk, items, grants, obs);
    await this.deps.gateway.recorder.record(
      access.subject,
      principal,
      requestId,
      'search',
      type,
      items.length + included.length,
    );
    return {
      connectionId,
      type,
      total: walk.total ? matched.length : undefined,
      items,
      included,
      next,
      self: encodeRecordWalk(this.deps.cursors, principal, walk),
    };
  }

  /**
   * `GET {base}/Patient/{id}/$everything`: the patient and every record of the types the install may read (those of
   * `_type` only, when given; those stored since `_since`, when given), referenced ones included, paged by `next`
   * links. 404 unless `patient` is the connection's patient.
   */
  async everything(
    principal: Principal,
    requestId: string,
    connectionId: string,
    patient: string,
    parameters: [string, string][],
  ): Promise<RecordPage> {
    await this.deps.gateway.requireScope(principal, requestId, connectionId, {
      interaction: 'everything',
      type: null,
      log: true,
    });
    const walk = everythingWalkOf(this.deps, principal, connectionId, patient, parameters);
    const access = await this.deps.gateway.authorize(principal, requestId, connectionId, true, null);
    const { grants, obs } = access;
    const logged = (count: number) =>
      this.deps.gateway.recorder.record(access.subject, principal, requestId, 'everything', null, count);
    const now = this.deps.clock.now();
    const asOf = new Date(walk.asOf);
    const index = await this.index(connectionId, obs, null);
    // The patient must be the connection's, and visible: else nothing of it is said (one 404 for both).
    const patients = index?.visibleOfType('Patient', grants, now, asOf) ?? [];
    if (!patients.some((p) => p.resourceId === patient)) {
      await logged(0);
      throw notFound('patient');
    }
    const ordered: { rank: number; found: Found }[] = [];
    RECORD_TYPES.forEach((type, rank) => {
      if (!typeGranted(grants.resourceTypes, type) || (walk.types && !walk.types.includes(type))) return;
      for (const found of index!.visibleOfType(type, grants, now, asOf))
        if (walk.since === null || found.updatedAt >= walk.since) ordered.push({ rank, found });
    });
    const after = walk.after;
    const start = after
      ? ordered.findIndex(
          ({ rank, found }) =>
            rank > after.rank || (rank === after.rank && order(found.sortDate, found.id, after.key, after.id) > 0),
        )
      : 0;
    const from = start < 0 ? ordered.length : start;
    const page = ordered.slice(from, from + walk.count);
    const last = page.at(-1);
    const next =
      last && from + walk.count < ordered.length
        ? encodeRecordWalk(this.deps.cursors, principal, {
            ...walk,
            after: { rank: last.rank, key: last.found.sortDate, id: last.found.id },
          })
        : null;
    await logged(page.length);
    return {
      connectionId,
      type: 'Patient',
      total: ordered.length,
      items: page.map((p) => p.found),
      included: [],
      next,
      self: encodeRecordWalk(this.deps.cursors, principal, walk),
    };
  }

  /** What the walk's includes bring in for a page: the medications its requests name, the provenance of its records. */
  private async included(
    walk: Walk,
    items: Found[],
    grants: Awaited<ReturnType<GatewayService['authorize']>>['grants'],
    token: string,
  ): Promise<Found[]> {
    if (items.length === 0 || (!walk.include && !walk.revinclude)) return [];
    const now = this.deps.clock.now();
    const asOf = new Date(walk.asOf);
    const found: Found[] = [];
    if (walk.include && typeGranted(grants.resourceTypes, 'Medication')) {
      const named = new Set(items.flatMap((item) => (item.search.medication ?? []) as string[]));
      const medications = await this.visible(walk.connectionId, 'Medication', grants, token, now, asOf);
      found.push(...medications.filter((m) => named.has(`Medication/${m.resourceId}`)));
    }
    if (walk.revinclude && typeGranted(grants.resourceTypes, 'Provenance')) {
      const targets = new Set(items.map((item) => `${item.type}/${item.resourceId}`));
      const provenance = await this.visible(walk.connectionId, 'Provenance', grants, token, now, asOf);
      found.push(...provenance.filter((p) => ((p.search.target ?? []) as string[]).some((t) => targets.has(t))));
    }
    return found;
  }

  /**
   * An attachment (`Binary/{id}`) after the gateway's checks, when a DocumentReference or DiagnosticReport the caller
   * may see names it (their grants, labels and look-back decide); undefined otherwise, alike.
   */
  async binary(
    principal: Principal,
    requestId: string,
    connectionId: string,
    binaryId: string,
  ): Promise<Attachment | undefined> {
    await this.deps.gateway.requireScope(principal, requestId, connectionId, {
      interaction: 'binary',
      type: 'Binary',
      log: true,
    });
    const access = await this.deps.gateway.authorize(principal, requestId, connectionId, true, null, 'binary');
    const found = await this.namedAttachment(connectionId, binaryId, access);
    await this.deps.gateway.recorder.record(access.subject, principal, requestId, 'binary', 'Binary', found ? 1 : 0);
    return found;
  }

  private async namedAttachment(
    connectionId: string,
    binaryId: string,
    { grants, obs }: Access,
  ): Promise<Attachment | undefined> {
    const now = this.deps.clock.now();
    const named = `Binary/${binaryId}`;
    for (const type of ['DocumentReference', 'DiagnosticReport']) {
      if (!typeGranted(grants.resourceTypes, type)) continue;
      const visible = await this.visible(connectionId, type, grants, obs, now, now);
      const names = (found: Found) =>
        attachmentsOf(JSON.parse(resourceOfTail(found).toString('utf8')) as Record<string, unknown>).some(
          (attachment) => attachment.url === named,
        );
      if (visible.some((found) => found.tail.includes(`"${named}"`) && names(found))) {
        const attachment = await this.deps.attachments?.get(connectionId, binaryId);
        return attachment ?? undefined;
      }
    }
    return undefined;
  }

  /** One record by type and id after the same checks as a search, when the grants let the caller see it. */
  async read(
    principal: Principal,
    requestId: string,
    connectionId: string,
    type: string,
    resourceId: string,
  ): Promise<Found | undefined> {
    await this.deps.gateway.requireScope(principal, requestId, connectionId, { interaction: 'read', type, log: true });
    const access = await this.deps.gateway.authorize(principal, requestId, connectionId, true, type, 'read');
    const now = this.deps.clock.now();
    const visible = await this.visible(connectionId, type, access.grants, access.obs, now, now);
    const found = visible.find((record) => record.resourceId === resourceId);
    await this.deps.gateway.recorder.record(access.subject, principal, requestId, 'read', type, found ? 1 : 0);
    return found;
  }

  /** The visible records of the walk's type that every clause keeps, in the index's order. */
  private async matching(
    walk: Walk,
    grants: Parameters<ConnectionIndex['visibleOfType']>[1],
    token: string,
    clauses: Clause[],
  ): Promise<Found[]> {
    const now = this.deps.clock.now();
    const asOf = new Date(walk.asOf);
    const index = await this.index(walk.connectionId, token, walk.type);
    if (!index) return [];
    // A walk's pages, and the same search again, reuse the matches (the index never changes; a new ingest is a new one).
    const key = JSON.stringify([walk.type, grants, walk.params]);
    return index.remembered(key, grants.lookbackDays !== null, asOf, () =>
      index.visibleOfType(walk.type, grants, now, asOf).filter((found) => clauses.every((clause) => clause(found))),
    );
  }

  /**
   * What the grants let the caller see of a type: from the connection's index, or (a connection too large to index)
   * from an index of that type alone, read from the database for this request.
   */
  private async visible(
    connectionId: string,
    type: string,
    grants: Parameters<ConnectionIndex['visibleOfType']>[1],
    token: string,
    now: Date,
    asOf: Date,
  ): Promise<Found[]> {
    const index = await this.index(connectionId, token, type);
    return index?.visibleOfType(type, grants, now, asOf) ?? [];
  }

  /** The connection's index; for a connection too large to index, one of `type` (or all) read for this request. */
  private async index(connectionId: string, token: string, type: string | null): Promise<ConnectionIndex | null> {
    return (
      (await this.deps.indexes.get(connectionId, token)) ??
      ConnectionIndex.build(
        type === null ? this.deps.records.all(connectionId) : ofType(this.deps.records.all(connectionId), type),
        Number.MAX_SAFE_INTEGER,
      )
    );
  }
}

/** (key, id) order: keys as numbers, then ids as the database orders them. */
function order(keyA: number, idA: string, keyB: number, idB: string): number {
  return keyA - keyB || (idA < idB ? -1 : idA > idB ? 1 : 0);
}

async function* ofType<T extends { resourceType?: string }>(documents: AsyncIterable<T>, type: string) {
  for await (const doc of documents) if ((doc.resourceType ?? 'Observation') === type) yield doc;
}

/**
 * What a record search sorts by: the clinical date, when Portico stored it, or the earliest start of a date parameter's
 * values (a record without one sorts first, as one without a clinical date does).
 */
function sortKey(by: string): (found: Found) => number {
  if (by === 'date') return (found) => found.sortDate;
  if (by === '_lastUpdated') return (found) => found.updatedAt;
  return (found) => {
    const values = (found.search[by] ?? []) as DateValue[];
    return values.length === 0 ? BEGINNING.getTime() : Math.min(...values.map((value) => value.s));
  };
}
