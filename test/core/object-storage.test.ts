import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../api/src/config.js';
import {
  FileObjectStorage,
  InvalidObjectKeyError,
  ObjectStorageSpecError,
  openObjectStorage,
  parseS3Spec,
  S3ObjectStorage,
  type ObjectStorage,
} from '#core/object-storage/index.js';
import { testS3Bucket } from '../../testkit/s3.js';

const API_ASSETS = '/api/sdk/v1/catalog/assets/';
const newKey = (extension = '.png') => `logos/${randomUUID()}${extension}`;

const INVALID_KEYS: [string, string][] = [
  ['an empty key', ''],
  ['an absolute path', '/etc/passwd'],
  ['a parent segment', '../escape.png'],
  ['a parent segment inside', 'logos/../../escape.png'],
  ['".." inside a name', 'logos/a..b.png'],
  ['a "." segment', 'logos/./a.png'],
  ['an empty segment', 'logos//a.png'],
  ['a trailing slash', 'logos/'],
  ['a backslash', 'logos\\a.png'],
  ['a space', 'logo a.png'],
  ['a query', 'a.png?x=1'],
  ['a percent escape', 'a%2Fb.png'],
  ['a non-ASCII letter', 'lögo.png'],
  ['the sidecar marker', 'a.png~type'],
  ['a key over 512 characters', 'k'.repeat(513)],
  ['a segment over 200 characters (no file system holds its file)', `logos/${'k'.repeat(300)}.png`],
];

/** What every driver promises; `publicUrlOf` is the URL the driver under test gives for a key. */
function behavesAsObjectStorage(open: () => ObjectStorage, publicUrlOf: (key: string) => string): void {
  let storage: ObjectStorage;
  beforeEach(() => {
    storage = open();
  });

  it('returns what was put, with its content type, and says it exists', async () => {
    const key = newKey();
    const body = Buffer.from('\x89PNG\r\n\x1a\nnot really a png');
    expect(await storage.exists(key)).to.equal(false);
    await storage.put(key, body, 'image/png');
    expect(await storage.exists(key)).to.equal(true);
    const stored = await storage.get(key);
    expect(stored?.contentType).to.equal('image/png');
    expect(stored?.body.equals(body)).to.equal(true);
  });

  it('deletes an object, and deleting an absent one is no error', async () => {
    const key = newKey();
    await storage.put(key, Buffer.from('gone soon'), 'text/plain');
    await storage.delete(key);
    expect(await storage.exists(key)).to.equal(false);
    expect(await storage.get(key)).to.equal(null);
    await storage.delete(key);
    await storage.put(key, Buffer.from('back'), 'text/plain'); // a deleted key can be written again
    expect((await storage.get(key))?.body.toString()).to.equal('back');
  });

  it('answers null and false for a key never written', async () => {
    expect(await storage.get(newKey())).to.equal(null);
    expect(await storage.exists(newKey())).to.equal(false);
  });

  it('keeps every byte value intact, in a large object and an empty one', async () => {
    const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const large = Buffer.concat([every, randomBytes(3 * 1024 * 1024 + 7), every]);
    const [largeKey, emptyKey] = [newKey('.bin'), newKey('.bin')];
    await storage.put(largeKey, large, 'application/octet-stream');
    await storage.put(emptyKey, Buffer.alloc(0), 'application/octet-stream');
    expect((await storage.get(largeKey))?.body.equals(large)).to.equal(true);
    expect((await storage.get(emptyKey))?.body.length).to.equal(0);
  });

  it('keeps the content type it was given, whatever the key looks like', async () => {
    const cases: [string, string][] = [
      [newKey('.svg'), 'image/svg+xml'],
      [newKey('.webp'), 'image/webp'],
      [newKey(''), 'image/png'],
      [newKey('.png'), 'image/x-icon'],
      [newKey('.json'), 'application/json; charset=utf-8'],
    ];
    for (const [key, contentType] of cases) await storage.put(key, Buffer.from(key), contentType);
    for (const [key, contentType] of cases) expect((await storage.get(key))?.contentType, key).to.equal(contentType);
  });

  it('writes an object once: a second put of the same key keeps the first', async () => {
    const key = newKey();
    await storage.put(key, Buffer.from('first'), 'image/png');
    await storage.put(key, Buffer.from('second'), 'image/webp');
    const stored = await storage.get(key);
    expect(stored?.body.toString()).to.equal('first');
    expect(stored?.contentType).to.equal('image/png');
  });

  it('lets concurrent writers of the same object all succeed', async () => {
    const key = newKey();
    const body = randomBytes(64 * 1024);
    await Promise.all(Array.from({ length: 8 }, () => storage.put(key, body, 'image/png')));
    expect((await storage.get(key))?.body.equals(body)).to.equal(true);
  });

  it('keeps keys that differ only in case or folder apart', async () => {
    const name = randomUUID();
    const keys = [`a/${name}.png`, `A/${name}.png`, `a/${name}.PNG`, `${name}.png`];
    for (const key of keys) await storage.put(key, Buffer.from(key), 'image/png');
    for (const key of keys) expect((await storage.get(key))?.body.toString()).to.equal(key);
  });

  for (const [what, key] of INVALID_KEYS) {
    it(`rejects ${what} in every operation`, async () => {
      for (const operation of [
        () => storage.put(key, Buffer.from('x'), 'image/png'),
        () => storage.get(key),
        () => storage.exists(key),
      ]) {
        const error = await operation().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(InvalidObjectKeyError);
      }
      expect(() => storage.publicUrl(key)).to.throw(InvalidObjectKeyError);
    });
  }

  it('rejects a content type that is not type/subtype', async () => {
    for (const contentType of ['', 'png', 'image/png\r\nX-Injected: 1', 'image /png']) {
      const error = await storage.put(newKey(), Buffer.from('x'), contentType).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, JSON.stringify(contentType))
        .to.be.instanceOf(Error)
        .with.property('message')
        .that.matches(/invalid content type/);
    }
  });

  it('gives each key its public URL', () => {
    const key = 'logos/0f3a9c-128.png';
    expect(storage.publicUrl(key)).to.equal(publicUrlOf(key));
  });
}

