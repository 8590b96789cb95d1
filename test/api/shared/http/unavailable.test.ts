// Which failures are a dependency being away (503, retry later) and which are not (a bug stays a 500), told
// apart on errors the real clients raise.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { MongoBulkWriteError, MongoClient } from 'mongodb';
import { DependencyUnavailableError } from '#core/errors.js';
import { connectRedis } from '#core/infra/redis.js';
import { unavailableDependency } from '../../../../api/src/shared/http/problem-middleware.js';
import { startDatabaseProxy } from '../../../../testkit/database-proxy.js';
import { mongoUri, testRedisUrl } from '../../../../testkit/services.js';
import { freePort } from '../../../../testkit/machine.js';

async function failure(operation: () => Promise<unknown>): Promise<unknown> {
  try {
    await operation();
  } catch (error) {
    return error;
  }
  throw new Error('the operation succeeded');
}

describe('http: telling an unavailable dependency from a failed call', () => {
  it('names Redis for a command it could not send or that went unanswered, not for a reply that refuses it', async () => {
    const away = new Redis({ port: await freePort(), lazyConnect: true, enableOfflineQueue: false });
    expect(unavailableDependency(await failure(() => away.get('k')))).to.equal('Redis');
    away.disconnect();

    const redis = await connectRedis(testRedisUrl());
    try {
      const key = `portico:test:${randomUUID()}`;
      await redis.set(key, 'a string');
      expect(unavailableDependency(await failure(() => redis.lpush(key, 'x')))).to.equal(undefined); // WRONGTYPE
      await redis.del(key);
    } finally {
      await redis.quit();
    }
  });

  it('names MongoDB for a server it cannot reach, and nothing for a duplicate key', async () => {
    const unreachable = new MongoClient(`mongodb://127.0.0.1:${await freePort()}/`, { serverSelectionTimeoutMS: 200 });
    try {
      const error = await failure(() => unreachable.db('x').collection('c').findOne({}));
      expect(unavailableDependency(error)).to.equal('MongoDB');
      // A wrapper that kept it as its cause.
      expect(unavailableDependency(new Error('could not load the thing', { cause: error }))).to.equal('MongoDB');
    } finally {
      await unreachable.close();
    }

    const client = await new MongoClient(mongoUri()).connect();
    const db = client.db(`t_${randomUUID().replaceAll('-', '').slice(0, 16)}`);
    try {
      await db.collection('c').insertOne({ _id: 'one' } as never);
      expect(
        unavailableDependency(await failure(() => db.collection('c').insertOne({ _id: 'one' } as never))),
      ).to.equal(undefined);
    } finally {
      await db.dropDatabase();
      await client.close();
    }
  });

  it('names MongoDB for a bulk write (insertMany) whose reply did not come, and nothing for one the server refused', async () => {
    const proxy = await startDatabaseProxy(mongoUri());
    const client = await new MongoClient(proxy.url, { socketTimeoutMS: 500, retryWrites: false }).connect();
    const collection = client.db(`t_${randomUUID().replaceAll('-', '').slice(0, 16)}`).collection('c');
    try {
      await collection.insertMany([{ _id: 'one' } as never]);
      const refused = await failure(() => collection.insertMany([{ _id: 'one' } as never]));
      expect(refused).to.be.instanceOf(MongoBulkWriteError);
      expect(unavailableDependency(refused)).to.equal(undefined); // a duplicate key
      proxy.hold();
      const unanswered = await failure(() => collection.insertMany([{ _id: 'two' } as never]));
      expect(unanswered).to.be.instanceOf(MongoBulkWriteError);
      expect(unavailableDependency(unanswered)).to.equal('MongoDB');
    } finally {
      await proxy.release();
      await collection.drop().catch(() => {});
      await client.close(true);
      await proxy.close();
    }
  });

  it('names MongoDB for a socket error the driver let through unwrapped, and nothing for the same error elsewhere', () => {
    // What the fault suite met when the database was killed under load (test/faults): the driver waited for
    // 'drain' on a socket the server had just closed and rethrew the socket's error as it was.
    const leaked = (frames: string[]) =>
      Object.assign(new Error('This socket has been ended by the other party'), {
        code: 'EPIPE',
        stack: [
          'Error: This socket has been ended by the other party',
          '    at Socket.writeAfterFIN [as write] (node:net:566:14)',
          ...frames,
        ].join('\n'),
      });
    expect(
      unavailableDependency(
        leaked([
          '    at Connection.writeCommand (/app/node_modules/mongodb/lib/cmap/connection.js:460:29)',
          '    at async Connection.sendWire (/app/node_modules/mongodb/lib/cmap/connection.js:300:13)',
        ]),
      ),
    ).to.equal('MongoDB');
    expect(
      unavailableDependency(
        leaked(['    at Object.deliver (/app/dist/api/src/features/webhooks/events/attempt.js:40:11)']),
      ),
    ).to.equal(undefined);
  });

  it('names the dependency of a DependencyUnavailableError, and nothing for an ordinary error', () => {
    expect(unavailableDependency(new DependencyUnavailableError('a write lock'))).to.equal('a write lock');
    expect(unavailableDependency(new Error('boom'))).to.equal(undefined);
    expect(unavailableDependency(new TypeError('x is undefined'))).to.equal(undefined);
  });
});
