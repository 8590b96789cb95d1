// Clinical ingest: checks a FHIR R4 Bundle of Observations and turns each into what search needs (tokens,
// the effective date range, security labels). Pure: the route and the repository decide what to do with it.
import { BEGINNING, dateRange, ONGOING, type DateRange } from '../dates.js';
import { observationSchemaProblems, type ResourceProblem } from './fhir-schema.js';
import { securityLabels } from '../security-labels.js';
import { searchValues, type SearchValues } from '../search/values.js';

export const MAX_ENTRIES = 1000;
/** Problems listed in one answer; the last one says how many more there were. */
export const MAX_PROBLEMS = 100;

export interface EntryProblem {
  /** The entry's index in Bundle.entry, or -1 for the bundle itself. */
  index: number;
  /** Where, from the bundle: "entry[3].resource.status". */
  path: string;
  problem: string;
}

export interface TokenSet {
  /** `${system}|${code}`, or `|${code}` for a coding without a system. */
  tokens: string[];
  codes: string[];
  systems: string[];
}

/** A checked resource as the store takes it (an Observation here; ingest/records.ts makes those of other types). */
export interface NormalizedObservation {
  /** The resource type; absent for an Observation. */
  resourceType?: string;
  resourceId: string;
  /** The resource as given: stored and returned by the gateway as it came. */
  resource: Record<string, unknown>;
  code: TokenSet;
  category: TokenSet;
  /** The range effective[x] stands for; null without effective[x] (or a Timing without events). */
  date: DateRange | null;
  /** The v3-Confidentiality code of meta.security; 'N' without one. */
  confidentiality: string;
  /** The v3-ActCode codes of meta.security, sorted and unique. */
  sensitivity: string[];
  /** Its search values (search/values.ts). */
  search?: SearchValues;
}

export type BundleResult =
  { ok: true; observations: NormalizedObservation[] } | { ok: false; problems: EntryProblem[] };

const BUNDLE_TYPES = ['collection', 'batch', 'searchset'];
/**
 * In a searchset (what an EHR's search answers), the entries that are not the search's matches: resources brought
 * in by `_include` and the server's OperationOutcome. They are not observations of the search and are passed over.
 */
const NOT_MATCHES = new Set(['include', 'outcome']);
const VALUE_ELEMENTS = [
  'valueQuantity',
  'valueCodeableConcept',
  'valueString',
  'valueBoolean',
  'valueInteger',
  'valueRange',
  'valueRatio',
  'valueSampledData',
  'valueTime',
  'valueDateTime',
  'valuePeriod',
];
const EFFECTIVE_ELEMENTS = ['effectiveDateTime', 'effectivePeriod', 'effectiveTiming', 'effectiveInstant'];

type Json = Record<string, unknown>;

/**
 * Checks a bundle whole: the bundle itself, then each entry's resource with `read` (an Observation's checks unless
 * told otherwise: ingest/records.ts reads any record type), each type and id at most once.
 */
export function validateBundle(
  body: unknown,
  read: (resource: unknown) => ReadResource = readObservation,
): BundleResult {
  if (!isObject(body))
    return { ok: false, problems: [{ index: -1, path: '', problem: 'must be a FHIR Bundle (a JSON object)' }] };
  const problems: EntryProblem[] = bundleProblems(body);
  const entries = body.entry;
  if (!Array.isArray(entries) || entries.length > MAX_ENTRIES) return { ok: false, problems };

  const observations: NormalizedObservation[] = [];
  const firstWithId = new Map<string, number>();
  entries.forEach((entry: unknown, index) => {
    const at = (path: string) => (path ? `entry[${index}].resource.${path}` : `entry[${index}].resource`);
    if (!isObject(entry)) {
      problems.push({ index, path: `entry[${index}]`, problem: 'must be an object with a resource' });
      return;
    }
    if (body.type === 'searchset' && isObject(entry.search) && NOT_MATCHES.has(entry.search.mode as string)) return;
    const found = read(entry.resource);
    const id = isObject(entry.resource) ? entry.resource.id : undefined;
    if (typeof id === 'string') {
      const type = String(isObject(entry.resource) ? entry.resource.resourceType : '');
      const first = firstWithId.get(`${type}/${id}`);
      if (first === undefined) firstWithId.set(`${type}/${id}`, index);
      else
        found.problems.push({
          path: 'id',
          problem: `repeats the id of entry[${first}]; each ${type}.id may appear once`,
        });
    }
    if (found.problems.length > 0)
      problems.push(...found.problems.map((p) => ({ index, path: at(p.path), problem: p.problem })));
    else if (found.observation) observations.push(found.observation);
  });
  return problems.length > 0 ? { ok: false, problems: capped(problems) } : { ok: true, observations };
}

