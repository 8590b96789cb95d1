// A publication too large for one document, stored as numbered chunk documents: a catalog snapshot's brands
// (snapshots.ts) and a publication of endpoint health (endpoint-health.ts, docs/operator.md, "Publication, without
// a new snapshot"). A chunk's _id is derived from what names its series and its number, so a reader loads each by
// primary key, the only lookup the embedded database pushes down to an index (docs/architecture.md), and no
// document nears MongoDB's 16 MB limit. The chunks are written first, one at a time, and the caller then writes
// the small document that records how many there are (a snapshot's header, the health pointer): until that
// document is written no reader knows the series, so none finds it half written.
import type { Collection, Filter, OptionalUnlessRequiredId } from 'mongodb';

/** How the items of a series are stored: how many per chunk, under which _id, in what document. */
export interface ChunkFormat<S, T, D extends { _id: string }> {
  /** Items per chunk document. */
  size: number;
  /** The _id of chunk `i` of `series`. */
  id(series: S, i: number): string;
  /** The document of chunk `i` of `series` (its _id is id(series, i)), holding `items`. */
  encode(series: S, i: number, items: T[]): D;
  /** The items a chunk document holds. */
  decode(document: D): T[];
}

/** The chunks of every series of one format, in one collection. */
export class ChunkedSeries<S, T, D extends { _id: string }> {
  constructor(
    private readonly collection: Collection<D>,
    private readonly format: ChunkFormat<S, T, D>,
  ) {}

  /** Writes `items` as the chunks of `series`, in order; returns how many there are (none for no items). */
  async write(series: S, items: readonly T[]): Promise<number> {
    const { size } = this.format;
    let i = 0;
    for (; i * size < items.length; i++) {
      const document = this.format.encode(series, i, items.slice(i * size, (i + 1) * size));
      await this.collection.insertOne(document as OptionalUnlessRequiredId<D>);
    }
    return i;
  }

  /** The items of chunk `i` of `series`; null when it is not there. */
  async chunk(series: S, i: number): Promise<T[] | null> {
    const document = await this.collection.findOne(this.filter(series, i));
    return document && this.format.decode(document as D);
  }

  /** The items of the `count` chunks of `series`, in order, read at once; null when one is missing. */
  async read(series: S, count: number): Promise<T[] | null> {
    const reads = Array.from({ length: count }, (_, i) => this.collection.findOne(this.filter(series, i)));
    const documents = await Promise.all(reads);
    if (documents.some((document) => document === null)) return null;
    return documents.flatMap((document) => this.format.decode(document as D));
  }

  /** Deletes the `count` chunks of `series`, by _id, one at a time. */
  async delete(series: S, count: number): Promise<void> {
    for (let i = 0; i < count; i++) await this.collection.deleteOne(this.filter(series, i));
  }

  private filter(series: S, i: number): Filter<D> {
    return { _id: this.format.id(series, i) } as Filter<D>;
  }
}
