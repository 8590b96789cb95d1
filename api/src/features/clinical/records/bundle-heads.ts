// What makes an ingested bundle all or nothing without multi-document transactions (the embedded database has
// none): one document per connection, its head, says which bundles readers may see, and a bundle becomes
// visible with one write to it, its commit (the catalog's snapshots work the same way: a new snapshot, then one
// pointer). docs/operations.md, "Clinical ingest", explains it for operators; in features/clinical/records/,
// bundle-writer.ts and bundle-applier.ts write the observations under it, and store.ts reads them. The head's
// fields, and how long its lists keep a generation: head-document.ts.
//
// A writer takes the lease with a write conditioned on the head as it read it, handing itself `next + 1` and
// listing every generation after the last commit as abandoned (they can only be dead writers': the lease was
// free or had run out). Its commit is conditioned on its lease token, so a writer whose lease was taken over
// commits nothing, and its generation is already listed as abandoned.
import { randomUUID } from 'node:crypto';
import type { Collection, Db, Filter, UpdateFilter } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { updateOneWhere } from '#core/infra/where.js';
import { AppError } from '../../../shared/http/errors.js';
import { CHANGE_RING, currentChangeScope } from '../../../shared/infra/change-scope.js';
import { isDuplicateKey } from '#core/infra/mongo.js';
import { HEADS, type HeadDocument, type Visibility, type WriterLease } from './head-document.js';

/**
 * How long a writer's lease lasts; the writer renews it before each of its writes, so only a writer that died,
 * or one whose write took this long, loses it (the next bundle then waits this long at most).
 */
export const WRITER_LEASE_MS = 10_000;
/** How long a bundle waits for another bundle of its connection before it answers 503 (retry). */
const WAIT_FOR_WRITER_MS = 3_000;
/** How long an applier's lease lasts; it is renewed before each batch of replacements. */
export const APPLIER_LEASE_MS = 10_000;

const NOTHING: Visibility = { committed: 0, abandoned: [], pending: [], kept: [] };

/** Rounds a change to a head's lists makes before giving up on a head that keeps changing. */
const LIST_ATTEMPTS = 20;

