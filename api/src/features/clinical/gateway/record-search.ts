// Search and read of any record type on a connection's FHIR base (docs/api.md, "The whole record"): the gateway's
// checks in the gateway's order (GatewayService.authorize, with the type asked for in place of Observation), the
// install's grants for that type (labels, look-back by its clinical date, LOINC codes for an Observation), then the
// FHIR search parameters as clauses over the stored search values (search/matching.ts), over the connection's index
// or, for a connection too large to index, over its records read from the database. Paging is by keyset, carried in
// a signed cursor bound to the account and app, as the observation gateway's.
import type { Clock } from '#core/clock.js';
import type { Principal } from '../../../shared/http/auth.js';
import type { CursorCodec } from '../../../shared/http/cursor.js';
import { invalidField, notFound, type FieldError } from '../../../shared/http/errors.js';
import { throwIfAny } from '../../../shared/http/validate.js';
import type { RecordStore } from '../records/store.js';
import type { Attachment, AttachmentStore } from '../attachments/store.js';
import { CLINICAL_DATE, RECORD_TYPES } from '../record-types.js';
import { dateRange } from '../dates.js';
import { clauseOf, type Clause } from '../search/matching.js';
import { ConnectionIndex, type IndexedObservation as Found } from './connection-index.js';
import type { ConnectionIndexes } from './connection-indexes.js';
import { typeGranted, type GatewayService } from './service.js';

const CURSOR_ROUTE = 'records/_search';
const CURSOR_MAX = 16384;
export const DEFAULT_COUNT = 50;
export const MAX_COUNT = 100;

/** The parameters that shape the answer rather than select records. */
export const RESULT_PARAMETERS = [
  '_count',
  '_sort',
  '_total',
  '_summary',
  '_format',
  '_pretty',
  '_cursor',
  '_include',
  '_revinclude',
] as const;
/** The includes served (US Core asks for these two). */
const INCLUDE = 'MedicationRequest:medication';
const REVINCLUDE = 'Provenance:target';

/** Everything a search needs to continue: the cursor carries it. */
interface Walk {
  connectionId: string;
  appId: string;
  type: string;
  /** The selecting parameters, as given (name with modifier, value). */
  params: [string, string][];
  /** `date`: the clinical date; `_lastUpdated`: when Portico stored it. */
  sort: { by: 'date' | '_lastUpdated'; descending: boolean };
  count: number;
  total: boolean;
  summaryCount: boolean;
  asOf: number;
  after?: { key: number; id: string };
  /** `_include=MedicationRequest:medication`. */
  include?: boolean;
  /** `_revinclude=Provenance:target`. */
  revinclude?: boolean;
}

