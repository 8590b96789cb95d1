// The observation gateway's search (docs/api.md, "Clinical records and the observation gateway") as MongoDB query
// parts: the caller's parameters and the install's grants become one filter, the sort order and the keyset position
// of a page. Every operator here is evaluated the same by MongoDB and by the embedded FerretDB v1.24, which
// implements fewer of them (test/api/features/clinical/gateway/query*.test.ts run every clause against it).
import { BSONRegExp, type Filter, type Sort } from 'mongodb';
import { dateRange } from '../dates.js';
import { invalidField } from '../../../shared/http/errors.js';
import type { ObservationDocument } from '../records/document.js';

export interface Grants {
  /** ['*'] for every code, else the LOINC codes the install grants. */
  loincCodes: string[];
  confidentiality: string[];
  sensitivity: string[];
  lookbackDays: number | null;
}

export interface SearchParams {
  code?: string;
  category?: string;
  date?: string[];
  sort: 'date' | '-date';
}

/** One alternative of a FHIR token parameter. */
export type TokenClause =
  | { kind: 'system-and-code'; system: string; code: string } // system|code
  | { kind: 'code'; code: string } // code: in any system, or none
  | { kind: 'code-without-system'; code: string } // |code
  | { kind: 'system'; system: string }; // system|: any code of that system

export type DatePrefix = 'eq' | 'ne' | 'gt' | 'lt' | 'ge' | 'le';

export interface DateParam {
  prefix: DatePrefix;
  start: Date;
  end: Date;
}

const LOINC = 'http://loinc.org';
const MAX_ALTERNATIVES = 50;
const MAX_ALTERNATIVE_LENGTH = 256;
const DAY_MS = 86_400_000;
const PREFIXES: readonly string[] = ['eq', 'ne', 'gt', 'lt', 'ge', 'le'];

/**
 * A FHIR token parameter: comma-separated alternatives (any may match) of `system|code`, `code`, `|code` or
 * `system|`. `\,` `\|` `\$` and `\\` escape those characters, as FHIR search defines.
 */
export function parseToken(param: string, name: string): TokenClause[] {
  const fail = (detail: string) => invalidField('body', name, detail);
  if (param === '') throw fail('must not be empty');
  const alternatives = splitUnescaped(param, ',');
  if (alternatives.length > MAX_ALTERNATIVES)
    throw fail(`at most ${MAX_ALTERNATIVES} comma-separated alternatives are allowed`);
  return alternatives.map((alternative) => {
    if (alternative === '') throw fail('has an empty alternative');
    if (alternative.length > MAX_ALTERNATIVE_LENGTH)
      throw fail(`each alternative is at most ${MAX_ALTERNATIVE_LENGTH} characters`);
    const parts = splitUnescaped(alternative, '|').map((part) => unescapeToken(part, fail));
    if (parts.length > 2) throw fail(`"${alternative}" has more than one unescaped "|"`);
    const [first, second] = parts as [string, string | undefined];
    if (second === undefined) return { kind: 'code', code: first };
    if (first === '' && second === '') throw fail('"|" needs a system, a code or both');
    if (first === '') return { kind: 'code-without-system', code: second };
    if (second === '') return { kind: 'system', system: first };
    return { kind: 'system-and-code', system: first, code: second };
  });
}

/** A prefixed FHIR date (`ge2024-01-01`, `lt2025`, `2024-03`: eq by default) and the range it covers. */
export function parseDateParam(value: string): DateParam {
  const fail = (detail: string) => invalidField('body', 'date', detail);
  const prefixed = /^[a-z]{2}/.test(value);
  const prefix = prefixed ? value.slice(0, 2) : 'eq';
  if (!PREFIXES.includes(prefix)) throw fail(`"${prefix}" is not a supported prefix (${PREFIXES.join(', ')})`);
  const range = dateRange(prefixed ? value.slice(2) : value);
  if (!range) throw fail(`"${value}" is not a FHIR date (YYYY, YYYY-MM, YYYY-MM-DD or a dateTime with a time zone)`);
  return { prefix: prefix as DatePrefix, ...range };
}

/**
 * What the caller may see of one connection and asked for. `asOf` (the time the walk began) keeps a paging
 * walk stable while new observations arrive; `now` anchors the look-back window.
 */
export function observationFilter(
  connectionId: string,
  grants: Grants,
  params: SearchParams,
  now: Date,
  asOf: Date,
): Filter<ObservationDocument> {
  const clauses: Filter<ObservationDocument>[] = [
    { confidentiality: { $in: grants.confidentiality } },
    { sensitivity: { $not: anyStringExcept(grants.sensitivity) } },
  ];
  if (!grants.loincCodes.includes('*'))
    clauses.push({ 'code.tokens': { $in: grants.loincCodes.map((code) => `${LOINC}|${code}`) } });
  // The look-back keeps a resource whose range ends inside the window. A resource without an effective
  // date cannot be placed in any window, so a look-back excludes it (`date.end` is absent, never ≥).
  if (grants.lookbackDays !== null)
    clauses.push({ 'date.end': { $gte: new Date(now.getTime() - grants.lookbackDays * DAY_MS) } });
  if (params.code !== undefined) clauses.push(tokenFilter('code', parseToken(params.code, 'code')));
  if (params.category !== undefined) clauses.push(tokenFilter('category', parseToken(params.category, 'category')));
  for (const date of params.date ?? []) clauses.push(dateFilter(parseDateParam(date)));
  // Observations only: their documents have no resourceType (record types other than Observation do: document.ts).
  return { connectionId, resourceType: { $exists: false }, firstIngestedAt: { $lte: asOf }, $and: clauses };
}

