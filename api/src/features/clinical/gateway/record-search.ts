// Search and read of any record type on a connection's FHIR base (docs/api.md, "The whole record"): the gateway's
// checks in the gateway's order (GatewayService.authorize, with the type asked for in place of Observation), the
// install's grants for that type (labels, look-back by its clinical date, LOINC codes for an Observation), then the
// FHIR search parameters as clauses over the stored search values (search/matching.ts), over the connection's index
// or, for a connection too large to index, over its records read from the database. Paging is by keyset, carried in
// a signed cursor bound to the account and app, as the observation gateway's.
import type { Clock } from '#core/clock.js';
import type { Principal } from '../../../shared/http/auth.js';
import type { CursorCodec } from '../../../shared/http/cursor.js';
import { invalidField, type FieldError } from '../../../shared/http/errors.js';
import { throwIfAny } from '../../../shared/http/validate.js';
import type { RecordStore } from '../records/store.js';
import { CLINICAL_DATE } from '../record-types.js';
import { clauseOf, type Clause } from '../search/matching.js';
import { ConnectionIndex, type IndexedObservation as Found } from './connection-index.js';
import type { ConnectionIndexes } from './connection-indexes.js';
import type { GatewayService } from './service.js';

const CURSOR_ROUTE = 'records/_search';
const CURSOR_MAX = 16384;
export const DEFAULT_COUNT = 50;
export const MAX_COUNT = 100;

/** The parameters that shape the answer rather than select records. */
export const RESULT_PARAMETERS = ['_count', '_sort', '_total', '_summary', '_format', '_pretty', '_cursor'] as const;

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
}

export interface RecordPage {
  connectionId: string;
  type: string;
  /** Undefined with `_total=none`. */
  total: number | undefined;
  items: Found[];
  next: string | null;
  self: string;
}

export interface RecordSearchDeps {
  gateway: GatewayService;
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
    const ordered =
      walk.sort.by === 'date' ? matched : [...matched].sort((a, b) => order(keyOf(a), a.id, keyOf(b), b.id));
    if (walk.sort.descending) ordered.reverse();
    const direction = walk.sort.descending ? -1 : 1;
    const after = walk.after;
    const start = after ? ordered.findIndex((f) => direction * order(keyOf(f), f.id, after.key, after.id) > 0) : 0;
    const from = start < 0 ? ordered.length : start;
    const items = walk.summaryCount ? [] : ordered.slice(from, from + walk.count);
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
      next,
      self: this.encode(principal, walk),
    };
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
    const visible = await this.visible(walk.connectionId, walk.type, grants, token, now, new Date(walk.asOf));
    return visible.filter((found) => clauses.every((clause) => clause(found)));
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
    const index =
      (await this.deps.indexes.get(connectionId, token)) ??
      (await ConnectionIndex.build(ofType(this.deps.records.all(connectionId), type), Number.MAX_SAFE_INTEGER));
    return index?.visibleOfType(type, grants, now, asOf) ?? [];
  }

  private walkOf(principal: Principal, connectionId: string, type: string, parameters: [string, string][]): Walk {
    const cursor = parameters.find(([name]) => name === '_cursor')?.[1];
    if (cursor !== undefined) {
      const rejected = invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
      if (parameters.length > 1) throw invalidField('query', '_cursor', 'carries the search: send it alone');
      let walk: Walk;
      try {
        walk = this.deps.cursors.decodeData(
          { route: CURSOR_ROUTE, accountId: principal.accountId },
          cursor,
          CURSOR_MAX,
        ) as Walk;
      } catch {
        throw rejected;
      }
      if (walk.appId !== principal.appId || walk.connectionId !== connectionId || walk.type !== type) throw rejected;
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
        default:
          selecting.push([name, value]);
      }
    }
    clausesOf(type, selecting, errors);
    throwIfAny(errors);
    return walk;
  }

  private encode(principal: Principal, walk: Walk): string {
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