/** A `$everything` walk: every granted type (or those of `_type`), Patient first, then in RECORD_TYPES order. */
interface EverythingWalk {
  connectionId: string;
  appId: string;
  type: '$everything';
  patient: string;
  types: string[] | null;
  since: number | null;
  count: number;
  asOf: number;
  after?: { rank: number; key: number; id: string };
}

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

  /** A page of a search of `type` with FHIR parameters, or of the walk a cursor continues. */
  async search(
    principal: Principal,
    requestId: string,
    connectionId: string,
    type: string,
    parameters: [string, string][],
  ): Promise<RecordPage> {
    this.deps.gateway.checkScope(principal, requestId);
    const walk = this.walkOf(principal, connectionId, type, parameters);
    const clauses = clausesOf(type, walk.params); // (checked in walkOf: a 400 comes before any check reads)
    const { grants, obs } = await this.deps.gateway.authorize(principal, requestId, connectionId, true, type);
    const matched = await this.matching(walk, grants, obs, clauses);
    const keyOf = walk.sort.by === 'date' ? (f: Found) => f.sortDate : (f: Found) => f.updatedAt;
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
        ? this.encode(principal, { ...walk, after: { key: keyOf(last), id: last.id } })
        : null;
    return {
      connectionId,
      type,
      total: walk.total ? matched.length : undefined,
      items,
      included: await this.included(walk, items, grants, obs),
      next,
      self: this.encode(principal, walk),
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
    this.deps.gateway.checkScope(principal, requestId);
    const walk = this.everythingWalk(principal, connectionId, patient, parameters);
    const { grants, obs } = await this.deps.gateway.authorize(principal, requestId, connectionId, true, null);
    const now = this.deps.clock.now();
    const asOf = new Date(walk.asOf);
    const index = await this.index(connectionId, obs, null);
    // The patient must be the connection's, and visible: else nothing of it is said (one 404 for both).
    const patients = index?.visibleOfType('Patient', grants, now, asOf) ?? [];
    if (!patients.some((p) => p.resourceId === patient)) throw notFound('patient');
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
        ? this.encode(principal, { ...walk, after: { rank: last.rank, key: last.found.sortDate, id: last.found.id } })
        : null;
    return {
      connectionId,
      type: 'Patient',
      total: ordered.length,
      items: page.map((p) => p.found),
      included: [],
      next,
      self: this.encode(principal, walk),
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
    this.deps.gateway.checkScope(principal, requestId);
    const { grants, obs } = await this.deps.gateway.authorize(principal, requestId, connectionId, true, null);
    const now = this.deps.clock.now();
    const named = `"Binary/${binaryId}"`;
    for (const type of ['DocumentReference', 'DiagnosticReport']) {
      if (!typeGranted(grants.resourceTypes, type)) continue;
      const visible = await this.visible(connectionId, type, grants, obs, now, now);
      if (visible.some((found) => found.tail.includes(named))) {
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
    this.deps.gateway.checkScope(principal, requestId);
    const { grants, obs } = await this.deps.gateway.authorize(principal, requestId, connectionId, true, type);
    const now = this.deps.clock.now();
    const visible = await this.visible(connectionId, type, grants, obs, now, now);
    return visible.find((found) => found.resourceId === resourceId);
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

  private everythingWalk(
    principal: Principal,
    connectionId: string,
    patient: string,
    parameters: [string, string][],
  ): EverythingWalk {
    const cursor = parameters.find(([name]) => name === '_cursor')?.[1];
    if (cursor !== undefined) {
      const walk = this.decode(principal, cursor, parameters) as unknown as EverythingWalk;
      if (walk.type !== '$everything' || walk.connectionId !== connectionId || walk.patient !== patient)
        throw invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
      return walk;
    }
    const errors: FieldError[] = [];
    const walk: EverythingWalk = {
      connectionId,
      appId: principal.appId!,
      type: '$everything',
      patient,
      types: null,
      since: null,
      count: DEFAULT_COUNT,
      asOf: this.deps.clock.now().getTime(),
    };
    for (const [name, value] of parameters) {
      if (name === '_count') {
        if (/^[0-9]{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_COUNT) walk.count = Number(value);
        else errors.push({ in: 'query', name, detail: `must be an integer from 1 to ${MAX_COUNT}` });
      } else if (name === '_type') {
        const types = value.split(',');
        const unknown = types.filter((type) => !RECORD_TYPES.includes(type));
        if (unknown.length > 0)
          errors.push({ in: 'query', name, detail: `names types not served: ${unknown.join(', ')}` });
        walk.types = types;
      } else if (name === '_since') {
        const range = dateRange(value);
        if (!range) errors.push({ in: 'query', name, detail: 'must be a FHIR instant or date' });
        else walk.since = range.start.getTime();
      } else if (name !== '_format' && name !== '_pretty')
        errors.push({ in: 'query', name, detail: 'is not a parameter of $everything (_since, _type, _count)' });
    }
    throwIfAny(errors);
    return walk;
  }

  private walkOf(principal: Principal, connectionId: string, type: string, parameters: [string, string][]): Walk {
    const cursor = parameters.find(([name]) => name === '_cursor')?.[1];
    if (cursor !== undefined) {
      const walk = this.decode(principal, cursor, parameters) as Walk;
      if (walk.connectionId !== connectionId || walk.type !== type)
        throw invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
      return walk;
    }
    const errors: FieldError[] = [];
    const selecting: [string, string][] = [];
    const walk: Walk = {
      connectionId,
      appId: principal.appId!,
      type,
      params: selecting,
      sort: { by: 'date', descending: true },
      count: DEFAULT_COUNT,
      total: true,
      summaryCount: false,
      asOf: this.deps.clock.now().getTime(),
    };
    const seen = new Set<string>();
    for (const [name, value] of parameters) {
      const once = () => {
        if (seen.has(name)) errors.push({ in: 'query', name, detail: 'must be given at most once' });
        seen.add(name);
      };
      switch (name) {
        case '_count':
          once();
          if (/^[0-9]{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_COUNT)
            walk.count = Number(value);
          else errors.push({ in: 'query', name, detail: `must be an integer from 1 to ${MAX_COUNT}` });
          break;
        case '_sort': {
          once();
          const descending = value.startsWith('-');
          const by = descending ? value.slice(1) : value;
          if (by === '_lastUpdated') walk.sort = { by, descending };
          else if ((CLINICAL_DATE[type] ?? []).includes(by)) walk.sort = { by: 'date', descending };
          else
            errors.push({
              in: 'query',
              name,
              detail: `sorts by _lastUpdated${CLINICAL_DATE[type] ? ` or ${CLINICAL_DATE[type].join(', ')}` : ''} (a leading - for descending)`,
            });
          break;
        }
        case '_total':
          once();
          if (value === 'none') walk.total = false;
          else if (value !== 'accurate') errors.push({ in: 'query', name, detail: 'must be accurate or none' });
          break;
        case '_summary':
          once();
          if (value === 'count') walk.summaryCount = true;
          else errors.push({ in: 'query', name, detail: 'only count is served' });
          break;
        case '_format':
          if (!['json', 'application/json', 'application/fhir+json', 'application/json+fhir'].includes(value))
            errors.push({ in: 'query', name, detail: 'only JSON is served (json, application/fhir+json)' });
          break;
        case '_pretty':
          break; // formatting only: answers are compact either way
        case '_include':
          once();
          if (value === INCLUDE && type === 'MedicationRequest') walk.include = true;
          else errors.push({ in: 'query', name, detail: `only ${INCLUDE} is served (on MedicationRequest)` });
          break;
        case '_revinclude':
          once();
          if (value === REVINCLUDE) walk.revinclude = true;
          else errors.push({ in: 'query', name, detail: `only ${REVINCLUDE} is served` });
          break;
        default:
          selecting.push([name, value]);
      }
    }
    clausesOf(type, selecting, errors);
    throwIfAny(errors);
    return walk;
  }

  /** A cursor's walk, when it was issued to this app and comes alone. */
  private decode(principal: Principal, cursor: string, parameters: [string, string][]): { appId: string } {
    const rejected = invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
    if (parameters.length > 1) throw invalidField('query', '_cursor', 'carries the search: send it alone');
    let walk: { appId: string };
    try {
      walk = this.deps.cursors.decodeData(
        { route: CURSOR_ROUTE, accountId: principal.accountId },
        cursor,
        CURSOR_MAX,
      ) as { appId: string };
    } catch {
      throw rejected;
    }
    if (walk.appId !== principal.appId) throw rejected;
    return walk;
  }

  private encode(principal: Principal, walk: Walk | EverythingWalk): string {
    return this.deps.cursors.encodeData({ route: CURSOR_ROUTE, accountId: principal.accountId }, walk);
  }
}

/** The clauses of a search's selecting parameters; problems go to `errors` (else thrown as one 400). */
function clausesOf(type: string, params: [string, string][], errors?: FieldError[]): Clause[] {
  const problems = errors ?? [];
  const clauses = params.flatMap(([name, value]) => clauseOf(type, name, value, problems) ?? []);
  if (!errors) throwIfAny(problems);
  return clauses;
}

/** (key, id) order: keys as numbers, then ids as the database orders them. */
function order(keyA: number, idA: string, keyB: number, idB: string): number {
  return keyA - keyB || (idA < idB ? -1 : idA > idB ? 1 : 0);
}

async function* ofType<T extends { resourceType?: string }>(documents: AsyncIterable<T>, type: string) {
  for await (const doc of documents) if ((doc.resourceType ?? 'Observation') === type) yield doc;
}
