// What a sync run reads (docs/connecting.md, "Sync"), decided at its start: the patient (by read), then each type of
// the patient's compartment that the health system's CapabilityStatement lists with `search-type` and that the
// granted scope covers (every one the scope covers when the statement lists none or cannot be read), each by its own
// search with its own high-water mark, or by the searches a registration names for it (a server such as Epic's that
// needs a category). Then the resources those records point at (referenced types), each read once per run.
import { COMPARTMENT_TYPES, REFERENCED_TYPES } from '../../clinical/index.js';
import { underBase } from '../../smart/index.js';

/** A search refused by the server for this type alone: the type is skipped, the run goes on. */
export const REFUSED_TYPE = new Set(['http_400', 'http_403', 'http_404', 'http_501']);
/** Referenced resources read per run, at most. */
export const MAX_REFERENCES = 1000;
/** How long a server's CapabilityStatement is used before it is read again. */
export const CAPABILITIES_TTL_MS = 3_600_000;

const RECORD_SCOPE = /^patient\/([A-Z][A-Za-z]*|\*)\.(read|\*|c?r?u?d?s?)$/;

/** The types a granted scope lets Portico search: `patient/*.…` every one, `patient/<Type>.…` that one. */
export function coveredTypes(scope: string, types: readonly string[]): string[] {
  const granted = new Set<string>();
  for (const part of scope.split(' ')) {
    const match = RECORD_SCOPE.exec(part);
    if (!match) continue;
    const [, type, permissions] = match;
    // v1 `read` or `*`; v2 needs `s` (search) or `r` (the Patient is read).
    if (permissions !== 'read' && permissions !== '*' && !permissions!.includes('s') && !permissions!.includes('r'))
      continue;
    if (type === '*') return [...types];
    granted.add(type!);
  }
  return types.filter((type) => granted.has(type));
}

/** The types a CapabilityStatement lists with `search-type` (Patient: with `read`); null when it lists none. */
export function listedTypes(statement: unknown): Set<string> | null {
  const rest = (statement as { rest?: { resource?: { type?: unknown; interaction?: { code?: unknown }[] }[] }[] })
    ?.rest;
  const listed = new Set<string>();
  for (const server of Array.isArray(rest) ? rest : [])
    for (const resource of Array.isArray(server.resource) ? server.resource : []) {
      const codes = (Array.isArray(resource.interaction) ? resource.interaction : []).map((i) => i.code);
      if (typeof resource.type !== 'string') continue;
      if (codes.includes('search-type') || (resource.type === 'Patient' && codes.includes('read')))
        listed.add(resource.type);
    }
  return listed.size > 0 ? listed : null;
}

/**
 * The run's steps: `Patient` (a read), then `<Type>` for each type's search, or `<Type>?<query>` for each search a
 * registration names for the type (in place of the plain one).
 */
export function planOf(
  listed: Set<string> | null,
  scope: string,
  searches: Readonly<Record<string, readonly string[]>> = {},
): string[] {
  const covered = coveredTypes(scope, COMPARTMENT_TYPES);
  const steps: string[] = [];
  for (const type of covered) {
    if (listed && !listed.has(type)) continue;
    const own = searches[type];
    if (type !== 'Patient' && own && own.length > 0) steps.push(...own.map((query) => `${type}?${query}`));
    else steps.push(type);
  }
  return steps;
}

/** A step's type and its registration's query ('' for the plain search). */
export function stepOf(step: string): { type: string; query: string } {
  const at = step.indexOf('?');
  return at < 0 ? { type: step, query: '' } : { type: step.slice(0, at), query: step.slice(at + 1) };
}

export const PAGE_SIZE = 100;

/** The first page of a step's search (`_lastUpdated=ge<mark>` after its first complete run). */
export function firstPageOf(fhirBaseUrl: string, step: string, patient: string, mark: string | null): string {
  const { type, query } = stepOf(step);
  if (type === 'Patient') return underBase(fhirBaseUrl, `Patient/${patient}`);
  const url = new URL(underBase(fhirBaseUrl, type));
  url.searchParams.set('patient', patient);
  for (const [name, value] of new URLSearchParams(query)) url.searchParams.append(name, value);
  url.searchParams.set('_count', String(PAGE_SIZE));
  if (mark !== null) url.searchParams.set('_lastUpdated', `ge${mark}`);
  return url.href;
}

const REFERENCED = new Set<string>(REFERENCED_TYPES);

/**
 * The resources of referenced types a resource points at (`Type/id`), by a relative reference or an absolute one
 * on the FHIR server's own base, to `into` (while it holds fewer than MAX_REFERENCES).
 */
export function collectReferences(resource: unknown, fhirBaseUrl: string, into: Set<string>): void {
  const base = `${fhirBaseUrl.replace(/\/+$/, '')}/`;
  const visit = (value: unknown): void => {
    if (into.size >= MAX_REFERENCES) return;
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    for (const [name, inner] of Object.entries(value)) {
      if (name === 'reference' && typeof inner === 'string') {
        const relative = inner.startsWith(base) ? inner.slice(base.length) : inner;
        const match = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/.exec(relative);
        if (match && REFERENCED.has(match[1]!) && into.size < MAX_REFERENCES) into.add(`${match[1]}/${match[2]}`);
      } else visit(inner);
    }
  };
  visit(resource);
}
