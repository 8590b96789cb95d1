// The outcomes of the operator's endpoint checks, published beside the catalog snapshots rather than inside
// them: health changes every few seconds, a snapshot once a day, and rebuilding 30,000 brands to flip one
// status would be absurd. Keyed by brand id, so a publication outlives snapshot changes (a brand that leaves
// the snapshot is simply no longer published; a new one has no entry, which reads as UNKNOWN).
//
// Layout, for the embedded database (FerretDB on SQLite pushes only `_id` lookups down to an index and has no
// transactions): one publication is a handful of chunk documents holding compact rows, under _ids derived from
// the catalog and a fresh version, written first; then the catalog's small pointer document moves to that
// version by one conditional update, so a reader sees one whole publication or the previous one. The
// publication before the previous one is deleted then, by _id: a reader that read the pointer just before the
// move still finds the chunks it is about to load (chunked.ts writes and reads them). Beside the public rows the
// operator stores rows of its own (conditional-request validators, failure reasons), opaque here, so that it
// resumes where it stopped.
import { randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '../clock.js';
import type { DocumentLocks } from '../infra/locks.js';
import { ChunkedSeries } from './chunked.js';
import { ENDPOINT_STATUSES, type EndpointHealth, type EndpointStatus } from './model.js';
import { catalogKey, type CatalogRef } from './snapshots.js';
import { isDuplicateKey } from '../infra/mongo.js';

/** Rows per chunk document: a public row is about 60 bytes, so a chunk stays near 300 KB. */
export const HEALTH_CHUNK_ROWS = 5000;

/** One brand's published outcome as stored: [brandId, status, fhirVersion, smartConfiguration (1/0), checkedAt (ms) or
 * null]. */
type PublicRow = [string, EndpointStatus, string | null, 0 | 1, number | null];

/**
 * The rows of a chunk travel as one JSON text: FerretDB v1 refuses nested arrays, and one string is far cheaper
 * for it to store and return than thousands of small subdocuments.
 */
interface ChunkDocument {
  _id: string;
  catalog: string;
  version: string;
  rows: string;
}

interface Publication {
  version: string;
  chunks: number;
  stateChunks: number;
}

interface PointerDocument extends Publication {
  _id: string;
  publishedAt: Date;
  brands: number;
  counts: Record<EndpointStatus, number>;
  /** The publication before this one: deleted when the next one lands. */
  retired: Publication | null;
}

export interface HealthPointer {
  version: string;
  publishedAt: Date;
  /** Brands published (UNKNOWN ones are not). */
  brands: number;
  counts: Record<EndpointStatus, number>;
}

export interface PublishedHealth extends HealthPointer {
  health: Map<string, EndpointHealth>;
}

export interface PublishedHealthWithState extends PublishedHealth {
  /** The operator's own rows, as it handed them over. */
  state: unknown[];
}

/** Another publisher moved the pointer since `expected` was read (a leader that lost its lease). */
export class HealthPublishConflictError extends Error {}

/** The rows of one publication: public (h) or the operator's own (s). */
interface RowSeries {
  catalog: string;
  version: string;
  kind: 'h' | 's';
}

const chunkId = ({ catalog, version, kind }: RowSeries, i: number) => `${catalog}@${version}/${kind}${i}`;

export function countStatuses(health: Iterable<EndpointHealth>): Record<EndpointStatus, number> {
  const counts = Object.fromEntries(ENDPOINT_STATUSES.map((s) => [s, 0])) as Record<EndpointStatus, number>;
  for (const entry of health) counts[entry.status]++;
  return counts;
}

function toRow(brandId: string, health: EndpointHealth): PublicRow {
  return [
    brandId,
    health.status,
    health.fhirVersion,
    health.smartConfiguration ? 1 : 0,
    health.checkedAt === null ? null : Date.parse(health.checkedAt),
  ];
}

/** A stored row as the API presents it; undefined for a row this version cannot read. */
function fromRow(row: unknown): [string, EndpointHealth] | undefined {
  if (!Array.isArray(row) || typeof row[0] !== 'string' || !ENDPOINT_STATUSES.includes(row[1] as EndpointStatus))
    return undefined;
  const [brandId, status, fhirVersion, smart, checkedAt] = row as PublicRow;
  return [
    brandId,
    Object.freeze({
      status,
      fhirVersion: typeof fhirVersion === 'string' ? fhirVersion : null,
      smartConfiguration: smart === 1,
      checkedAt: typeof checkedAt === 'number' ? new Date(checkedAt).toISOString() : null,
    }),
  ];
}

export class EndpointHealthStore {
  private readonly pointers: Collection<PointerDocument>;
  private readonly chunks: Collection<ChunkDocument>;
  private readonly rows: ChunkedSeries<RowSeries, unknown, ChunkDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly clock: Clock,
  ) {
    this.pointers = db.collection<PointerDocument>('catalog_endpoint_health');
    this.chunks = db.collection<ChunkDocument>('catalog_endpoint_health_chunks');
    this.rows = new ChunkedSeries(this.chunks, {
      size: HEALTH_CHUNK_ROWS,
      id: chunkId,
      encode: (series, i, rows) => {
        const { catalog, version } = series;
        return { _id: chunkId(series, i), catalog, version, rows: JSON.stringify(rows) };
      },
      decode: (chunk) => JSON.parse(chunk.rows) as unknown[],
    });
  }

  async pointer(ref: CatalogRef): Promise<HealthPointer | null> {
    const doc = await this.pointers.findOne({ _id: catalogKey(ref) });
    return doc && { version: doc.version, publishedAt: doc.publishedAt, brands: doc.brands, counts: doc.counts };
  }

  /**
   * The catalog's current publication; null when there is none; `unchanged` when it is still `knownVersion`.
   * Throws when its chunks are gone (two newer publications landed while this one was being read): the
   * caller keeps what it has and reads again.
   */
  async load(ref: CatalogRef, knownVersion?: string): Promise<PublishedHealth | null | 'unchanged'> {
    const doc = await this.pointers.findOne({ _id: catalogKey(ref) });
    if (!doc) return null;
    if (doc.version === knownVersion) return 'unchanged';
    return { ...pointerOf(doc), health: await this.readHealth(doc) };
  }

  /** The current publication with the operator's own rows, for an operator resuming after a restart. */
  async loadWithState(ref: CatalogRef): Promise<PublishedHealthWithState | null> {
    const doc = await this.pointers.findOne({ _id: catalogKey(ref) });
    if (!doc) return null;
    const [health, state] = await Promise.all([this.readHealth(doc), this.readRows(doc, 's', doc.stateChunks)]);
    return { ...pointerOf(doc), health, state };
  }

  /**
   * Publishes `health` (brand id → outcome; UNKNOWN outcomes are left out) and the operator's `state` rows as
   * a new version, if the current one is still `expected` (null: none yet). Returns the new version.
   */
  async publish(
    ref: CatalogRef,
    health: Map<string, EndpointHealth>,
    state: unknown[],
    expected: string | null,
  ): Promise<HealthPointer> {
    const catalog = catalogKey(ref);
    const publishedAt = this.clock.now();
    // Sortable by time, unique without coordination.
    const version = `${publishedAt.getTime().toString(36)}-${randomBytes(3).toString('hex')}`;
    const rows: PublicRow[] = [];
    for (const [brandId, entry] of health) if (entry.status !== 'UNKNOWN') rows.push(toRow(brandId, entry));
    const chunks = await this.rows.write({ catalog, version, kind: 'h' }, rows);
    const stateChunks = await this.rows.write({ catalog, version, kind: 's' }, state);
    const publication: Publication = { version, chunks, stateChunks };
    const counts = countStatuses([...health.values()]);
    const fields = { ...publication, publishedAt, brands: rows.length, counts };

    let outcome: { moved: boolean; retired: Publication | null };
    if (expected === null) {
      outcome = await this.pointers.insertOne({ _id: catalog, ...fields, retired: null }).then(
        () => ({ moved: true, retired: null }),
        (error: unknown) => {
          if (isDuplicateKey(error)) return { moved: false, retired: null };
          throw error;
        },
      );
    } else {
      outcome = await this.locks.withLock(`catalog_endpoint_health:${catalog}`, async () => {
        const current = await this.pointers.findOne({ _id: catalog });
        if (current?.version !== expected) return { moved: false, retired: null };
        const previous = { version: current.version, chunks: current.chunks, stateChunks: current.stateChunks };
        const result = await this.pointers.updateOne(
          { _id: catalog, version: expected },
          { $set: { ...fields, retired: previous } },
        );
        return { moved: result.modifiedCount === 1, retired: current.retired };
      });
    }
    const { moved, retired } = outcome;
    if (!moved) {
      await this.deletePublication(catalog, publication);
      throw new HealthPublishConflictError(`the endpoint health of ${catalog} was published by someone else meanwhile`);
    }
    if (retired) await this.deletePublication(catalog, retired);
    return { version, publishedAt, brands: rows.length, counts };
  }

  /**
   * Deletes chunks no pointer names (a publisher that stopped between its chunks and its pointer). Scans the
   * catalog's chunks, so it runs once when an operator starts on a catalog, not per publication.
   */
  async deleteOrphans(ref: CatalogRef): Promise<number> {
    const catalog = catalogKey(ref);
    const doc = await this.pointers.findOne({ _id: catalog });
    const kept = new Set([doc?.version, doc?.retired?.version].filter((v): v is string => v !== undefined));
    const found = await this.chunks.find({ catalog }, { projection: { _id: 1, version: 1 } }).toArray();
    const orphans = found.filter((chunk) => !kept.has(chunk.version));
    for (const chunk of orphans) await this.chunks.deleteOne({ _id: chunk._id });
    return orphans.length;
  }

  /** Removes a catalog's publications: the pointer first, so no reader starts on a half-deleted one. */
  async deleteCatalog(ref: CatalogRef): Promise<void> {
    const catalog = catalogKey(ref);
    await this.pointers.deleteOne({ _id: catalog });
    await this.chunks.deleteMany({ catalog });
  }

  private async readHealth(doc: PointerDocument): Promise<Map<string, EndpointHealth>> {
    const health = new Map<string, EndpointHealth>();
    for (const row of await this.readRows(doc, 'h', doc.chunks)) {
      const entry = fromRow(row);
      if (entry) health.set(entry[0], entry[1]);
    }
    return health;
  }

  private async readRows(doc: PointerDocument, kind: 'h' | 's', count: number): Promise<unknown[]> {
    const rows = await this.rows.read({ catalog: doc._id, version: doc.version, kind }, count);
    const replaced = `endpoint health ${doc._id}@${doc.version} is missing chunks (a newer publication replaced it)`;
    if (!rows) throw new Error(replaced);
    return rows;
  }

  private async deletePublication(catalog: string, publication: Publication): Promise<void> {
    const { version } = publication;
    await this.rows.delete({ catalog, version, kind: 'h' }, publication.chunks);
    await this.rows.delete({ catalog, version, kind: 's' }, publication.stateChunks);
  }
}

function pointerOf(doc: PointerDocument): HealthPointer {
  return { version: doc.version, publishedAt: doc.publishedAt, brands: doc.brands, counts: doc.counts };
}
