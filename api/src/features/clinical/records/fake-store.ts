// In-memory RecordStore for unit tests of ingest and the gateway; test/api/features/clinical/store.test.ts holds
// it and RecordRepository to the same behaviour (docs/architecture.md, "Stores and fakes"). An upsert is one
// synchronous step, so it is all or nothing and concurrent bundles of a connection follow each other, as the
// repository's writer lease makes them; what readers see is always a committed bundle whole, so there are no
// generations, pending bundles or leftovers to skip, and documents carry no `seq`/`rev` (diagnosis only).
//
// page() evaluates the MongoDB filter it is given, but only the shapes the gateway's query builder produces
// (gateway/query.ts: observationFilter, afterPosition, observationSort; docs/api.md, "Clinical records and the
// observation gateway"): equality, $in, $gt/$gte/$lt/$lte, $not with a regular expression, $and and $or, over
// fields and dotted paths into sub-documents, where an array field matches when one of its elements does. Any other
// operator throws, so a test that needs more learns it at once instead of reading a wrong answer.
import { BSONRegExp, type Filter, type Sort } from 'mongodb';
import { storedFields, type StoredFields } from './bundle-records.js';
import { recordKey, tombstoneOf, type ObservationDocument } from './document.js';
import { BEGINNING } from '../dates.js';
import type { NormalizedObservation } from '../ingest/observations.js';
import type { IngestTarget, RecordStore } from './store.js';
import type { Checkpoint } from './checkpoints.js';
import type { Changes } from './record-log.js';
import { foldBundles, observationRow, type CommittedBundle, type ObservationRow } from './rows.js';

/** What the repository stores of an observation: its search fields, and when it was last written. */
type Stored = ObservationDocument & { updatedAt: Date };

export class FakeRecordStore implements RecordStore {
  /** By _id (`<connection>/<resource id>`), as the repository's collection is. */
  private readonly documents = new Map<string, Stored>();
  /**
   * Every bundle by connection, in the order written (generation 1, 2, …): changes() answers from them all (the
   * repository forgets a bundle's record only once a checkpoint holds it, and then answers from the checkpoint).
   */
  private readonly bundles = new Map<string, CommittedBundle[]>();
  private readonly checkpoints = new Map<string, { gen: number; rows: ObservationRow[] }>();

  async upsert(
    target: IngestTarget,
    observations: NormalizedObservation[],
    at: Date,
  ): Promise<{ ingested: number; updated: number }> {
    if (observations.length === 0) return { ingested: 0, updated: 0 }; // no generation, as in the repository
    const updated = this.write(
      target.connectionId,
      observations.map((o) => storedFields(target, o, at)),
      at,
    );
    return { ingested: observations.length - updated, updated };
  }

  async removeStale(
    target: IngestTarget,
    types: readonly string[],
    before: Date,
    at: Date,
    onRemoved?: (counts: Map<string, number>) => Promise<void>,
  ) {
    const { connectionId, accountId } = target;
    const removed = new Map<string, number>();
    const tombstones = [...this.documents.values()]
      .filter(
        (doc) =>
          doc.connectionId === connectionId &&
          !doc.removed &&
          doc.updatedAt < before &&
          types.includes(doc.resourceType ?? 'Observation'),
      )
      .map((doc) => {
        const type = doc.resourceType ?? 'Observation';
        removed.set(type, (removed.get(type) ?? 0) + 1);
        return { connectionId, accountId, ...tombstoneOf(type, doc.resourceId), sortDate: BEGINNING, updatedAt: at };
      });
    for (let from = 0; from < tombstones.length; from += 1000) {
      const batch = tombstones.slice(from, from + 1000);
      this.write(connectionId, batch, at);
      const counts = new Map<string, number>();
      for (const fields of batch)
        counts.set(fields.resourceType ?? 'Observation', (counts.get(fields.resourceType ?? 'Observation') ?? 0) + 1);
      await onRemoved?.(counts);
    }
    return removed;
  }

  /** Stores one bundle of records' fields in one step: how many it replaced. */
  private write(connectionId: string, stored: StoredFields[], at: Date): number {
    // Every document is made before any is stored: nothing of the bundle is written if one cannot be.
    const written = stored.map((fields): Stored => {
      const _id = recordKey(connectionId, fields.resourceType, fields.resourceId);
      return asStored({
        _id,
        ...fields,
        // A replacement keeps when the observation was first written, so a paging walk begun before still sees it.
        firstIngestedAt: this.documents.get(_id)?.firstIngestedAt ?? at,
      });
    });
    // (A record a full sync removed, written again, is new again.)
    const updated = written.filter(
      (doc) => this.documents.has(doc._id) && !this.documents.get(doc._id)!.removed,
    ).length;
    for (const doc of written) this.documents.set(doc._id, doc);
    const log = this.bundles.get(connectionId) ?? [];
    this.bundles.set(connectionId, log);
    const rows = written.map((doc) => observationRow(doc, at.getTime()));
    log.push({ gen: log.length + 1, at: at.getTime(), rows });
    return updated;
  }

  async page(
    _connectionId: string,
    filter: Filter<ObservationDocument>,
    after: Filter<ObservationDocument> | undefined,
    sort: Sort,
    limit: number,
  ): Promise<{ items: ObservationDocument[]; total: number }> {
    // As the repository: the filter alone says which connection (the builder's filter names it).
    const matching = [...this.documents.values()].filter((doc) => !doc.removed && matches(doc, filter));
    const page = (after ? matching.filter((doc) => matches(doc, after)) : matching).sort(comparator(sort));
    return { items: page.slice(0, limit).map((doc) => structuredClone(doc)), total: matching.length };
  }

