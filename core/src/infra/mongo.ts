import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';

export interface Mongo {
  client: MongoClient;
  db: Db;
}

/**
 * Connects with settings that fail fast (a request sees 503 rather than hanging) and works the same on
 * MongoDB and the embedded FerretDB: no transactions, no change streams.
 */
export async function connectMongo(uri: string, database: string, options: MongoClientOptions = {}): Promise<Mongo> {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 5000,
    connectTimeoutMS: 5000,
    maxPoolSize: 50,
    appName: 'portico',
    ...options,
  });
  await client.connect();
  return { client, db: client.db(database) };
}

/** Whether the database answers a ping within `deadlineMs`. */
export async function pingMongo(db: Db, deadlineMs = 2000): Promise<boolean> {
  try {
    await db.command({ ping: 1 }, { timeoutMS: deadlineMs });
    return true;
  } catch {
    return false;
  }
}
