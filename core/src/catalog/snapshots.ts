// Immutable, versioned catalog snapshots in MongoDB, one active per catalog (namespace/name). The
// operator writes and activates them; every API replica reads the active one.
//
// Layout: a snapshot's brands are split into chunks of at most CHUNK_SIZE documents whose _ids are derived
// from the snapshot id, so a reader loads them by primary key and no document nears MongoDB's 16 MB
// limit (chunked.ts). The header is written after its chunks: a snapshot exists only once it is complete. The
// active pointer moves by one conditional update (insert for the first activation), so two publishers
// cannot both win.
import { createHash, randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '../clock.js';
import type { DocumentLocks } from '../infra/locks.js';
import { ChunkedSeries } from './chunked.js';
import type { CatalogBrand } from './model.js';
import { isDuplicateKey } from '../infra/mongo.js';
import type { CatalogRef } from '../config.js';

export const CHUNK_SIZE = 1000;

// Which BrandCatalog (namespace/name): configuration names it, so the type is config's.
export type { CatalogRef };

export interface SnapshotHeader {
  id: string;
  catalog: string;
  brandCount: number;
  chunkCount: number;
  /** SHA-256 of the brands in id order: equal content, equal hash. */
  contentHash: string;
  createdAt: Date;
}

export interface Snapshot extends SnapshotHeader {
  brands: CatalogBrand[];
}

export interface ActivePointer {
  catalog: string;
  snapshotId: string;
  activatedAt: Date;
}

export interface SnapshotDiff {
  added: string[];
  removed: string[];
  changed: string[];
}

interface HeaderDocument extends Omit<SnapshotHeader, 'id'> {
  _id: string;
}
interface ChunkDocument {
  _id: string;
  snapshotId: string;
  brands: CatalogBrand[];
}
interface PointerDocument {
  _id: string;
  snapshotId: string;
  activatedAt: Date;
}

export const catalogKey = (ref: CatalogRef): string => `${ref.namespace}/${ref.name}`;

/** Content hash over brands sorted by id, independent of input order. */
export function contentHashOf(brands: CatalogBrand[]): string {
  const hash = createHash('sha256');
  for (const brand of [...brands].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)))
    hash.update(JSON.stringify(brand)).update('\n');
  return hash.digest('hex');
}

