// What each search parameter of a resource's type (search/definitions.ts) selects in it, evaluated once when the
// resource is stored, by Medplum's FHIRPath engine over the definition's expression, and kept beside the resource in
// the form its kind of parameter compares (search/matching.ts). Nothing here knows a record type.
import { evalFhirPathTyped, toTypedValue, type TypedValue } from '@medplum/core';
import { BEGINNING, dateRange, ONGOING } from '../dates.js';
import { CLINICAL_DATE } from '../record-types.js';
import { searchParams, type ParamKind } from './definitions.js';

/** A date parameter's value: the range it stands for, in epoch milliseconds, inclusive. */
export interface DateValue {
  s: number;
  e: number;
}

/** A quantity parameter's value: its number, and the system, code and unit it is given in ('' when absent). */
export interface QuantityValue {
  v: number;
  s: string;
  c: string;
  u: string;
}

/**
 * token: `system|code` ('' for no system), for codings, identifiers and contact points alike, and `|value` for a
 * code, boolean or string; reference: `Type/id` for a literal reference (relative, or absolute with that ending),
 * else the reference as given (`#contained`, `urn:uuid:…`, a canonical); string: lower case without diacritics;
 * uri: as given; number: the number.
 */
export type SearchValue = string | number | DateValue | QuantityValue;

/** A resource's search values by parameter name; a parameter that selects nothing is absent. */
export type SearchValues = Record<string, SearchValue[]>;

/**
 * Values kept per parameter: a sanity bound. What a resource's values take is bounded by the resource itself (at most
 * 1 MiB: each value is a part of it), and real records need many: a Provenance names every record it covers (Synthea
 * writes one per patient, naming each of the patient's thousands of records).
 */
export const MAX_VALUES_PER_PARAM = 100_000;

type Json = Record<string, unknown>;

/**
 * The search values of a resource of a record type (one the definitions know; {} for any other). `everyParameter`:
 * evaluate each parameter, even one that reads only elements the resource has not (what a test compares with).
 */
export function searchValues(resource: Json, everyParameter = false): SearchValues {
  const type = resource.resourceType as string;
  const input = [toTypedValue(resource)];
  const values: SearchValues = {};
  // What the resource has at its top level: a choice element once by its name (`value` for `valueQuantity`).
  const present = new Set<string>();
  for (const key of Object.keys(resource)) {
    present.add(key);
    for (let at = 1; at < key.length; at++) {
      const c = key.charCodeAt(at);
      if (c >= 65 && c <= 90) present.add(key.slice(0, at)); // A–Z: a choice's type may begin here
    }
  }
  for (const param of searchParams(type).values()) {
    // Most parameters read an element the resource has not: they select nothing, unevaluated.
    if (!everyParameter && param.roots !== null && !param.roots.some((root) => present.has(root))) continue;
    let selected: TypedValue[];
    try {
      selected = evalFhirPathTyped(param.parsed, input);
    } catch {
      continue; // an expression the engine cannot evaluate on this resource selects nothing
    }
    if (selected.length === 0) continue;
    const found = new Map<string, SearchValue>();
    for (const typed of selected) {
      for (const value of valuesOf(param.kind, typed)) {
        if (found.size >= MAX_VALUES_PER_PARAM) break;
        found.set(typeof value === 'object' ? JSON.stringify(value) : String(value), value);
      }
    }
    if (found.size > 0) values[param.name] = [...found.values()];
  }
  return values;
}

/**
 * The range of a resource's clinical date (record-types.ts, CLINICAL_DATE): all the ranges of the first of its type's
 * date parameters that has any, as one range; null when it has none.
 */
export function clinicalDate(resourceType: string, values: SearchValues): DateValue | null {
  for (const name of CLINICAL_DATE[resourceType] ?? []) {
    const ranges = (values[name] ?? []) as DateValue[];
    if (ranges.length === 0) continue;
    let s = Number.POSITIVE_INFINITY;
    let e = Number.NEGATIVE_INFINITY;
    for (const range of ranges) {
      s = Math.min(s, range.s);
      e = Math.max(e, range.e);
    }
    return { s, e };
  }
  return null;
}

/** `Type/id` for a literal reference to a resource (relative, absolute, or versioned); else the reference itself. */
export function referenceKey(reference: string): string {
  const match = /(?:^|\/)([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/.exec(
    reference,
  );
  return match ? `${match[1]}/${match[2]}` : reference;
}

/** Lower case, without diacritics: how FHIR string search compares (`Zoë` finds `zoe`). */
export const foldString = (text: string): string => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

function valuesOf(kind: ParamKind, { type, value }: TypedValue): SearchValue[] {
  if (value === undefined || value === null) return [];
  switch (kind) {
    case 'token':
      return tokens(type, value);
    case 'date':
      return dates(type, value);
    case 'reference':
      return typeof value === 'string'
        ? [value] // canonical
        : typeof (value as Json).reference === 'string'
          ? [referenceKey((value as Json).reference as string)]
          : [];
    case 'string':
      return strings(value).map(foldString);
    case 'quantity':
      return quantity(value);
    case 'uri':
      return typeof value === 'string' ? [value] : [];
    case 'number':
      return typeof value === 'number' ? [value] : [];
  }
}

function tokens(type: string, value: unknown): string[] {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return [`|${value}`];
  if (typeof value !== 'object' || value === null) return [];
  const object = value as Json;
  const codings = type === 'CodeableConcept' ? list(object.coding) : [object];
  const found: string[] = [];
  for (const coding of codings) {
    if (typeof coding !== 'object' || coding === null) continue;
    const { system, code, value: identifier } = coding as Json;
    const key = typeof code === 'string' ? code : typeof identifier === 'string' ? identifier : undefined;
    if (key !== undefined) found.push(`${typeof system === 'string' ? system : ''}|${key}`);
  }
  return found;
}

function dates(type: string, value: unknown): DateValue[] {
  if (typeof value === 'string') {
    const range = dateRange(value);
    return range ? [{ s: range.start.getTime(), e: range.end.getTime() }] : [];
  }
  if (typeof value !== 'object') return [];
  const object = value as Json;
  if (type === 'Period') {
    const start = typeof object.start === 'string' ? dateRange(object.start) : null;
    const end = typeof object.end === 'string' ? dateRange(object.end) : null;
    if (!start && !end) return [];
    return [{ s: (start?.start ?? BEGINNING).getTime(), e: (end?.end ?? ONGOING).getTime() }];
  }
  if (type === 'Timing') return list(object.event).flatMap((event) => dates('dateTime', event));
  return [];
}

function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object') return [];
  // HumanName, Address and the like: every string part (family, given, line, city, text…).
  return Object.entries(value as Json).flatMap(([name, part]) =>
    name === 'extension' || name === 'id' || name === 'use' || name === 'period'
      ? []
      : typeof part === 'string'
        ? [part]
        : list(part).filter((item): item is string => typeof item === 'string'),
  );
}

function quantity(value: unknown): QuantityValue[] {
  if (typeof value !== 'object') return [];
  const { value: number, system, code, unit } = value as Json;
  if (typeof number !== 'number') return [];
  const text = (part: unknown) => (typeof part === 'string' ? part : '');
  return [{ v: number, s: text(system), c: text(code), u: text(unit) }];
}

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);
