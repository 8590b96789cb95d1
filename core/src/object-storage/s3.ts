// Object storage in an S3 bucket (AWS S3 or any S3-compatible store) through the official AWS SDK v3.
// Credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profiles, web
// identity, instance roles), never from the storage spec. Objects are content-addressed and immutable, so
// they are written once with a year-long immutable Cache-Control that S3 hands to every client and CDN.
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { apiAssetPath, assertValidContentType, assertValidKey } from './keys.js';
import type { ObjectStorage, StoredObject } from './types.js';

export const IMMUTABLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';

export interface S3ObjectStorageOptions {
  bucket: string;
  /** An S3-compatible store's endpoint (`http://127.0.0.1:9000`); unset: AWS S3 for the region. */
  endpoint?: string;
  /** Unset: the SDK's default chain (AWS_REGION, profile), or us-east-1 when an endpoint is given. */
  region?: string;
  /** Bucket in the path rather than the host name, as most S3-compatible stores want. */
  forcePathStyle?: boolean;
  /**
   * Where clients fetch objects directly (a CDN or a public bucket), ending in `/`: the URL of an object
   * is this base followed by its key. Unset: the API serves (proxies) the objects itself.
   */
  publicUrl?: string;
}

export class S3ObjectStorage implements ObjectStorage {
  readonly bucket: string;
  readonly client: S3Client;
  private readonly publicBase: string | undefined;

  constructor(options: S3ObjectStorageOptions) {
    this.bucket = options.bucket;
    this.publicBase = options.publicUrl;
    this.client = new S3Client({
      region: options.region ?? (options.endpoint ? 'us-east-1' : undefined),
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle ?? false,
      // Checksums only where S3 requires them: several S3-compatible stores reject the trailing CRC32
      // the SDK otherwise adds to every upload.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
    });
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    assertValidContentType(contentType);
    // Content-addressed keys: an object that is there already holds these bytes.
    if (await this.exists(key)) return;
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ContentType: contentType,
        CacheControl: IMMUTABLE_CACHE_CONTROL,
      }),
    );
  }

  async get(key: string): Promise<StoredObject | null> {
    assertValidKey(key);
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const bytes = (await response.Body?.transformToByteArray()) ?? new Uint8Array();
      return {
        body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        contentType: response.ContentType ?? 'application/octet-stream',
      };
    } catch (error) {
      // NoSuchKey only: a missing bucket or a refused credential is an error, not an absent object.
      if (error instanceof S3ServiceException && error.name === 'NoSuchKey') return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    assertValidKey(key);
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      // A HEAD response has no body, so S3 can only say 404: the key (or the bucket) is not there.
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return false;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })); // S3 deletes are idempotent
  }

  publicUrl(key: string): string {
    if (this.publicBase === undefined) return apiAssetPath(key);
    assertValidKey(key);
    return this.publicBase + key;
  }

  /** Closes the SDK's pooled connections. */
  close(): void {
    this.client.destroy();
  }
}
