// The gateway's search (docs/api.md, "Clinical records and the observation gateway") as a predicate over one
// connection's in-memory index (connection-index.ts): the same clauses observationFilter (query.ts) gives the database,
// clause for clause, so either evaluation keeps exactly the same observations.
// test/api/features/clinical/gateway/query.test.ts runs both over one data set and compares every result. The predicate
// reads the index's columns by position: dates as numbers in typed arrays, labels as the number of their distinct set.
import type { CodingIndex } from '../records/document.js';
import {
  parseDateParam,
  parseToken,
  type DateParam,
  type Grants,
  type SearchParams,
  type TokenClause,
} from './query.js';

const LOINC = 'http://loinc.org';
const DAY_MS = 86_400_000;

/** The search fields of a connection's observations, by position in the index. */
export interface Columns {
  /** 1 for an Observation (the gateway's search sees no other type). */
  observation: Uint8Array;
  /** The effective range in epoch milliseconds; NaN for both without a date (every comparison is then false, as with an
   * absent field). */
  start: Float64Array;
  end: Float64Array;
  firstIngestedAt: Float64Array;
  /** The number of the observation's set of security labels in `labelSets`. */
  labels: Uint32Array;
  labelSets: readonly LabelSet[];
  code: readonly CodingIndex[];
  category: readonly CodingIndex[];
}

export interface LabelSet {
  confidentiality: string;
  sensitivity: readonly string[];
}

/** Whether the observation at a position matches. */
export type Matcher = (position: number) => boolean;

/**
 * What observationFilter(…) selects, as a predicate over `columns`. With `codeFromPostings`, the `code`
 * parameter's test is left out: the caller visits only the observations filed under its alternatives
 * (ConnectionIndex.search), which are exactly those the test would keep.
 */
export function observationMatcher(
  columns: Columns,
  grants: Grants,
  params: SearchParams,
  now: Date,
  asOf: Date,
  { codeFromPostings = false } = {},
): Matcher {
  const { start, end, firstIngestedAt, labels } = columns;
  const tests: Matcher[] = [];
  const allowed = allowedLabelSets(columns, grants);
  if (!grants.loincCodes.includes('*')) {
    const granted = new Set(grants.loincCodes.map((code) => `${LOINC}|${code}`));
    tests.push((i) => columns.code[i]!.tokens.some((token) => granted.has(token)));
  }
  if (grants.lookbackDays !== null) {
    const from = now.getTime() - grants.lookbackDays * DAY_MS;
    tests.push((i) => end[i]! >= from);
  }
  if (params.code !== undefined && !codeFromPostings)
    tests.push(tokenMatcher(columns.code, parseToken(params.code, 'code')));
  if (params.category !== undefined)
    tests.push(tokenMatcher(columns.category, parseToken(params.category, 'category')));
  for (const date of params.date ?? []) tests.push(dateMatcher(start, end, parseDateParam(date)));
  const until = asOf.getTime();
  const count = tests.length;
  return (i) => {
    if (firstIngestedAt[i]! > until || allowed[labels[i]!] === 0 || columns.observation[i] === 0) return false;
    for (let t = 0; t < count; t++) if (!tests[t]!(i)) return false;
    return true;
  };
}

/** Whether the grants allow each distinct set of labels the connection holds (1) or not (0), by its number. */
function allowedLabelSets(columns: Columns, grants: Grants): Uint8Array {
  const confidentiality = new Set(grants.confidentiality);
  const sensitivity = new Set(grants.sensitivity);
  return Uint8Array.from(columns.labelSets, (set) =>
    Number(confidentiality.has(set.confidentiality) && set.sensitivity.every((label) => sensitivity.has(label))),
  );
}

/**
 * What the grants let a record search see of any type but Observation (whose search is observationMatcher's): its
 * labels allowed, first written by `asOf`, and its clinical date ending inside the look-back window, or none.
 */
export function recordMatcher(columns: Columns, grants: Grants, now: Date, asOf: Date): Matcher {
  const { end, firstIngestedAt, labels } = columns;
  const allowed = allowedLabelSets(columns, grants);
  const from = grants.lookbackDays === null ? Number.NEGATIVE_INFINITY : now.getTime() - grants.lookbackDays * DAY_MS;
  const until = asOf.getTime();
  return (i) => firstIngestedAt[i]! <= until && allowed[labels[i]!] === 1 && (Number.isNaN(end[i]!) || end[i]! >= from);
}

/** The index keys (see ConnectionIndex) under which every observation a `code` parameter can match is filed. */
export function codeKeys(clauses: TokenClause[]): string[] {
  return clauses.map((clause) => {
    switch (clause.kind) {
      case 'system-and-code':
        return `t:${clause.system}|${clause.code}`;
      case 'code-without-system':
        return `t:|${clause.code}`;
      case 'code':
        return `c:${clause.code}`;
      case 'system':
        return `s:${clause.system}`;
    }
  });
}

function tokenMatcher(field: readonly CodingIndex[], clauses: TokenClause[]): Matcher {
  const tokens = new Set<string>();
  const codes = new Set<string>();
  const systems = new Set<string>();
  for (const clause of clauses) {
    if (clause.kind === 'system-and-code') tokens.add(`${clause.system}|${clause.code}`);
    else if (clause.kind === 'code-without-system') tokens.add(`|${clause.code}`);
    else if (clause.kind === 'code') codes.add(clause.code);
    else systems.add(clause.system);
  }
  const any = (values: readonly string[], wanted: Set<string>) =>
    wanted.size > 0 && values.some((value) => wanted.has(value));
  return (i) => {
    const coding = field[i]!;
    return any(coding.tokens, tokens) || any(coding.codes, codes) || any(coding.systems, systems);
  };
}

/** R = [start[i], end[i]], P = [from, to], as dateFilter in query.ts. */
function dateMatcher(
  start: Float64Array,
  end: Float64Array,
  { prefix, start: fromDate, end: toDate }: DateParam,
): Matcher {
  const from = fromDate.getTime();
  const to = toDate.getTime();
  switch (prefix) {
    case 'eq':
      return (i) => start[i]! >= from && end[i]! <= to; // R inside P
    case 'ne':
      return (i) => start[i]! < from || end[i]! > to;
    case 'gt':
      return (i) => end[i]! > to;
    case 'lt':
      return (i) => start[i]! < from;
    case 'ge':
      return (i) => end[i]! > to || (start[i]! >= from && end[i]! <= to);
    case 'le':
      return (i) => start[i]! < from || (start[i]! >= from && end[i]! <= to);
  }
}