/** Newest first for `-date`; ties (same start) in _id order, the same direction, so every page is stable. */
export function observationSort(sort: 'date' | '-date'): Sort {
  const direction = sort === 'date' ? 1 : -1;
  return { sortDate: direction, _id: direction };
}

/** Keyset paging: the documents strictly after `position` (the last of the previous page) in `sort` order. AND it with
 * the filter. */
export function afterPosition(
  sort: 'date' | '-date',
  position: { sortDate: Date; id: string },
): Filter<ObservationDocument> {
  const beyond = sort === 'date' ? '$gt' : '$lt';
  return {
    $or: [
      { sortDate: { [beyond]: position.sortDate } },
      { sortDate: position.sortDate, _id: { [beyond]: position.id } },
    ],
  };
}

function tokenFilter(field: 'code' | 'category', clauses: TokenClause[]): Filter<ObservationDocument> {
  const tokens: string[] = [];
  const codes: string[] = [];
  const systems: string[] = [];
  for (const clause of clauses) {
    if (clause.kind === 'system-and-code') tokens.push(`${clause.system}|${clause.code}`);
    else if (clause.kind === 'code-without-system') tokens.push(`|${clause.code}`);
    else if (clause.kind === 'code') codes.push(clause.code);
    else systems.push(clause.system);
  }
  const branches: Filter<ObservationDocument>[] = [];
  if (tokens.length > 0) branches.push({ [`${field}.tokens`]: { $in: tokens } });
  if (codes.length > 0) branches.push({ [`${field}.codes`]: { $in: codes } });
  if (systems.length > 0) branches.push({ [`${field}.systems`]: { $in: systems } });
  return branches.length === 1 ? branches[0]! : { $or: branches };
}

/**
 * FHIR R4 date search over ranges: R = [date.start, date.end] of the resource, P = [start, end] of the
 * parameter. A resource without a date has neither field, and a comparison with an absent field is false,
 * so it matches no prefix, `ne` included.
 */
function dateFilter({ prefix, start, end }: DateParam): Filter<ObservationDocument> {
  const inside = { 'date.start': { $gte: start }, 'date.end': { $lte: end } }; // R within P
  const endsAfter = { 'date.end': { $gt: end } };
  const startsBefore = { 'date.start': { $lt: start } };
  switch (prefix) {
    case 'eq':
      return inside;
    case 'ne':
      return { $or: [startsBefore, endsAfter] };
    case 'gt':
      return endsAfter;
    case 'lt':
      return startsBefore;
    case 'ge':
      return { $or: [endsAfter, inside] };
    case 'le':
      return { $or: [startsBefore, inside] };
  }
}

/**
 * A regular expression matching every string except those in `allowed`, so that `{field: {$not: it}}`
 * keeps documents whose every label is allowed (and those without labels). The natural
 * `{$not: {$elemMatch: {$nin: allowed}}}` is wrong on FerretDB v1.24: its $elemMatch applies $nin to the
 * whole array (so it matches [] and misses ['HIV', 'PSY'] when only HIV is allowed); $elemMatch with $not or
 * $ne and $expr set operators are not implemented there. The pattern is a trie of `allowed` with, at each
 * node, every way of leaving it: ending early (\z), a character no allowed value has there ([^…]), or
 * continuing past a complete value. It uses only what PCRE (MongoDB) and RE2 (FerretDB, Go) read alike.
 */
export function anyStringExcept(allowed: readonly string[]): BSONRegExp {
  const root: TrieNode = { complete: false, next: new Map() };
  for (const value of new Set(allowed)) {
    let node = root;
    for (const character of value) {
      let child = node.next.get(character);
      if (!child) node.next.set(character, (child = { complete: false, next: new Map() }));
      node = child;
    }
    node.complete = true;
  }
  return new BSONRegExp(`^(?:${leaving(root)})`);
}

interface TrieNode {
  complete: boolean;
  next: Map<string, TrieNode>;
}

function leaving(node: TrieNode): string {
  const characters = [...node.next.keys()].sort();
  const ways = node.complete ? [] : ['\\z'];
  ways.push(characters.length === 0 ? '[\\s\\S]' : `[^${characters.map(literal).join('')}]`);
  for (const character of characters) ways.push(`${literal(character)}(?:${leaving(node.next.get(character)!)})`);
  return ways.join('|');
}

/** A character as a literal in PCRE and RE2 alike, inside or outside a class: ASCII punctuation escaped, controls as
 * \xHH. */
function literal(character: string): string {
  const code = character.codePointAt(0)!;
  if (code < 0x20 || code === 0x7f) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code < 0x80 && !/[A-Za-z0-9]/.test(character)) return `\\${character}`;
  return character;
}

function splitUnescaped(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const character = text[i]!;
    if (character === '\\' && i + 1 < text.length) {
      current += character + text[++i];
    } else if (character === separator) {
      parts.push(current);
      current = '';
    } else {
      current += character;
    }
  }
  parts.push(current);
  return parts;
}

function unescapeToken(part: string, fail: (detail: string) => Error): string {
  return part.replace(/\\([\s\S]?)/g, (_, escaped: string) => {
    if (escaped === '' || !'\\,|$'.includes(escaped)) throw fail('"\\" escapes only "\\", ",", "|" and "$"');
    return escaped;
  });
}