function bundleProblems(body: Json): EntryProblem[] {
  const problems: EntryProblem[] = [];
  const bundle = (path: string, problem: string) => problems.push({ index: -1, path, problem });
  if (body.resourceType !== 'Bundle') bundle('resourceType', 'must be "Bundle"');
  if (!BUNDLE_TYPES.includes(body.type as string)) bundle('type', `must be one of ${BUNDLE_TYPES.join(', ')}`);
  if (body.entry === undefined) bundle('entry', 'is required');
  else if (!Array.isArray(body.entry)) bundle('entry', 'must be an array');
  else if (body.entry.length > MAX_ENTRIES)
    bundle('entry', `has ${body.entry.length} entries; at most ${MAX_ENTRIES} are accepted`);
  return problems;
}

function capped(problems: EntryProblem[]): EntryProblem[] {
  if (problems.length <= MAX_PROBLEMS) return problems;
  const listed = problems.slice(0, MAX_PROBLEMS - 1);
  const more = problems.length - listed.length;
  return [...listed, { index: -1, path: 'entry', problem: `${more} more problems not listed` }];
}

/** A resource's problems, and when it has none, the record to store. */
export interface ReadResource {
  problems: ResourceProblem[];
  observation?: NormalizedObservation;
}

/**
 * Resources from a health system's search (features/connections/sync): each checked as ingest checks an entry, the valid ones
 * kept (a repeated id: the later copy), the others counted, since one bad record must not stop a patient's sync.
 */
export function readObservations(resources: unknown[]): { observations: NormalizedObservation[]; invalid: number } {
  const byId = new Map<string, NormalizedObservation>();
  let invalid = 0;
  for (const resource of resources) {
    const read = readObservation(resource);
    if (read.problems.length > 0 || !read.observation) invalid++;
    else byId.set(read.observation.resourceId, read.observation);
  }
  return { observations: [...byId.values()], invalid };
}

/** The schema's verdict, the rules it cannot express, and, when all pass, the normalized observation. */
export function readObservation(resource: unknown): ReadResource {
  if (resource === undefined) return { problems: [{ path: '', problem: 'is required' }] };
  if (!isObject(resource)) return { problems: [{ path: '', problem: 'must be a FHIR resource (a JSON object)' }] };
  // Another resource type breaks every Observation rule at once; one problem says it.
  if (resource.resourceType !== 'Observation')
    return { problems: [{ path: 'resourceType', problem: 'must be "Observation"' }] };

  const problems = observationSchemaProblems(resource);
  const add = (path: string, problem: string) => problems.push({ path, problem });
  if (resource.id === undefined) add('id', 'is required: observations are stored by their id');
  if (resource.status === undefined) add('status', 'is required');
  // The gateway filters on the Observation's own code and labels: contained resources would pass unfiltered.
  if (resource.contained !== undefined) add('contained', 'is not accepted: send each resource as an entry of its own');
  if (isObject(resource.code) && !hasCodeOrText(resource.code)) add('code', 'needs a coding with a code, or a text');
  atMostOne(resource, '', VALUE_ELEMENTS, 'value[x]', add);
  atMostOne(resource, '', EFFECTIVE_ELEMENTS, 'effective[x]', add);
  list(resource.component).forEach((component, i) => {
    if (isObject(component)) atMostOne(component, `component[${i}].`, VALUE_ELEMENTS, 'value[x]', add);
  });
  const date = effectiveRange(resource, add);
  const labels = securityLabels(isObject(resource.meta) ? resource.meta.security : undefined, add);

  if (problems.length > 0) return { problems: firstPerPath(problems) };
  return {
    problems,
    observation: {
      resourceId: resource.id as string,
      resource,
      code: tokenSet([resource.code]),
      category: tokenSet(list(resource.category)),
      date,
      confidentiality: labels.confidentiality,
      sensitivity: labels.sensitivity,
      search: searchValues(resource),
    },
  };
}