  async *all(connectionId: string): AsyncIterable<ObservationDocument> {
    const docs = [...this.documents.values()].filter((doc) => doc.connectionId === connectionId);
    for (const doc of docs) yield structuredClone(doc);
  }

  async changes(connectionId: string, after: number): Promise<Changes | null> {
    const log = this.bundles.get(connectionId) ?? [];
    return { gen: log.length, bundles: structuredClone(log.slice(after)) };
  }

  async checkpoint(connectionId: string): Promise<Checkpoint | null> {
    return structuredClone(this.checkpoints.get(connectionId) ?? null);
  }

  async writeCheckpoint(connectionId: string): Promise<void> {
    const log = this.bundles.get(connectionId) ?? [];
    this.checkpoints.set(connectionId, { gen: log.length, rows: [...foldBundles([], log).values()] });
  }
}

type Document = Record<string, unknown>;

/** A copy as the driver stores it (BSON): a property or element that is `undefined` becomes null. */
function asStored<T>(value: T): T {
  if (value === undefined) return null as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (Array.isArray(value)) return value.map(asStored) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, asStored(field)])) as T;
  }
  return value;
}

function matches(doc: object, filter: object): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (key === '$and') return (condition as object[]).every((branch) => matches(doc, branch));
    if (key === '$or') return (condition as object[]).some((branch) => matches(doc, branch));
    if (key.startsWith('$')) throw new Error(`FakeRecordStore: unsupported operator ${key}`);
    return fieldMatches(valueAt(doc, key), condition);
  });
}

/** The value at a dotted path through sub-documents (not through arrays: the builder never asks that). */
function valueAt(doc: object, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Document)[part];
  }
  return value;
}

function isOperators(condition: unknown): condition is Document {
  if (condition === null || typeof condition !== 'object' || condition instanceof Date) return false;
  if (Array.isArray(condition) || isRegExp(condition)) return false;
  const keys = Object.keys(condition);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

function fieldMatches(value: unknown, condition: unknown): boolean {
  if (!isOperators(condition))
    return anyOf(value, (v) => (isRegExp(condition) ? regexMatches(condition, v) : equal(v, condition)));
  return Object.entries(condition).every(([operator, operand]) => {
    switch (operator) {
      case '$in':
        return anyOf(value, (v) => (operand as unknown[]).some((candidate) => equal(v, candidate)));
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        return anyOf(value, (v) => compares(operator, v, operand));
      case '$exists':
        return (value !== undefined) === Boolean(operand);
      case '$not':
        // A document without the field, or with no element that matches, is kept (as MongoDB's $not).
        return !fieldMatches(value, operand);
      default:
        throw new Error(`FakeRecordStore: unsupported operator ${operator}`);
    }
  });
}

/** An array field matches when the array itself or one of its elements does. */
function anyOf(value: unknown, test: (value: unknown) => boolean): boolean {
  return test(value) || (Array.isArray(value) && value.some(test));
}

function equal(value: unknown, expected: unknown): boolean {
  if (expected === null) return value === null || value === undefined;
  if (expected instanceof Date) return value instanceof Date && value.getTime() === expected.getTime();
  return value === expected;
}

/** Comparisons hold between values of one type only (dates with dates, strings with strings), as in MongoDB. */
function compares(operator: string, value: unknown, operand: unknown): boolean {
  const [a, b] = [comparable(value), comparable(operand)];
  if (a === undefined || b === undefined || typeof a !== typeof b) return false;
  if (operator === '$gt') return a > b;
  if (operator === '$gte') return a >= b;
  if (operator === '$lt') return a < b;
  return a <= b;
}

function comparable(value: unknown): number | string | undefined {
  if (value instanceof Date) return value.getTime();
  return typeof value === 'number' || typeof value === 'string' ? value : undefined;
}

function isRegExp(value: unknown): value is BSONRegExp | RegExp {
  return value instanceof BSONRegExp || value instanceof RegExp;
}

const compiled = new Map<string, RegExp>();

function regexMatches(pattern: BSONRegExp | RegExp, value: unknown): boolean {
  if (typeof value !== 'string') return false;
  if (pattern instanceof RegExp) return pattern.test(value);
  let regex = compiled.get(pattern.pattern);
  if (!regex) compiled.set(pattern.pattern, (regex = new RegExp(toJavaScript(pattern.pattern), 'u')));
  return regex.test(value);
}

/**
 * A PCRE pattern as anyStringExcept (gateway/query.ts) writes them, in JavaScript's syntax: `\z` (the end of the
 * subject) is `$` without the m flag, and an escaped ASCII punctuation character is written `\xHH`, since the u flag
 * (needed for characters beyond the BMP) refuses escapes of characters that have no special meaning.
 */
function toJavaScript(pattern: string): string {
  return pattern.replace(/\\([\s\S])/g, (escape, character: string) => {
    if (character === 'z') return '$';
    if (/[A-Za-z0-9]/.test(character) || character.charCodeAt(0) > 0x7f) return escape;
    return `\\x${character.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}

/** MongoDB's order for the builder's sort keys (dates, and strings by code unit: resource ids are ASCII in FHIR). */
function comparator(sort: Sort): (a: object, b: object) => number {
  const keys = Object.entries(sort as Record<string, 1 | -1>);
  return (a, b) => {
    for (const [key, direction] of keys) {
      const [x, y] = [comparable(valueAt(a, key)), comparable(valueAt(b, key))];
      if (x === y) continue;
      if (x === undefined) return -direction;
      if (y === undefined) return direction;
      return (x < y ? -1 : 1) * direction;
    }
    return 0;
  };
}
