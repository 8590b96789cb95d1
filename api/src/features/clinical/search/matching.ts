// FHIR R4 search over stored search values (values.ts), for any record type: a request's parameters become clauses,
// each a test of one resource's values, all of which must pass (a repeated parameter is AND, a comma inside one is
// OR). How each kind compares is FHIR's: tokens by system and code, dates as ranges with prefixes, references by
// `Type/id`, strings by prefix without case or accents, quantities and numbers with the precision they are written
// in. Which parameters a type has, and what each selects in a resource, come from the definitions
// (definitions.ts), not from code here.
import { dateRange } from '../dates.js';
import type { FieldError } from '../../../shared/http/errors.js';
import { parseToken, type TokenClause } from '../gateway/query.js';
import { searchParams, STORE_PARAMS, type ParamKind } from './definitions.js';
import { foldString, referenceKey, type DateValue, type SearchValue, type SearchValues } from './values.js';

/** What a clause reads of a stored resource. */
export interface Searched {
  resourceId: string;
  /** When Portico stored this version (epoch ms): `_lastUpdated`. */
  updatedAt: number;
  search: SearchValues;
}

export type Clause = (record: Searched) => boolean;

const DATE_PREFIXES = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb'] as const;
const NUMBER_PREFIXES = ['eq', 'ne', 'gt', 'lt', 'ge', 'le'] as const;
type Prefix = (typeof DATE_PREFIXES)[number];
const MAX_ALTERNATIVES = 50;

/**
 * The clause of one parameter as given (`name` with its modifier, and its value), for `resourceType`; a problem is
 * added to `errors` (and nothing returned) when the parameter is not one of the type's or its value does not parse.
 */
export function clauseOf(resourceType: string, name: string, value: string, errors: FieldError[]): Clause | undefined {
  const fail = (detail: string): undefined => void errors.push({ in: 'query', name, detail });
  const [base, modifier] = name.split(':', 2) as [string, string | undefined];
  const kind: ParamKind | undefined =
    base === '_id' ? 'token' : base === '_lastUpdated' ? 'date' : searchParams(resourceType).get(base)?.kind;
  if (kind === undefined) return fail(`is not a search parameter of ${resourceType}`);
  const read = (values: SearchValues): SearchValue[] => values[base] ?? [];
  const select =
    base === '_id'
      ? (r: Searched): SearchValue[] => [`|${r.resourceId}`]
      : base === '_lastUpdated'
        ? (r: Searched): SearchValue[] => [{ s: r.updatedAt, e: r.updatedAt }]
        : (r: Searched) => read(r.search);
  if (modifier === 'missing') {
    if (value !== 'true' && value !== 'false') return fail('`:missing` takes true or false');
    const missing = value === 'true';
    return (r) => (select(r).length === 0) === missing;
  }
  try {
    const test = valueTest(kind, modifier, value, fail);
    if (!test) return undefined;
    return (r) => test(select(r));
  } catch (error) {
    // parseToken's own messages (a 400 describing the value)
    const detail = (error as { details?: { errors?: FieldError[] } }).details?.errors?.[0]?.detail;
    return fail(detail ?? 'is not a valid value');
  }
}

/** Whether the store answers the parameter itself (`_id`, `_lastUpdated`) or from the resource's values. */
export const isStoreParam = (name: string) => STORE_PARAMS.has(name.split(':', 1)[0]!);

type ValuesTest = (values: SearchValue[]) => boolean;

function valueTest(
  kind: ParamKind,
  modifier: string | undefined,
  value: string,
  fail: (detail: string) => undefined,
): ValuesTest | undefined {
  const alternatives = splitAlternatives(value);
  if (alternatives.length > MAX_ALTERNATIVES) return fail(`at most ${MAX_ALTERNATIVES} comma-separated alternatives`);
  if (alternatives.some((a) => a === '')) return fail('has an empty alternative');
  const allowed: Record<ParamKind, (string | undefined)[]> = {
    token: [undefined, 'not'],
    string: [undefined, 'exact', 'contains'],
    date: [undefined],
    reference: [undefined],
    quantity: [undefined],
    number: [undefined],
    uri: [undefined],
  };
  if (!allowed[kind].includes(modifier))
    return fail(
      `takes no :${modifier} modifier here (a ${kind} parameter takes ${
        allowed[kind]
          .filter(Boolean)
          .map((m) => `:${m!}`)
          .join(', ') || 'none'
      } and :missing)`,
    );
  switch (kind) {
    case 'token': {
      const test = tokenTest(parseToken(value, 'token'));
      return modifier === 'not' ? (values) => !test(values) : test;
    }
    case 'date': {
      const tests = alternatives.map((alternative) => dateTest(alternative, fail));
      if (tests.some((t) => t === undefined)) return undefined;
      return (values) => tests.some((t) => t!(values));
    }
    case 'reference': {
      const wanted = alternatives.map((alternative) => referenceKey(alternative));
      return (values) =>
        values.some((v) =>
          wanted.some((w) => v === w || (!w.includes('/') && typeof v === 'string' && v.endsWith(`/${w}`))),
        );
    }
    case 'string': {
      const wanted = alternatives.map(foldString);
      const matches =
        modifier === 'exact'
          ? (v: string, w: string) => v === w
          : modifier === 'contains'
            ? (v: string, w: string) => v.includes(w)
            : (v: string, w: string) => v.startsWith(w);
      return (values) => values.some((v) => typeof v === 'string' && wanted.some((w) => matches(v, w)));
    }
    case 'uri':
      return (values) => values.some((v) => alternatives.includes(v as string));
    case 'quantity':
    case 'number': {
      const tests = alternatives.map((alternative) => numberTest(kind, alternative, fail));
      if (tests.some((t) => t === undefined)) return undefined;
      return (values) => tests.some((t) => t!(values));
    }
  }
}

