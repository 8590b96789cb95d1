// A connection's observations held in memory by a replica, so the gateway's search does not ask the database to
// scan them on every call (the embedded FerretDB answers no filter but _id from an index and decodes every document
// of the collection for each query; MongoDB would use the compound index, but the search would still read and count
// every match). How a replica keeps and loads them: connection-indexes.ts.
//
// The index is sorted by (sortDate, _id), as the database sorts, and files each observation under its
// `code` tokens, codes and systems, so a search by code visits only the observations it can match. The
// positions a search matches are kept for the next page of the same search (and the same search again):
// `total` needs all of them, and the index never changes, so a walk counts once, not once per page.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { codeKeys, observationMatcher, recordMatcher, type Columns, type LabelSet } from './matcher.js';
import type { CodingIndex, ObservationDocument } from '../records/document.js';
import { parseToken, type Grants, type SearchParams } from './query.js';
import { documentRow, foldBundles, type ObservationRow } from '../records/rows.js';
import type { Changes } from '../records/record-log.js';
import { rowBytes, RESOURCE_AT, SEARCH_MODE, valuesOf, type IndexedObservation, type Position } from './entries.js';

const EMPTY = new Uint32Array(0);
const EMPTY_TAIL = Buffer.alloc(0);

/**
 * A copy of a string that holds its characters alone: V8's JSON.parse may answer with slices of the text it parsed,
 * and a slice kept keeps the whole text alive (a checkpoint part is megabytes). For the codings and labels the index
 * keeps once for all its rows.
 */
