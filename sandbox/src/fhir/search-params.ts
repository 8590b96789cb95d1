// Observation search parameters, read strictly enough that a client's mistake is a 400 rather than a silently
// different answer: patient, _count, _lastUpdated (gt, ge, lt, le, or eq by default) and this server's own cursor.
import { BadRequest } from '../http.js';
import type { Position, Range } from './observation-store.js';

export const DEFAULT_COUNT = 50;
export const MAX_COUNT = 100;

export interface ObservationQuery {
  patient: string;
  count: number;
  range: Range;
  /** Each _lastUpdated as given, for the self and next links. */
  lastUpdated: string[];
  from?: Position;
}

/** A FHIR date, dateTime or instant, as the span of time it names (a day, a second, a millisecond…). */
function span(value: string): { start: number; end: number } {
  const match =
    /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?)?)?$/.exec(value);
  if (!match) throw new BadRequest(`_lastUpdated "${value}" is not a FHIR date or instant`);
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  if (hour !== undefined && zone === undefined) throw new BadRequest('_lastUpdated with a time needs a time zone');
  const unit =
    fraction !== undefined
      ? 10 ** (3 - Math.min(3, fraction.length - 1))
      : second !== undefined
        ? 1000
        : minute !== undefined
          ? 60_000
          : 0;
  const text =
    `${year}-${month ?? '01'}-${day ?? '01'}T${hour ?? '00'}:${minute ?? '00'}:${second ?? '00'}` +
    `${(fraction ?? '.000').slice(0, 4).padEnd(4, '0')}${zone ?? 'Z'}`;
  const start = Date.parse(text);
  if (Number.isNaN(start)) throw new BadRequest(`_lastUpdated "${value}" is not a valid date`);
  if (unit > 0) return { start, end: start + unit - 1 };
  const next = new Date(start);
  if (day !== undefined) next.setUTCDate(next.getUTCDate() + 1);
  else if (month !== undefined) next.setUTCMonth(next.getUTCMonth() + 1);
  else next.setUTCFullYear(next.getUTCFullYear() + 1);
  return { start, end: next.getTime() - 1 };
}

function narrow(range: Range, given: string): void {
  const prefix = /^(gt|ge|lt|le|eq)/.exec(given)?.[1] ?? 'eq';
  const { start, end } = span(given.slice(/^[a-z]{2}/.test(given) ? 2 : 0));
  const after = (at: number, inclusive: boolean) => {
    if (!range.after || at > range.after.at || (at === range.after.at && !inclusive)) range.after = { at, inclusive };
  };
  const before = (at: number, inclusive: boolean) => {
    if (!range.before || at < range.before.at || (at === range.before.at && !inclusive))
      range.before = { at, inclusive };
  };
  if (prefix === 'gt') after(end, false);
  if (prefix === 'ge' || prefix === 'eq') after(start, true);
  if (prefix === 'lt') before(start, false);
  if (prefix === 'le' || prefix === 'eq') before(end, true);
}

export function encodeCursor(position: Position): string {
  return Buffer.from(`${position.lastUpdated}|${position.id}`).toString('base64url');
}

function decodeCursor(cursor: string): Position {
  const [lastUpdated, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!lastUpdated || !/^\d+$/.test(lastUpdated) || !id) throw new BadRequest('_cursor is not one this server made');
  return { lastUpdated: Number(lastUpdated), id };
}

export function readObservationQuery(query: URLSearchParams): ObservationQuery {
  const patients = query.getAll('patient').concat(query.getAll('subject'));
  if (patients.length !== 1) throw new BadRequest('give exactly one patient');
  const patient = patients[0]!.replace(/^Patient\//, '');
  const counts = query.getAll('_count');
  if (counts.length > 1) throw new BadRequest('_count is repeated');
  if (counts[0] !== undefined && !/^\d+$/.test(counts[0]))
    throw new BadRequest('_count must be a non-negative integer');
  const count = counts[0] === undefined ? DEFAULT_COUNT : Math.min(MAX_COUNT, Number(counts[0]));
  const lastUpdated = query.getAll('_lastUpdated');
  const range: Range = {};
  for (const given of lastUpdated) narrow(range, given);
  const cursor = query.get('_cursor');
  return { patient, count, range, lastUpdated, ...(cursor ? { from: decodeCursor(cursor) } : {}) };
}