function tokenTest(clauses: TokenClause[]): ValuesTest {
  const exact = new Set<string>();
  const codes = new Set<string>();
  const systems = new Set<string>();
  for (const clause of clauses) {
    if (clause.kind === 'system-and-code') exact.add(`${clause.system}|${clause.code}`);
    else if (clause.kind === 'code-without-system') exact.add(`|${clause.code}`);
    else if (clause.kind === 'code') codes.add(clause.code);
    else systems.add(clause.system);
  }
  return (values) =>
    values.some((v) => {
      if (typeof v !== 'string') return false;
      if (exact.has(v)) return true;
      const bar = v.indexOf('|');
      return codes.has(v.slice(bar + 1)) || systems.has(v.slice(0, bar));
    });
}

/** A date alternative: R (a value's range) against P (the parameter's), as the observation gateway compares them. */
function dateTest(alternative: string, fail: (detail: string) => undefined): ValuesTest | undefined {
  const prefixed = /^[a-z]{2}/.test(alternative);
  const prefix = (prefixed ? alternative.slice(0, 2) : 'eq') as Prefix;
  if (!(DATE_PREFIXES as readonly string[]).includes(prefix))
    return fail(`"${prefix}" is not a supported prefix (${DATE_PREFIXES.join(', ')})`);
  const range = dateRange(prefixed ? alternative.slice(2) : alternative);
  if (!range) return fail(`"${alternative}" is not a FHIR date (YYYY, YYYY-MM, YYYY-MM-DD or a dateTime with a zone)`);
  const from = range.start.getTime();
  const to = range.end.getTime();
  const inside = (r: DateValue) => r.s >= from && r.e <= to;
  const compare: Record<Prefix, (r: DateValue) => boolean> = {
    eq: inside,
    ne: (r) => !inside(r),
    gt: (r) => r.e > to,
    lt: (r) => r.s < from,
    ge: (r) => r.e > to || inside(r),
    le: (r) => r.s < from || inside(r),
    sa: (r) => r.s > to,
    eb: (r) => r.e < from,
  };
  const test = compare[prefix];
  return (values) => values.some((v) => typeof v === 'object' && 's' in v && 'e' in v && test(v));
}

/**
 * A number or quantity alternative: `[prefix]number` (and for a quantity `|system|code`, either part empty). `eq`
 * matches a value within the precision the number is written in (5.4 is 5.35 ≤ v < 5.45), as FHIR defines.
 */
function numberTest(kind: 'quantity' | 'number', alternative: string, fail: (detail: string) => undefined) {
  const [numberPart, system, code] = kind === 'quantity' ? alternative.split('|') : [alternative];
  const prefixed = /^[a-z]{2}/.test(numberPart!);
  const prefix = prefixed ? numberPart!.slice(0, 2) : 'eq';
  if (!(NUMBER_PREFIXES as readonly string[]).includes(prefix))
    return fail(`"${prefix}" is not a supported prefix (${NUMBER_PREFIXES.join(', ')})`);
  const text = prefixed ? numberPart!.slice(2) : numberPart!;
  if (!/^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)) return fail(`"${text}" is not a number`);
  const n = Number(text);
  const decimals = /\.(\d+)/.exec(text.split(/[eE]/)[0]!)?.[1]?.length ?? 0;
  const half = 0.5 * 10 ** -decimals;
  const numberMatches: Record<string, (v: number) => boolean> = {
    eq: (v) => v >= n - half && v < n + half,
    ne: (v) => !(v >= n - half && v < n + half),
    gt: (v) => v > n,
    lt: (v) => v < n,
    ge: (v) => v >= n,
    le: (v) => v <= n,
  };
  const test = numberMatches[prefix]!;
  if (kind === 'number') return (values: SearchValue[]) => values.some((v) => typeof v === 'number' && test(v));
  return (values: SearchValue[]) =>
    values.some((v) => {
      if (typeof v !== 'object' || !('v' in v)) return false;
      const q = v;
      if (system && q.s !== system) return false;
      if (code && q.c !== code && q.u !== code) return false;
      return test(q.v);
    });
}

/** A parameter's value split at its unescaped commas (`\,` is a comma inside an alternative). */
function splitAlternatives(value: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\' && i + 1 < value.length) {
      current += value[++i];
    } else if (c === ',') {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}