export class SnapshotStore {
  private readonly headers: Collection<HeaderDocument>;
  private readonly chunks: Collection<ChunkDocument>;
  /** A snapshot's brands, by snapshot id. */
  private readonly brands: ChunkedSeries<string, CatalogBrand, ChunkDocument>;
  private readonly pointers: Collection<PointerDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly clock: Clock,
  ) {
    this.headers = db.collection<HeaderDocument>('catalog_snapshots');
    this.chunks = db.collection<ChunkDocument>('catalog_snapshot_chunks');
    this.brands = new ChunkedSeries(this.chunks, {
      size: CHUNK_SIZE,
      id: (snapshotId, i) => `${snapshotId}:${i}`,
      encode: (snapshotId, i, brands) => ({ _id: `${snapshotId}:${i}`, snapshotId, brands }),
      decode: (chunk) => chunk.brands,
    });
    this.pointers = db.collection<PointerDocument>('catalog_pointers');
  }

  async init(): Promise<void> {
    await this.headers.createIndex({ catalog: 1, createdAt: -1 });
    await this.chunks.createIndex({ snapshotId: 1 });
  }

  /** Stores brands as a new snapshot, or returns the latest one when its content is identical. */
  async write(ref: CatalogRef, brands: CatalogBrand[]): Promise<{ header: SnapshotHeader; created: boolean }> {
    const catalog = catalogKey(ref);
    const contentHash = contentHashOf(brands);
    const [latest] = await this.list(ref, 1);
    if (latest && latest.contentHash === contentHash) return { header: latest, created: false };

    const createdAt = this.clock.now();
    // Sortable by creation, unique without coordination, and safe in a URL or an ETag.
    const id = `${createdAt.getTime().toString(36).padStart(9, '0')}-${contentHash.slice(0, 10)}-${randomBytes(3).toString('hex')}`;
    const sorted = [...brands].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const chunkCount = await this.brands.write(id, sorted);
    const header: SnapshotHeader = { id, catalog, brandCount: sorted.length, chunkCount, contentHash, createdAt };
    const { id: _id, ...rest } = header;
    await this.headers.insertOne({ _id, ...rest });
    return { header, created: true };
  }

  async header(snapshotId: string): Promise<SnapshotHeader | null> {
    const doc = await this.headers.findOne({ _id: snapshotId });
    return doc && toHeader(doc);
  }

  async load(snapshotId: string): Promise<Snapshot | null> {
    const header = await this.header(snapshotId);
    if (!header) return null;
    const brands = await this.brands.read(snapshotId, header.chunkCount);
    if (!brands) throw new Error(`snapshot ${snapshotId} is missing chunks`);
    return { ...header, brands };
  }

  /** Newest first. */
  async list(ref: CatalogRef, limit = 100): Promise<SnapshotHeader[]> {
    const docs = await this.headers
      .find({ catalog: catalogKey(ref) })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit)
      .toArray();
    return docs.map(toHeader);
  }

  async active(ref: CatalogRef): Promise<ActivePointer | null> {
    const doc = await this.pointers.findOne({ _id: catalogKey(ref) });
    return doc && { catalog: doc._id, snapshotId: doc.snapshotId, activatedAt: doc.activatedAt };
  }

  /**
   * Makes `snapshotId` the active snapshot if the active one is still `expected` (null: none yet).
   * Returns false when another publisher moved the pointer first.
   */
  async activate(ref: CatalogRef, snapshotId: string, expected: string | null): Promise<boolean> {
    const catalog = catalogKey(ref);
    const header = await this.header(snapshotId);
    if (!header || header.catalog !== catalog)
      throw new Error(`snapshot ${snapshotId} does not belong to catalog ${catalog}`);
    const activatedAt = this.clock.now();
    if (expected === null) {
      try {
        await this.pointers.insertOne({ _id: catalog, snapshotId, activatedAt });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    }
    const result = await this.locks.withLock(`catalog_pointers:${catalog}`, () =>
      this.pointers.updateOne({ _id: catalog, snapshotId: expected }, { $set: { snapshotId, activatedAt } }),
    );
    return result.modifiedCount === 1 || (result.matchedCount === 1 && expected === snapshotId);
  }

  /** Deletes all but the newest `keep` snapshots of the catalog, never the active one. Returns what went. */
  async prune(ref: CatalogRef, keep: number): Promise<string[]> {
    const active = await this.active(ref);
    const all = await this.list(ref, 10_000);
    const doomed = all.slice(Math.max(keep, 0)).filter((h) => h.id !== active?.snapshotId);
    for (const header of doomed) {
      await this.headers.deleteOne({ _id: header.id }); // first, so no reader finds a half-deleted snapshot
      await this.chunks.deleteMany({ snapshotId: header.id });
    }
    return doomed.map((h) => h.id);
  }

  /**
   * The artwork keys the catalog's snapshots use that no other catalog's snapshot uses. A deletion removes
   * these objects first and the documents last, so a failure halfway is simply retried.
   */
  async orphanedArtwork(ref: CatalogRef): Promise<string[]> {
    const catalog = catalogKey(ref);
    const mine = new Set<string>();
    const others = new Set<string>();
    for (const header of await this.headers.find({}).toArray()) {
      const into = header.catalog === catalog ? mine : others;
      for (let i = 0; i < header.chunkCount; i++) {
        const brands = await this.brands.chunk(header._id, i);
        for (const brand of brands ?? []) for (const key of logoKeys(brand)) into.add(key);
      }
    }
    return [...mine].filter((key) => !others.has(key)).sort();
  }

  /** Removes a catalog's pointer, then every snapshot of it. */
  async deleteCatalog(ref: CatalogRef): Promise<void> {
    await this.pointers.deleteOne({ _id: catalogKey(ref) });
    for (const header of await this.list(ref, 10_000)) {
      await this.headers.deleteOne({ _id: header.id });
      await this.chunks.deleteMany({ snapshotId: header.id });
    }
  }

  async diff(fromId: string, toId: string): Promise<SnapshotDiff> {
    const [from, to] = await Promise.all([this.load(fromId), this.load(toId)]);
    if (!from || !to) throw new Error(`unknown snapshot ${from ? toId : fromId}`);
    return diffBrands(from.brands, to.brands);
  }
}

export function diffBrands(from: CatalogBrand[], to: CatalogBrand[]): SnapshotDiff {
  const before = new Map(from.map((b) => [b.id, JSON.stringify(b)]));
  const after = new Map(to.map((b) => [b.id, JSON.stringify(b)]));
  const added = [...after.keys()].filter((id) => !before.has(id)).sort();
  const removed = [...before.keys()].filter((id) => !after.has(id)).sort();
  const changed = [...after.keys()].filter((id) => before.has(id) && before.get(id) !== after.get(id)).sort();
  return { added, removed, changed };
}

/** Every object-storage key a brand's artwork uses, in any format. */
export function logoKeys(brand: CatalogBrand): string[] {
  if (!brand.logo) return [];
  return Object.values(brand.logo).flatMap((value) =>
    typeof value === 'object' && value !== null ? Object.values(value as Record<string, string>) : [],
  );
}

function toHeader(doc: HeaderDocument): SnapshotHeader {
  return {
    id: doc._id,
    catalog: doc.catalog,
    brandCount: doc.brandCount,
    chunkCount: doc.chunkCount,
    contentHash: doc.contentHash,
    createdAt: doc.createdAt,
  };
}
