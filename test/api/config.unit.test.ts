import { expect } from 'chai';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../api/src/config.js';

const SECRET = 'x'.repeat(40);
const fixedSecret = () => 'generated-secret-generated-secret-0123';

function expectRejected(env: Record<string, string>, variable: string): void {
  let error: unknown;
  try {
    loadConfig(env, fixedSecret);
  } catch (e) {
    error = e;
  }
  expect(error, `${JSON.stringify(env)} was accepted`).to.be.instanceOf(ConfigError);
  expect((error as ConfigError).message).to.include(variable);
  expect((error as ConfigError).problems).to.have.length(1);
  expect((error as ConfigError).problems[0]).to.include(variable);
}

describe('config: loadConfig', () => {
  it('has defaults for everything', () => {
    const config = loadConfig({}, fixedSecret);
    expect(config).to.include({
      port: 8080,
      host: '127.0.0.1',
      mongodbUri: undefined,
      mongodbDatabase: 'portico',
      devdbPort: 27017,
      redisUrl: undefined,
      publicBaseUrl: undefined,
      adminToken: undefined,
      cursorSecret: fixedSecret(),
      cursorSecretIsEphemeral: true,
      logLevel: 'info',
      webhookAllowPrivateUrls: false,
    });
    expect(config.dataDir).to.equal(path.resolve('.data'));
    expect(config.cacheDir).to.equal(path.join(os.homedir(), '.cache', 'portico'));
    expect(config.objectStorage).to.equal(`file://${path.join(path.resolve('.data'), 'objects')}`);
    expect(config.catalog).to.deep.equal({ namespace: 'default', name: 'default' });
  });

  it('reads every variable it is given', () => {
    const config = loadConfig({
      PORT: '9090',
      MONGODB_URI: 'mongodb://db.internal:27017/clinic?replicaSet=rs0',
      REDIS_URL: 'rediss://cache.internal:6380',
      PUBLIC_BASE_URL: 'https://api.example.com/',
      PORTICO_ADMIN_TOKEN: 'admin-token-0123456789',
      PORTICO_CURSOR_SECRET: SECRET,
      PORTICO_DATA_DIR: '/var/lib/portico',
      PORTICO_OBJECT_STORAGE: 's3://logos?endpoint=http://minio:9000&region=us-east-1',
      PORTICO_CATALOG: 'health/main-catalog',
      LOG_LEVEL: 'DEBUG',
      PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      PORTICO_DEVDB_PORT: '27555',
      PORTICO_CACHE_DIR: '/var/cache/portico',
    });
    expect(config).to.include({
      port: 9090,
      mongodbUri: 'mongodb://db.internal:27017/clinic?replicaSet=rs0',
      mongodbDatabase: 'clinic',
      redisUrl: 'rediss://cache.internal:6380',
      publicBaseUrl: 'https://api.example.com',
      adminToken: 'admin-token-0123456789',
      cursorSecret: SECRET,
      cursorSecretIsEphemeral: false,
      dataDir: '/var/lib/portico',
      objectStorage: 's3://logos?endpoint=http://minio:9000&region=us-east-1',
      logLevel: 'debug',
      webhookAllowPrivateUrls: true,
      devdbPort: 27555,
      cacheDir: '/var/cache/portico',
    });
    expect(config.catalog).to.deep.equal({ namespace: 'health', name: 'main-catalog' });
  });

  it('reads booleans as true/false or 1/0, in any case', () => {
    for (const [raw, value] of [
      ['TRUE', true],
      ['1', true],
      ['False', false],
      ['0', false],
    ] as const) {
      expect(loadConfig({ PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: raw }).webhookAllowPrivateUrls, raw).to.equal(value);
    }
  });

  it('makes a new random cursor secret per process when none is configured', () => {
    const a = loadConfig({});
    const b = loadConfig({});
    expect(a.cursorSecret.length).to.be.at.least(32);
    expect(a.cursorSecret).to.not.equal(b.cursorSecret);
  });

  const invalid: [string, string][] = [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['MONGODB_URI', 'postgres://db/portico'],
    ['REDIS_URL', 'http://cache:6379'],
    ['PUBLIC_BASE_URL', 'api.example.com'],
    ['PUBLIC_BASE_URL', 'ftp://api.example.com'],
    ['PUBLIC_BASE_URL', 'https://api.example.com/?v=1'],
    ['PORTICO_ADMIN_TOKEN', 'too-short'],
    ['PORTICO_CURSOR_SECRET', 'short-secret'],
    ['PORTICO_OBJECT_STORAGE', 'gs://bucket'],
    ['PORTICO_CATALOG', 'default'],
    ['PORTICO_CATALOG', 'Default/Catalog'],
    ['PORTICO_CATALOG', 'a/b/c'],
    ['LOG_LEVEL', 'verbose'],
    ['PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS', 'yes'],
    ['PORTICO_DEVDB_PORT', '0'],
    ['PORTICO_MONGODB_TIMEOUT_MS', '50'],
    ['PORTICO_MONGODB_TIMEOUT_MS', '2.5s'],
    ['PORTICO_MONGODB_LONG_TIMEOUT_MS', '500'],
    ['PORTICO_MONGODB_LONG_TIMEOUT_MS', '2000'], // shorter than the request deadline
    ['PORTICO_REDIS_TIMEOUT_MS', '0'],
    ['PORTICO_REDIS_TIMEOUT_MS', '600000'],
    ['PORTICO_SHUTDOWN_TIMEOUT_MS', 'soon'],
    ['PORTICO_WEBHOOK_RETRY_SCHEDULE', '5s,soon'],
    ['PORTICO_WEBHOOK_RETRY_SCHEDULE', '5 s'],
    ['PORTICO_WEBHOOK_DISABLE_AFTER', '0'],
    ['PORTICO_WEBHOOK_DISABLE_WINDOW', '1 day'],
    ['PORTICO_WEBHOOK_TIMEOUT_MS', '50'],
    ['PORTICO_WEBHOOK_LEASE_MS', '10000'],
    ['PORTICO_WEBHOOK_DISPATCH', 'maybe'],
    ['PORTICO_INITIATE_RATE_LIMIT', '10'],
    ['PORTICO_INITIATE_RATE_LIMIT', '10/60'],
    ['PORTICO_INITIATE_RATE_LIMIT', '0/60s'],
    ['PORTICO_INITIATE_RATE_LIMIT', '10001/1h'],
    ['PORTICO_INITIATE_RATE_LIMIT', '10/500ms'],
    ['PORTICO_INITIATE_RATE_LIMIT', '10/1500ms'],
    ['PORTICO_INITIATE_RATE_LIMIT', '10/25h'],
    ['PORTICO_INITIATE_RATE_LIMIT', 'ten/1m'],
  ];
  it('delivers webhooks by the documented defaults unless told otherwise, and reads the delivery settings', () => {
    expect(loadConfig({}, fixedSecret).webhooks).to.deep.equal({
      dispatch: true,
      retryScheduleMs: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      disableAfter: 15,
      disableWindowMs: 86_400_000,
      timeoutMs: 15_000,
      leaseMs: 60_000,
      pollMs: 5_000,
      concurrency: 256,
    });
    const tuned = loadConfig(
      {
        PORTICO_WEBHOOK_RETRY_SCHEDULE: '1s, 1s,2s',
        PORTICO_WEBHOOK_DISABLE_WINDOW: '0s',
        PORTICO_WEBHOOK_DISPATCH: 'false',
        PORTICO_WEBHOOK_TIMEOUT_MS: '500',
        PORTICO_WEBHOOK_LEASE_MS: '2000',
      },
      fixedSecret,
    ).webhooks;
    expect(tuned).to.include({ dispatch: false, disableWindowMs: 0, timeoutMs: 500, leaseMs: 2000 });
    expect(tuned.retryScheduleMs).to.deep.equal([1000, 1000, 2000]);
  });

  it('gives every MongoDB and Redis call a deadline of 2.5 s (60 s for long operations) unless told otherwise', () => {
    expect(loadConfig({}, fixedSecret)).to.include({
      mongodbTimeoutMs: 2500,
      mongodbLongTimeoutMs: 60_000,
      redisTimeoutMs: 2500,
    });
    const tuned = loadConfig(
      {
        PORTICO_MONGODB_TIMEOUT_MS: '4000',
        PORTICO_MONGODB_LONG_TIMEOUT_MS: '120000',
        PORTICO_REDIS_TIMEOUT_MS: '1000',
      },
      fixedSecret,
    );
    expect(tuned).to.include({ mongodbTimeoutMs: 4000, mongodbLongTimeoutMs: 120_000, redisTimeoutMs: 1000 });
  });

  it('limits initiate to 10 per 60 s per app user and 60 per 60 s per key unless told otherwise, and reads the rates', () => {
    expect(loadConfig({}, fixedSecret).initiateRateLimit).to.deep.equal({
      capacity: 10,
      windowMs: 60_000,
      name: 'initiate',
    });
    expect(loadConfig({}, fixedSecret).initiateKeyRateLimit).to.deep.equal({
      capacity: 60,
      windowMs: 60_000,
      name: 'initiate-key',
    });
    expect(loadConfig({ PORTICO_INITIATE_KEY_RATE_LIMIT: '600/10m' }, fixedSecret).initiateKeyRateLimit).to.deep.equal({
      capacity: 600,
      windowMs: 600_000,
      name: 'initiate-key',
    });
    expectRejected({ PORTICO_INITIATE_KEY_RATE_LIMIT: '60' }, 'PORTICO_INITIATE_KEY_RATE_LIMIT');
    for (const [raw, capacity, windowMs] of [
      ['5/1m', 5, 60_000],
      ['100/1h', 100, 3_600_000],
      ['1/1s', 1, 1_000],
      ['10000/24h', 10_000, 86_400_000],
      ['3/1m30s', 3, 90_000],
    ] as const) {
      expect(loadConfig({ PORTICO_INITIATE_RATE_LIMIT: raw }, fixedSecret).initiateRateLimit, raw).to.deep.equal({
        capacity,
        windowMs,
        name: 'initiate',
      });
    }
  });

  it('demands PORTICO_CURSOR_SECRET when REDIS_URL is set, because replicas must share it', () => {
    expectRejected({ REDIS_URL: 'redis://cache:6379' }, 'PORTICO_CURSOR_SECRET');
  });

  it('does not demand it of a process that serves no requests (portico admin)', () => {
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379' }, fixedSecret, { servesRequests: false }).redisUrl).to.equal(
      'redis://cache:6379',
    );
  });

  for (const [variable, value] of invalid) {
    it(`rejects ${variable}=${JSON.stringify(value)} with a ConfigError naming it`, () => {
      // REDIS_URL also demands a shared cursor secret; give one so that only the value under test is wrong.
      expectRejected(
        {
          [variable]: value,
          ...(variable === 'REDIS_URL' && { PORTICO_CURSOR_SECRET: 'a-shared-cursor-secret-0123456789abcdef' }),
        },
        variable,
      );
    });
  }

  it('keeps the access log 6 years of 366 days by default, or PORTICO_AUDIT_RETENTION in years, days or hours', () => {
    const DAY = 86_400_000;
    expect(loadConfig({}, fixedSecret).audit).to.deep.equal({ retentionMs: 6 * 366 * DAY });
    const retention = (value: string) => loadConfig({ PORTICO_AUDIT_RETENTION: value }, fixedSecret).audit.retentionMs;
    expect(retention('7y')).to.equal(7 * 366 * DAY);
    expect(retention('30d')).to.equal(30 * DAY);
    expect(retention('24h')).to.equal(DAY);
    expect(retention('1h')).to.equal(3_600_000);
  });

  for (const value of ['30m', 'abc', '0d', '-1d', '6 years'])
    it(`rejects PORTICO_AUDIT_RETENTION=${JSON.stringify(value)}: shorter than an hour or not a duration`, () => {
      expectRejected({ PORTICO_AUDIT_RETENTION: value }, 'PORTICO_AUDIT_RETENTION');
    });

  it('reports every invalid variable at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'x', LOG_LEVEL: 'loud', REDIS_URL: 'tcp://r' });
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const variable of ['PORT', 'LOG_LEVEL', 'REDIS_URL']) expect(problems).to.include(variable);
  });

  it('treats empty and blank values as unset', () => {
    const names = [
      'PORT',
      'MONGODB_URI',
      'REDIS_URL',
      'PUBLIC_BASE_URL',
      'PORTICO_ADMIN_TOKEN',
      'PORTICO_CURSOR_SECRET',
      'PORTICO_OBJECT_STORAGE',
      'PORTICO_CATALOG',
      'LOG_LEVEL',
      'PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS',
      'PORTICO_DEVDB_PORT',
      'PORTICO_INITIATE_RATE_LIMIT',
    ];
    for (const blank of ['', '   ']) {
      const config = loadConfig(Object.fromEntries(names.map((n) => [n, blank])), fixedSecret);
      expect(config).to.deep.equal(loadConfig({}, fixedSecret));
      expect(config.adminToken).to.equal(undefined);
    }
  });

  it('is frozen, nested values included', () => {
    const config = loadConfig({}, fixedSecret);
    expect(Object.isFrozen(config)).to.equal(true);
    expect(() => {
      (config as { port: number }).port = 1;
    }).to.throw(TypeError);
    expect(Object.isFrozen(config.catalog), 'config.catalog').to.equal(true);
    expect(Object.isFrozen(config.initiateRateLimit), 'config.initiateRateLimit').to.equal(true);
  });
});
