// portal_sessions: one document per link to a patient's own page (docs/connecting.md, "The patient's page"). The link
// and the page's cookie are `<id>.<secret>`; only their secrets' digests are stored. A link is spent by one
// conditional update (unspent and unexpired → opened, with the page's cookie digest), so of two visits exactly one
// opens the page.
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { through } from '#core/infra/mongo.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';

export interface PortalSession {
  id: string;
  accountId: string;
  appUserId: string;
  /** Digest of the link's secret. */
  linkHash: string;
  createdAt: Date;
  /** The link opens the page until then (15 minutes after it was made). */
  expiresAt: Date;
  openedAt: Date | null;
  /** Digest of the page's cookie secret, once the link opened the page. */
  pageHash: string | null;
  /** The page answers its cookie until then. */
  pageExpiresAt: Date | null;
}

export interface PortalSessionStore {
  insert(session: PortalSession): Promise<void>;
  find(id: string): Promise<PortalSession | null>;
  /** Opens the page if the link is unspent and unexpired at `at`; null when it is not. */
  open(id: string, at: Date, page: { pageHash: string; pageExpiresAt: Date }): Promise<PortalSession | null>;
  /** Deletes up to `limit` sessions whose link and page both expired before `before`; how many it deleted. */
  sweep(before: Date, limit: number): Promise<number>;
}

type PortalDocument = Omit<PortalSession, 'id'> & { _id: string };

export class PortalSessionRepository implements PortalSessionStore {
  private readonly collection: Collection<PortalDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<PortalDocument>('portal_sessions');
  }

  async init(indexes?: Db): Promise<void> {
    await through(this.collection, indexes).createIndex({ expiresAt: 1 });
  }

  async insert(session: PortalSession): Promise<void> {
    const { id, ...rest } = session;
    await this.collection.insertOne({ _id: id, ...rest });
  }

  async find(id: string): Promise<PortalSession | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc && sessionOf(doc);
  }

  async open(id: string, at: Date, page: { pageHash: string; pageExpiresAt: Date }): Promise<PortalSession | null> {
    const doc = await updateOneWhere(
      this.collection,
      this.locks,
      id,
      { openedAt: null, expiresAt: { $gt: at } },
      { $set: { openedAt: at, ...page } },
    );
    return doc && sessionOf(doc);
  }

  async sweep(before: Date, limit: number): Promise<number> {
    const over = { expiresAt: { $lt: before }, $or: [{ pageExpiresAt: null }, { pageExpiresAt: { $lt: before } }] };
    const expired = await this.collection
      .find(over, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    let deleted = 0;
    for (const { _id } of expired) if (await deleteOneWhere(this.collection, this.locks, _id, over)) deleted++;
    return deleted;
  }
}

function sessionOf({ _id, ...rest }: PortalDocument): PortalSession {
  return { id: _id, ...rest };
}
