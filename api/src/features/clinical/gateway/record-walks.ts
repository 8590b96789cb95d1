// The walks of the record search (record-search.ts): what a search of a type, or a patient's `$everything`, asks for,
// read from FHIR search parameters (400 listing each problem before any check reads anything), and what the signed
// cursor of its `next` link carries to continue it.
import type { Clock } from '#core/clock.js';
import type { Principal } from '../../../shared/http/auth.js';
import type { CursorCodec } from '../../../shared/http/cursor.js';
import { invalidField, type FieldError } from '../../../shared/http/errors.js';
import { throwIfAny } from '../../../shared/http/validate.js';
import { dateRange } from '../dates.js';
import { CLINICAL_DATE, RECORD_TYPES } from '../record-types.js';
import { clauseOf, type Clause } from '../search/matching.js';

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
export const INCLUDE = 'MedicationRequest:medication';
export const REVINCLUDE = 'Provenance:target';

/** Everything a search needs to continue: the cursor carries it. */
export interface Walk {
  connectionId: string;
  appId: string;
  type: string;
  /** The selecting parameters, as given (name with modifier, value). */
  params: [string, string][];
  /**
   * `date`: the clinical date (the first present of the type's clinical-date parameters); `_lastUpdated`: when Portico
   * stored it; another of the type's clinical-date parameters (Condition's `onset-date`): that parameter's own value.
   */
  sort: { by: string; descending: boolean };
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
export interface EverythingWalk {
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

/** A search of `type` with FHIR parameters (not a cursor's), by app `appId` at `now`. */
export function searchWalk(
  connectionId: string,
  appId: string,
  type: string,
  parameters: [string, string][],
  now: number,
): Walk {
  const errors: FieldError[] = [];
  const selecting: [string, string][] = [];
  const walk: Walk = {
    connectionId,
    appId: appId,
    type,
    params: selecting,
    sort: { by: 'date', descending: true },
    count: DEFAULT_COUNT,
    total: true,
    summaryCount: false,
    asOf: now,
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
        if (/^[0-9]{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_COUNT) walk.count = Number(value);
        else errors.push({ in: 'query', name, detail: `must be an integer from 1 to ${MAX_COUNT}` });
        break;
      case '_sort': {
        once();
        const descending = value.startsWith('-');
        const by = descending ? value.slice(1) : value;
        const dates = CLINICAL_DATE[type] ?? [];
        if (by === '_lastUpdated') walk.sort = { by, descending };
        // A type's only clinical-date parameter is its clinical date (the index's order); where it has several (a
        // Condition's recorded and onset dates), each sorts by its own values.
        else if (dates.length === 1 && dates[0] === by) walk.sort = { by: 'date', descending };
        else if (dates.includes(by)) walk.sort = { by, descending };
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

/** A patient's `$everything` with its parameters (not a cursor's), by app `appId` at `now`. */
export function everythingWalk(
  connectionId: string,
  appId: string,
  patient: string,
  parameters: [string, string][],
  now: number,
): EverythingWalk {
  const errors: FieldError[] = [];
  const walk: EverythingWalk = {
    connectionId,
    appId: appId,
    type: '$everything',
    patient,
    types: null,
    since: null,
    count: DEFAULT_COUNT,
    asOf: now,
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

/** The clauses of a search's selecting parameters; problems go to `errors` (else thrown as one 400). */
export function clausesOf(type: string, params: [string, string][], errors?: FieldError[]): Clause[] {
  const problems = errors ?? [];
  const clauses = params.flatMap(([name, value]) => clauseOf(type, name, value, problems) ?? []);
  if (!errors) throwIfAny(problems);
  return clauses;
}

const CURSOR_ROUTE = 'records/_search';
const CURSOR_MAX = 16384;

export function everythingWalkOf(
  { cursors, clock }: { cursors: CursorCodec; clock: Clock },
  principal: Principal,
  connectionId: string,
  patient: string,
  parameters: [string, string][],
): EverythingWalk {
  const cursor = parameters.find(([name]) => name === '_cursor')?.[1];
  if (cursor === undefined)
    return everythingWalk(connectionId, principal.appId!, patient, parameters, clock.now().getTime());
  const walk = decodeWalk(cursors, principal, cursor, parameters) as unknown as EverythingWalk;
  if (walk.type !== '$everything' || walk.connectionId !== connectionId || walk.patient !== patient)
    throw invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
  return walk;
}

export function recordWalkOf(
  { cursors, clock }: { cursors: CursorCodec; clock: Clock },
  principal: Principal,
  connectionId: string,
  type: string,
  parameters: [string, string][],
): Walk {
  const cursor = parameters.find(([name]) => name === '_cursor')?.[1];
  if (cursor === undefined) return searchWalk(connectionId, principal.appId!, type, parameters, clock.now().getTime());
  const walk = decodeWalk(cursors, principal, cursor, parameters) as Walk;
  if (walk.connectionId !== connectionId || walk.type !== type)
    throw invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
  return walk;
}

/** A cursor's walk, when it was issued to this app and comes alone. */
function decodeWalk(
  cursors: CursorCodec,
  principal: Principal,
  cursor: string,
  parameters: [string, string][],
): { appId: string } {
  const rejected = invalidField('query', '_cursor', 'is not a cursor issued to this app for this search');
  if (parameters.length > 1) throw invalidField('query', '_cursor', 'carries the search: send it alone');
  let walk: { appId: string };
  try {
    walk = cursors.decodeData({ route: CURSOR_ROUTE, accountId: principal.accountId }, cursor, CURSOR_MAX) as {
      appId: string;
    };
  } catch {
    throw rejected;
  }
  if (walk.appId !== principal.appId) throw rejected;
  return walk;
}

export function encodeRecordWalk(cursors: CursorCodec, principal: Principal, walk: Walk | EverythingWalk): string {
  return cursors.encodeData({ route: CURSOR_ROUTE, accountId: principal.accountId }, walk);
}