function hasCodeOrText(concept: Json): boolean {
  if (typeof concept.text === 'string' && concept.text.trim() !== '') return true;
  return list(concept.coding).some(
    (coding) => isObject(coding) && typeof coding.code === 'string' && coding.code !== '',
  );
}

/** A choice element ([x]) takes one type: the second one given is the problem. */
function atMostOne(
  element: Json,
  prefix: string,
  names: string[],
  choice: string,
  add: (path: string, problem: string) => void,
): void {
  const given = names.filter((name) => element[name] !== undefined);
  for (const name of given.slice(1))
    add(`${prefix}${name}`, `is a second ${choice} (${given[0]} is given too); at most one is allowed`);
}

/** The range effective[x] stands for, reporting dates that are not on the calendar or out of order. */
function effectiveRange(resource: Json, add: (path: string, problem: string) => void): DateRange | null {
  const range = (value: unknown, path: string): DateRange | null => {
    if (typeof value !== 'string') return null;
    const found = dateRange(value);
    if (!found) add(path, 'is not a valid date/time (FHIR dates SHALL be valid calendar dates)');
    return found;
  };
  for (const name of ['effectiveDateTime', 'effectiveInstant']) {
    if (resource[name] !== undefined) return range(resource[name], name);
  }
  if (isObject(resource.effectivePeriod)) {
    const { start, end } = resource.effectivePeriod;
    if (start === undefined && end === undefined) {
      add('effectivePeriod', 'needs a start or an end');
      return null;
    }
    const from = start === undefined ? point(BEGINNING) : range(start, 'effectivePeriod.start');
    const to = end === undefined ? point(ONGOING) : range(end, 'effectivePeriod.end');
    if (!from || !to) return null;
    if (from.start > to.end) {
      add('effectivePeriod', 'start is after end');
      return null;
    }
    return { start: from.start, end: to.end };
  }
  if (isObject(resource.effectiveTiming)) {
    const events = list(resource.effectiveTiming.event).map((event, i) => range(event, `effectiveTiming.event[${i}]`));
    const known = events.filter((event): event is DateRange => event !== null);
    if (known.length === 0 || known.length < events.length) return null;
    return {
      start: new Date(Math.min(...known.map((event) => event.start.getTime()))),
      end: new Date(Math.max(...known.map((event) => event.end.getTime()))),
    };
  }
  return null;
}

const point = (instant: Date): DateRange => ({ start: new Date(instant.getTime()), end: new Date(instant.getTime()) });

function tokenSet(concepts: unknown[]): TokenSet {
  const tokens = new Set<string>();
  const codes = new Set<string>();
  const systems = new Set<string>();
  for (const concept of concepts) {
    if (!isObject(concept)) continue;
    for (const coding of list(concept.coding)) {
      if (!isObject(coding)) continue;
      const system = typeof coding.system === 'string' ? coding.system : undefined;
      const code = typeof coding.code === 'string' ? coding.code : undefined;
      if (system !== undefined) systems.add(system);
      if (code === undefined) continue;
      codes.add(code);
      tokens.add(`${system ?? ''}|${code}`);
    }
  }
  return { tokens: [...tokens].sort(), codes: [...codes].sort(), systems: [...systems].sort() };
}

/** The schema and the rules can both object to one value (a malformed date); the first word stands. */
function firstPerPath(problems: ResourceProblem[]): ResourceProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => !seen.has(p.path) && seen.add(p.path));
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
