// link_tokens: one document per link token (_id the SHA-256 of the token; the token itself is never stored),
// holding what it binds an initiate to (docs/connecting.md, "Link tokens"). A token is spent by one conditional
// update (unused and unexpired → used), so of two initiates with one token exactly one gets it.
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';
import { through } from '#core/infra/mongo.js';

export interface LinkToken {
  /** SHA-256 (hex) of the token. */
  hash: string;
  accountId: string;
  appId: string;
  appUserId: string;
  redirectUri: string;
  /** The brand the session must name; null: any brand, or Portico Connect's picker. */
  brandId: string | null;
  /** The connection the session must reconnect; null: a new connection. */
  connectionId: string | null;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  /** The session the token started. */
  sessionId: string | null;
}

export interface LinkTokenStore {
  insert(token: LinkToken): Promise<void>;
  find(hash: string): Promise<LinkToken | null>;
  /** Spends the token for `sessionId` if it is unused and unexpired at `at`; false when it is not. */
  spend(hash: string, sessionId: string, at: Date): Promise<boolean>;
  /** Makes the token unspent again, if `sessionId` spent it. */
  unspend(hash: string, sessionId: string): Promise<void>;
  /** Deletes up to `limit` tokens that expired before `before`; how many it deleted. */
  sweep(before: Date, limit: number): Promise<number>;
}

type LinkTokenDocument = Omit<LinkToken, 'hash'> & { _id: string };

export class LinkTokenRepository implements LinkTokenStore {
  private readonly collection: Collection<LinkTokenDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<LinkTokenDocument>('link_tokens');
  }

  async init(indexes?: Db): Promise<void> {
    await through(this.collection, indexes).createIndex({ expiresAt: 1 });
  }

  async insert(token: LinkToken): Promise<void> {
    const { hash, ...rest } = token;
    await this.collection.insertOne({ _id: hash, ...rest });
  }

  async find(hash: string): Promise<LinkToken | null> {
    const doc = await this.collection.findOne({ _id: hash });
    if (!doc) return null;
    const { _id, ...rest } = doc;
    return { hash: _id, ...rest };
  }

  async spend(hash: string, sessionId: string, at: Date): Promise<boolean> {
    const doc = await updateOneWhere(
      this.collection,
      this.locks,
      hash,
      { usedAt: null, expiresAt: { $gt: at } },
      { $set: { usedAt: at, sessionId } },
    );
    return doc !== null;
  }

  async unspend(hash: string, sessionId: string): Promise<void> {
    await updateOneWhere(this.collection, this.locks, hash, { sessionId }, { $set: { usedAt: null, sessionId: null } });
  }

  async sweep(before: Date, limit: number): Promise<number> {
    const expired = await this.collection
      .find({ expiresAt: { $lt: before } }, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    let deleted = 0;
    for (const { _id } of expired)
      if (await deleteOneWhere(this.collection, this.locks, _id, { expiresAt: { $lt: before } })) deleted++;
    return deleted;
  }
}
