// A database of its own for one describe block (on the embedded FerretDB the run started), dropped after it:
// for tests of a store against the real database without an API in front.
import { randomUUID } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import { documentLocksFor, type DocumentLocks } from '#core/infra/locks.js';
import { mongoUri } from './services.js';

export interface TestDatabase {
  db: Db;
  /** The locks the API would use on this database (FerretDB needs them). */
  locks: DocumentLocks;
}

export function withTestDatabase(assign: (database: TestDatabase) => void): void {
  let client: MongoClient | undefined;
  let db: Db | undefined;
  before(async () => {
    client = await new MongoClient(mongoUri()).connect();
    db = client.db(`t_${randomUUID().replaceAll('-', '').slice(0, 16)}`);
    assign({ db, locks: await documentLocksFor(db) });
  });
  after(async () => {
    await db?.dropDatabase();
    await client?.close();
  });
}