const own = (text: string) => Buffer.from(text, 'utf8').toString('utf8');

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The searches whose matches an index keeps (their bytes are part of the index's, reserved at build). */
const KEPT_SEARCHES = 8;
/** A kept search's key longer than this is hashed (to 44 characters). */
const KEY_CHARS = 256;
/** What an index costs however small: its objects, maps and the kept searches' keys (KEY_CHARS at most each). */
const INDEX_OVERHEAD_BYTES = 4096 + KEPT_SEARCHES * KEY_CHARS * 2;

export class ConnectionIndex {
  /** The latest first ingest in the index: a search as of this time or later sees every observation in it. */
  private readonly latestIngest: number;
  /** The matching positions of recent searches, ascending, by the grants and parameters that decide them. */
  private readonly kept = new LRUCache<string, Uint32Array>({ max: KEPT_SEARCHES });
  /** The matches of recent record searches (record-search.ts), by what decides them (see remembered()). */
  private readonly keptRecords = new LRUCache<string, IndexedObservation[]>({ max: KEPT_SEARCHES });

  private constructor(
    /** The connection's `obs:` token read before the load began: the index holds every ingest before it. */
    readonly token: string,
    /** The last committed generation it holds; undefined when read from the documents (then not advanced). */
    readonly gen: number | undefined,
    /** Sorted by (sortDate, id), as the database sorts. */
    private readonly entries: IndexedObservation[],
    private readonly columns: Columns,
    private readonly postings: Map<string, Uint32Array>,
    readonly bytes: number,
  ) {
    this.latestIngest = columns.firstIngestedAt.reduce((latest, at) => Math.max(latest, at), Number.NEGATIVE_INFINITY);
  }

  /**
   * Builds the index of `documents` (any order; one that comes twice counts once, its last copy with its first copy's
   * firstIngestedAt, as RecordStore.all() gives them), read after the connection's `obs:` token was `token`; null
   * once it would exceed `maxBytes`.
   */
  static async build(
    documents: AsyncIterable<ObservationDocument>,
    maxBytes: number,
    token = '',
  ): Promise<ConnectionIndex | null> {
    const rows = new Map<string, ObservationRow>();
    let bytes = INDEX_OVERHEAD_BYTES;
    for await (const doc of documents) {
      const row = documentRow(doc);
      const earlier = rows.get(doc._id);
      bytes += rowBytes(row) - (earlier ? rowBytes(earlier) : 0);
      if (bytes > maxBytes) return null;
      rows.set(doc._id, { ...row, firstIngestedAt: earlier?.firstIngestedAt ?? row.firstIngestedAt });
    }
    return ConnectionIndex.fromRows(rows.values(), maxBytes, token, undefined);
  }

  /**
   * The index of `rows` (one per observation, any order; tombstones left out) as of generation `gen`; null when over
   * `maxBytes`.
   */
  static fromRows(
    rows: Iterable<ObservationRow>,
    maxBytes: number,
    token: string,
    gen: number | undefined,
  ): ConnectionIndex | null {
    const loaded = [...rows]
      .filter((row) => !row.removed)
      .sort((a, b) => a.sortDate - b.sortDate || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
    const n = loaded.length;
    let bytes = INDEX_OVERHEAD_BYTES + KEPT_SEARCHES * Uint32Array.BYTES_PER_ELEMENT * n;
    for (const row of loaded) bytes += rowBytes(row);
    if (bytes > maxBytes) return null;
    const labelSets: LabelSet[] = [];
    const labelNumbers = new Map<string, number>();
    const columns: Columns = {
      observation: new Uint8Array(n),
      start: new Float64Array(n),
      end: new Float64Array(n),
      firstIngestedAt: new Float64Array(n),
      labels: new Uint32Array(n),
      labelSets,
      code: [],
      category: [],
    };
    const lists = new Map<string, number[]>();
    // A connection's observations share a few codings (one kind of observation after another): each distinct one is
    // kept once (they are only read).
    const codings = new Map<string, { coding: CodingIndex; keys: string[] }>();
    const intern = (coding: CodingIndex) => {
      const key = coding.tokens.join('\n'); // tokens are system|code: codes and systems follow from them
      const known = codings.get(key);
      if (known && same(known.coding.codes, coding.codes) && same(known.coding.systems, coding.systems)) return known;
      const copy = { tokens: coding.tokens.map(own), codes: coding.codes.map(own), systems: coding.systems.map(own) };
      // What a coding is filed under, each key once: worked out once per distinct coding, not once per row.
      const keys = [
        ...new Set([
          ...copy.tokens.map((t) => `t:${t}`),
          ...copy.codes.map((c) => `c:${c}`),
          ...copy.systems.map((s) => `s:${s}`),
        ]),
      ];
      const interned = { coding: copy, keys };
      if (!known) codings.set(key, interned); // (another coding with the same tokens, never seen, is kept apart)
      return interned;
    };
    const types = new Map<string, string>();
    const entries = loaded.map((row, i): IndexedObservation => {
      const type = row.resourceType ?? 'Observation';
      if (!types.has(type)) types.set(type, own(type));
      columns.observation[i] = type === 'Observation' ? 1 : 0;
      const typeKey = `y:${type}`;
      const ofType = lists.get(typeKey);
      if (ofType) ofType.push(i);
      else lists.set(typeKey, [i]);
      columns.start[i] = row.date ? row.date.start : Number.NaN;
      columns.end[i] = row.date ? row.date.end : Number.NaN;
      columns.firstIngestedAt[i] = row.firstIngestedAt;
      const labelKey = `${row.confidentiality}|${row.sensitivity.join('|')}`;
      let number = labelNumbers.get(labelKey);
      if (number === undefined) {
        labelNumbers.set(labelKey, (number = labelSets.length));
        labelSets.push({ confidentiality: own(row.confidentiality), sensitivity: row.sensitivity.map(own) });
      }
      columns.labels[i] = number;
      const code = intern(row.code);
      (columns.code as CodingIndex[]).push(code.coding);
      (columns.category as CodingIndex[]).push(intern(row.category).coding);
      for (const key of code.keys) {
        const list = lists.get(key);
        if (list) list.push(i);
        else lists.set(key, [i]);
      }
      return {
        // (Not copied: measured, V8 answers these with strings of their own, the parsed text being a slice itself.)
        id: row._id,
        resourceId: row.resourceId,
        type: types.get(type)!,
        updatedAt: row.updatedAt ?? row.firstIngestedAt,
        search: valuesOf(row),
        sortDate: row.sortDate,
        tail: EMPTY_TAIL, // below
      };
    });
    // Every entry's tail in one buffer: a buffer each would take a slice of Node's 8 KB pools and leave slack
    // (1.3 KB held per 0.7 KB tail, measured), one buffer holds the bytes alone.
    const tails = loaded.map((row) => `${row.resourceId}${RESOURCE_AT}${row.resource}${SEARCH_MODE}`);
    const all = Buffer.allocUnsafeSlow(tails.reduce((sum, tail) => sum + Buffer.byteLength(tail), 0));
    let offset = 0;
    tails.forEach((tail, i) => {
      const end = offset + all.write(tail, offset);
      entries[i]!.tail = all.subarray(offset, end);
      offset = end;
    });
    const postings = new Map([...lists].map(([key, list]) => [key, Uint32Array.from(list)]));
    return new ConnectionIndex(token, gen, entries, columns, postings, bytes);
  }

  /** This index with what the bundles of `changes` wrote laid over it, under `token`; null when over `maxBytes`. */
  advance(changes: Changes, token: string, maxBytes: number): ConnectionIndex | null {
    const rows = foldBundles(this.rows(), changes.bundles);
    return ConnectionIndex.fromRows(rows.values(), maxBytes, token, changes.gen);
  }

  /** The observations it holds, as rows (what it was built from). */
  *rows(): Iterable<ObservationRow> {
    const { start, end, firstIngestedAt, labels, labelSets, code, category } = this.columns;
    for (const [i, entry] of this.entries.entries()) {
      const tail = entry.tail;
      const label = labelSets[labels[i]!]!;
      yield {
        _id: entry.id,
        ...(entry.type !== 'Observation' && { resourceType: entry.type }),
        search: entry.search,
        resourceId: entry.resourceId,
        sortDate: entry.sortDate,
        date: Number.isNaN(start[i]!) ? null : { start: start[i]!, end: end[i]! },
        code: code[i]!,
        category: category[i]!,
        confidentiality: label.confidentiality,
        sensitivity: [...label.sensitivity],
        firstIngestedAt: firstIngestedAt[i]!,
        ...(entry.updatedAt !== firstIngestedAt[i] && { updatedAt: entry.updatedAt }),
        // Ids are ASCII: the resource's text begins after the id and RESOURCE_AT, and ends before SEARCH_MODE.
        resource: tail.toString('utf8', entry.resourceId.length + RESOURCE_AT.length, tail.length - SEARCH_MODE.length),
      };
    }
  }

  /**
   * The observation with this resource id when the grants let the caller see it as of `now` (what a search with no
   * parameters would show); undefined otherwise. A walk over the ids: reads by id are rare beside searches, and a map
   * of them would add to every observation's cost.
   */
  read(resourceId: string, grants: Grants, now: Date): IndexedObservation | undefined {
    const position = this.entries.findIndex((entry) => entry.resourceId === resourceId && entry.type === 'Observation');
    if (position < 0) return undefined;
    const visible = observationMatcher(this.columns, grants, { sort: '-date' }, now, now);
    return visible(position) ? this.entries[position] : undefined;
  }

  /**
   * The records of `type` the grants let the caller see as of `now` (labels; the look-back window by their clinical
   * date, which keeps one without it, except an Observation, as the observation gateway's search does; for an
   * Observation, the LOINC grant), first written by `asOf`, in the index's order (clinical date, then id).
   */
  visibleOfType(type: string, grants: Grants, now: Date, asOf: Date): IndexedObservation[] {
    const positions = this.postings.get(`y:${type}`) ?? EMPTY;
    const visible =
      type === 'Observation'
        ? observationMatcher(this.columns, grants, { sort: 'date' }, now, asOf)
        : recordMatcher(this.columns, grants, now, asOf);
    const found: IndexedObservation[] = [];
    for (const position of positions) if (visible(position)) found.push(this.entries[position]!);
    return found;
  }

  /**
   * The record search's matches for `key` (its type, grants and parameters), computed once while nothing can change
   * them: no look-back window (it moves with `now`) and `asOf` after every ingest in the index; else computed afresh.
   */
  remembered(key: string, lookback: boolean, asOf: Date, compute: () => IndexedObservation[]): IndexedObservation[] {
    if (lookback || asOf.getTime() < this.latestIngest) return compute();
    const hashed = key.length > KEY_CHARS ? createHash('sha256').update(key).digest('base64') : key;
    const known = this.keptRecords.get(hashed);
    if (known) return known;
    const found = compute();
    this.keptRecords.set(hashed, found);
    return found;
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * The search observationFilter(…) makes in the database, over this index: how many observations match in
   * all, and the first `limit` strictly after `after` in the sort order (ascending for `date`, descending
   * for `-date`). With `code`, only the observations filed under one of its alternatives are visited.
   */
  search(
    grants: Grants,
    params: SearchParams,
    now: Date,
    asOf: Date,
    after: Position | undefined,
    limit: number,
  ): { total: number; items: IndexedObservation[] } {
    const matched = this.matching(grants, params, now, asOf);
    const ascending = params.sort === 'date';
    // The first match strictly after `after` in the sort order: matches are ascending in (sortDate, id).
    let first = ascending ? 0 : matched.length - 1;
    if (after !== undefined) {
      let low = 0;
      let high = matched.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (compare(this.entries[matched[middle]!]!, after) <= 0) low = middle + 1;
        else high = middle;
      }
      // `low`: the first match past `after`; descending, the last one before it.
      first = ascending ? low : low - 1;
      if (!ascending && low > 0 && compare(this.entries[matched[low - 1]!]!, after) === 0) first = low - 2;
    }
    const items: IndexedObservation[] = [];
    for (let k = first; k >= 0 && k < matched.length && items.length < limit; k += ascending ? 1 : -1)
      items.push(this.entries[matched[k]!]!);
    return { total: matched.length, items };
  }

  /**
   * The positions the search matches, ascending. Kept for the next search with the same grants and
   * parameters when nothing else can change them: no look-back window (it moves with `now`) and `asOf`
   * after every ingest in the index (a walk that began earlier leaves later ingests out).
   */
  private matching(grants: Grants, params: SearchParams, now: Date, asOf: Date): Uint32Array {
    // A long key is hashed: parameters may be kilobytes long, and the index's size is fixed when it is built.
    let key: string | undefined;
    if (grants.lookbackDays === null && asOf.getTime() >= this.latestIngest) {
      key = JSON.stringify([
        grants.loincCodes,
        grants.confidentiality,
        grants.sensitivity,
        params.code,
        params.category,
        params.date,
      ]);
      if (key.length > KEY_CHARS) key = createHash('sha256').update(key).digest('base64');
    }
    const kept = key === undefined ? undefined : this.kept.get(key);
    if (kept) return kept;
    const code = params.code === undefined ? undefined : parseToken(params.code, 'code');
    const matches = observationMatcher(this.columns, grants, params, now, asOf, {
      codeFromPostings: code !== undefined,
    });
    const positions = code ? this.candidates(codeKeys(code)) : (this.postings.get('y:Observation') ?? EMPTY);
    const found = new Uint32Array(positions.length);
    let count = 0;
    for (const position of positions) if (matches(position)) found[count++] = position;
    const matched = found.slice(0, count);
    if (key !== undefined) this.kept.set(key, matched);
    return matched;
  }

  /** The positions filed under any of the keys, ascending, each once. */
  private candidates(keys: string[]): Uint32Array {
    const lists = keys.flatMap((key) => this.postings.get(key) ?? []);
    if (lists.length <= 1) return lists[0] ?? EMPTY;
    const seen = new Uint8Array(this.entries.length);
    for (const list of lists) for (const position of list) seen[position] = 1;
    const merged: number[] = [];
    for (let position = 0; position < seen.length; position++) if (seen[position] === 1) merged.push(position);
    return Uint32Array.from(merged);
  }
}

/** The sort order of the database: sortDate, then _id (ids are ASCII, so code-unit order is byte order). */
function compare(a: Position, b: Position): number {
  return a.sortDate - b.sortDate || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