export class BundleHeads {
  readonly collection: Collection<HeadDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<HeadDocument>(HEADS);
  }

  /**
   * A write conditioned on the head as read (a lease token, the stamp): atomic on MongoDB, and on the embedded
   * database under the head's lock (core/src/infra/where.ts), which otherwise reads and then writes the whole
   * document, so that two writers racing on one head (a commit and the tidy after the last one) would each undo
   * the other's change. The head after, or null when the condition no longer held.
   */
  private write(
    connectionId: string,
    condition: Filter<HeadDocument>,
    update: UpdateFilter<HeadDocument>,
  ): Promise<HeadDocument | null> {
    return updateOneWhere(this.collection, this.locks, connectionId, condition, update);
  }

  /** What readers of the connection may see now. */
  async visibility(connectionId: string): Promise<Visibility> {
    const head = await this.collection.findOne(
      { _id: connectionId },
      { projection: { _version: 1, abandoned: 1, pending: 1, kept: 1 } },
    );
    return head
      ? {
          committed: head._version,
          abandoned: head.abandoned.map((a) => a.gen),
          pending: head.pending ?? [],
          kept: head.kept ?? [],
        }
      : NOTHING;
  }

  /**
   * The connection's lease for one bundle, once no other bundle of it is being written (or its writer's lease
   * ran out); 503 when another holds it for longer than a bundle waits.
   */
  async acquire(connectionId: string, now: () => Date): Promise<WriterLease> {
    const token = randomUUID();
    const waitUntil = performance.now() + WAIT_FOR_WRITER_MS;
    for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
      const at = now();
      const head = await this.collection.findOne({ _id: connectionId });
      if (!head || head.writer === null || head.writer.until <= at) {
        const lease = await this.take(connectionId, head, token, at);
        if (lease) return lease;
        // Another writer moved first: read again, after a pause as when it is held.
      }
      if (performance.now() + pause > waitUntil) {
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          'Another bundle for this connection is being written; retry shortly.',
          {},
          { 'Retry-After': '1' },
          { storable: false },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * Makes the lease's generation visible, with the request's change id as its recovery point, listing it as
   * pending when it replaces observations (they are applied in place after), else as kept, and noting when it
   * removes records (`removes`: it holds tombstones); false (nothing committed) when the lease was taken over.
   */
  async commit(lease: WriterLease, replaces: boolean, at: Date, removes = false): Promise<boolean> {
    const scope = currentChangeScope();
    if (scope)
      await scope.recoveryPoint({
        collection: HEADS,
        id: lease.connectionId,
        version: lease.gen,
        changeId: scope.changeId,
        generation: true,
      });
    const result = await this.write(
      lease.connectionId,
      { 'writer.token': lease.token },
      {
        $set: {
          _version: lease.gen,
          writer: null,
          stamp: randomUUID(),
          ...(removes && { removals: true }),
          ...(scope && { [`_changes.${lease.gen % CHANGE_RING}`]: scope.changeId }),
        },
        $push: { [replaces ? 'pending' : 'kept']: { gen: lease.gen, at } },
      },
    );
    return result !== null;
  }

  /** Extends the lease before a write; false when it was taken over (the bundle must stop: it cannot commit). */
  async renew(lease: WriterLease, at: Date): Promise<boolean> {
    return (
      (await this.write(
        lease.connectionId,
        { 'writer.token': lease.token },
        { $set: { 'writer.until': new Date(at.getTime() + WRITER_LEASE_MS) } },
      )) !== null
    );
  }

  /** Gives the lease back without committing (the bundle failed): the next writer lists its generation as abandoned. */
  async release(lease: WriterLease): Promise<void> {
    await this.write(lease.connectionId, { 'writer.token': lease.token }, { $set: { writer: null } });
  }

  /** The lease to apply the connection's pending bundles; false while another process holds it. */
  async takeApplier(connectionId: string, token: string, at: Date): Promise<boolean> {
    for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
      const head = await this.collection.findOne({ _id: connectionId });
      if (!head || (head.applier && head.applier.token !== token && head.applier.until > at)) return false;
      const result = await this.write(
        connectionId,
        { stamp: head.stamp },
        { $set: { applier: { token, until: new Date(at.getTime() + APPLIER_LEASE_MS) }, stamp: randomUUID() } },
      );
      if (result !== null) return true;
    }
    return false;
  }

  /** Extends the applier's lease before a batch; false when another took it over. */
  async renewApplier(connectionId: string, token: string, at: Date): Promise<boolean> {
    return (
      (await this.write(
        connectionId,
        { 'applier.token': token },
        { $set: { 'applier.until': new Date(at.getTime() + APPLIER_LEASE_MS) } },
      )) !== null
    );
  }

  async releaseApplier(connectionId: string, token: string): Promise<void> {
    await this.write(connectionId, { 'applier.token': token }, { $set: { applier: null } });
  }

  /**
   * Gives a lease back once the database answers again (a failed write usually means it is away): the next bundle
   * of the connection need not wait for the lease to run out. Stops once it would have run out anyway.
   */
  releaseWhenAnswering(lease: WriterLease): void {
    const giveUpAt = performance.now() + WRITER_LEASE_MS;
    const attempt = (pause: number) => {
      if (performance.now() + pause > giveUpAt) return;
      setTimeout(() => {
        this.release(lease).catch(() => attempt(Math.min(pause * 2, 2_000)));
      }, pause).unref();
    };
    attempt(250);
  }

  /** A pending bundle is applied: it moves to the kept ones (at `at`). */
  applied(connectionId: string, gen: number, at: Date): Promise<void> {
    return this.changeLists(connectionId, (head) => {
      const pending = head.pending.filter((p) => p.gen !== gen);
      if (pending.length === head.pending.length) return null;
      return { pending, kept: [...head.kept.filter((k) => k.gen !== gen), { gen, at, replaced: true }] };
    });
  }

  /** Stops listing kept generations (their records are gone) and abandoned ones (listed long enough). */
  forget(connectionId: string, kept: number[], abandoned: number[]): Promise<void> {
    return this.changeLists(connectionId, (head) => ({
      kept: head.kept.filter((k) => !kept.includes(k.gen)),
      abandoned: head.abandoned.filter((a) => !abandoned.includes(a.gen)),
    }));
  }

  /** Notes that abandoned generations' leftovers are deleted. */
  cleaned(connectionId: string, gens: number[]): Promise<void> {
    return this.changeLists(connectionId, (head) => ({
      abandoned: head.abandoned.map((a) => (gens.includes(a.gen) ? { ...a, cleaned: true } : a)),
    }));
  }

  /** The heads that list kept or abandoned generations (for the periodic tidy: a small document per connection). */
  async listing(): Promise<HeadDocument[]> {
    const heads = await this.collection.find({}, { projection: { _id: 1, kept: 1, abandoned: 1 } }).toArray();
    return heads.filter((head) => (head.kept ?? []).length > 0 || head.abandoned.length > 0);
  }

  /** The head as it is (for cleanup and tests). */
  head(connectionId: string): Promise<HeadDocument | null> {
    return this.collection.findOne({ _id: connectionId });
  }

  /** Rewrites some of the head's lists, conditioned on its stamp (read again and retried when it moved). */
  private async changeLists(
    connectionId: string,
    change: (head: HeadDocument) => Partial<Pick<HeadDocument, 'pending' | 'kept' | 'abandoned'>> | null,
  ): Promise<void> {
    for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
      const head = await this.collection.findOne({ _id: connectionId });
      const lists = head && change({ ...head, pending: head.pending ?? [], kept: head.kept ?? [] });
      if (!head || !lists) return;
      const result = await this.write(connectionId, { stamp: head.stamp }, { $set: { ...lists, stamp: randomUUID() } });
      if (result !== null) return;
    }
    throw new Error(`the head of connection ${connectionId} kept changing`);
  }

  private async take(
    connectionId: string,
    head: HeadDocument | null,
    token: string,
    at: Date,
  ): Promise<WriterLease | null> {
    const until = new Date(at.getTime() + WRITER_LEASE_MS);
    if (!head) {
      try {
        await this.collection.insertOne({
          _id: connectionId,
          _version: 0,
          next: 1,
          writer: { token, until },
          abandoned: [],
          pending: [],
          kept: [],
          stamp: randomUUID(),
        });
      } catch (error) {
        if (isDuplicateKey(error)) return null;
        throw error;
      }
      return { connectionId, gen: 1, token, abandoned: [], removals: false };
    }
    // Every generation handed out since the last commit belongs to a writer that died or lost its lease.
    const dead = [];
    for (let gen = head._version + 1; gen <= head.next; gen++)
      if (!head.abandoned.some((a) => a.gen === gen)) dead.push({ gen, at });
    const abandoned = [...head.abandoned, ...dead];
    const taken = await this.write(
      connectionId,
      {
        stamp: head.stamp,
        _version: head._version,
        next: head.next,
        ...(head.writer === null ? { writer: null } : { 'writer.token': head.writer.token }),
      },
      { $set: { next: head.next + 1, writer: { token, until }, abandoned, stamp: randomUUID() } },
    );
    if (taken === null) return null;
    return {
      connectionId,
      gen: head.next + 1,
      token,
      abandoned: abandoned.filter((a) => !a.cleaned).map((a) => a.gen),
      removals: head.removals === true,
    };
  }
}