describe('infra: object storage', () => {
  describe('file driver', () => {
    let dir: string;
    before(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'portico-objects-'));
    });
    after(() => rm(dir, { recursive: true, force: true }));

    behavesAsObjectStorage(
      () => new FileObjectStorage(path.join(dir, 'objects')),
      (key) => API_ASSETS + key,
    );

    it('stores the bytes as they are, at the key below its directory, and leaves no temporary files', async () => {
      const storage = new FileObjectStorage(path.join(dir, 'plain'));
      const body = randomBytes(1000);
      await storage.put('logos/ab/cd.png', body, 'image/png');
      expect((await readFile(path.join(dir, 'plain', 'logos', 'ab', 'cd.png'))).equals(body)).to.equal(true);
      expect(await readdir(path.join(dir, 'plain', 'logos', 'ab'))).to.have.members(['cd.png', 'cd.png~type']);
    });

    it('refuses an escaping key and never writes outside its directory', async () => {
      const storage = new FileObjectStorage(path.join(dir, 'jail', 'objects'));
      const error = await storage.put('../escape.png', Buffer.from('x'), 'image/png').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(InvalidObjectKeyError);
      expect(existsSync(path.join(dir, 'jail', 'escape.png'))).to.equal(false);
    });

    it('serves a file placed without a content type with the type of its extension', async () => {
      const storage = new FileObjectStorage(path.join(dir, 'manual'));
      await storage.put('seed.txt', Buffer.from('x'), 'text/plain');
      await writeFile(path.join(dir, 'manual', 'copied.svg'), '<svg/>');
      await writeFile(path.join(dir, 'manual', 'copied.unknown'), 'x');
      expect((await storage.get('copied.svg'))?.contentType).to.equal('image/svg+xml');
      expect((await storage.get('copied.unknown'))?.contentType).to.equal('application/octet-stream');
    });
  });

  describe('S3 driver (gofakes3 through the AWS SDK)', () => {
    let endpoint: string;
    let bucket: string;
    const opened: S3ObjectStorage[] = [];
    const open = (extra = ''): S3ObjectStorage => {
      const storage = openObjectStorage(
        `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&forcePathStyle=true${extra}`,
      );
      expect(storage).to.be.instanceOf(S3ObjectStorage);
      opened.push(storage as S3ObjectStorage);
      return storage as S3ObjectStorage;
    };

    before(async function () {
      this.timeout(600_000); // the first run builds tools/s3d
      ({ endpoint, bucket } = await testS3Bucket());
    });
    after(() => opened.forEach((storage) => storage.close()));

    behavesAsObjectStorage(
      () => open(),
      (key) => API_ASSETS + key,
    );

    describe('with a public base URL', () => {
      behavesAsObjectStorage(
        () => open('&publicUrl=https://cdn.example.com/portico'),
        (key) => `https://cdn.example.com/portico/${key}`,
      );
    });

    it('stores objects with their content type and an immutable year-long Cache-Control', async () => {
      const storage = open();
      const key = newKey('.webp');
      await storage.put(key, Buffer.from('RIFF'), 'image/webp');
      const head = await storage.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      expect(head.CacheControl).to.equal('public, max-age=31536000, immutable');
      expect(head.ContentType).to.equal('image/webp');
      expect(head.ContentLength).to.equal(4);
    });

    it('fails rather than answering "absent" when the bucket does not exist', async () => {
      const storage = openObjectStorage(
        `s3://no-such-bucket-${randomBytes(4).toString('hex')}?endpoint=${endpoint}&forcePathStyle=true`,
      );
      const get = await storage.get(newKey()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(get).to.be.instanceOf(Error).with.property('name', 'NoSuchBucket');
      const put = await storage.put(newKey(), Buffer.from('x'), 'image/png').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(put).to.be.instanceOf(Error).with.property('name', 'NoSuchBucket');
      (storage as S3ObjectStorage).close();
    });
  });

  describe('openObjectStorage', () => {
    it('opens the default of the configuration: a directory under the data directory', () => {
      const config = loadConfig({ PORTICO_DATA_DIR: '/tmp/portico-data' }, () => 'x'.repeat(64));
      const storage = openObjectStorage(config.objectStorage);
      expect(storage).to.be.instanceOf(FileObjectStorage);
      expect((storage as FileObjectStorage).directory).to.equal('/tmp/portico-data/objects');
    });

    it('resolves a relative file:// directory against the working folder', () => {
      expect((openObjectStorage('file://.data/objects') as FileObjectStorage).directory).to.equal(
        path.resolve('.data/objects'),
      );
    });

    it('reads every S3 parameter', () => {
      expect(parseS3Spec('s3://portico-assets')).to.deep.equal({ bucket: 'portico-assets' });
      expect(
        parseS3Spec(
          's3://logos.example?endpoint=http://minio:9000/&region=eu-west-3&publicUrl=https://cdn.example.com&forcePathStyle=true',
        ),
      ).to.deep.equal({
        bucket: 'logos.example',
        endpoint: 'http://minio:9000',
        region: 'eu-west-3',
        publicUrl: 'https://cdn.example.com/',
        forcePathStyle: true,
      });
      expect(parseS3Spec('s3://logos/?forcePathStyle=false')).to.deep.equal({ bucket: 'logos', forcePathStyle: false });
    });

    const malformed: [string, string, RegExp][] = [
      ['an unknown scheme', 'ftp://host/dir', /expected file:\/\/<dir> or s3:\/\//],
      ['an empty spec', '', /expected file:\/\/<dir> or s3:\/\//],
      ['file:// without a directory', 'file://', /needs a directory/],
      ['file:// with a query', 'file:///tmp/x?mode=1', /no query/],
      ['s3:// without a bucket', 's3://?region=us-east-1', /needs a bucket name/],
      ['an invalid bucket name', 's3://Bad_Bucket', /not a valid bucket name/],
      ['a one-letter bucket name', 's3://a', /not a valid bucket name/],
      ['a path after the bucket', 's3://logos/prefix', /nothing may follow the bucket/],
      ['an unknown parameter', 's3://logos?forcepathstyle=true', /unknown parameter "forcepathstyle"/],
      ['a parameter given twice', 's3://logos?region=a&region=b', /given twice/],
      ['an empty parameter', 's3://logos?endpoint=', /"endpoint" is empty/],
      ['an endpoint that is not a URL', 's3://logos?endpoint=minio:9000', /endpoint must be an http\(s\) URL/],
      ['an endpoint that is not http(s)', 's3://logos?endpoint=ftp://minio', /endpoint must be an http\(s\) URL/],
      ['credentials in the endpoint', 's3://logos?endpoint=http://key:secret@minio:9000', /may not carry credentials/],
      ['a relative public URL', 's3://logos?publicUrl=/assets', /publicUrl must be an absolute http\(s\) URL/],
      ['forcePathStyle that is not a boolean', 's3://logos?forcePathStyle=yes', /forcePathStyle must be true or false/],
      ['an invalid region', 's3://logos?region=US%20East', /not a region name/],
    ];
    for (const [what, spec, message] of malformed) {
      it(`rejects ${what} with a clear error`, () => {
        expect(() => openObjectStorage(spec)).to.throw(ObjectStorageSpecError, message);
      });
    }
  });
});
