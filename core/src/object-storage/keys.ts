// Rules every object-storage driver enforces the same way, so a key or content type that one driver
// accepts is accepted by all of them and maps to the same file path, S3 key and URL.

/** Where the API serves stored objects itself (the file driver, and S3 without a public base URL). */
export const ASSET_PATH_PREFIX = '/api/sdk/v1/catalog/assets/';

export const MAX_KEY_LENGTH = 512;
/** A segment is a file name for the file driver: 255 bytes at most on common file systems, less its suffixes. */
export const MAX_SEGMENT_LENGTH = 200;

export class InvalidObjectKeyError extends Error {
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`invalid object key ${JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key)}: ${reason}`);
    this.name = 'InvalidObjectKeyError';
  }
}

const KEY_CHARACTERS = /^[A-Za-z0-9._/-]+$/;

/**
 * Keys are relative slash-separated paths of `[A-Za-z0-9._-]` segments: never absolute, never empty
 * segments, never `.` or `..`, so the same key is one file below the storage directory, one S3 key and one
 * URL path that needs no escaping.
 */
export function assertValidKey(key: string): void {
  const fail = (reason: string): never => {
    throw new InvalidObjectKeyError(String(key), reason);
  };
  if (typeof key !== 'string' || key.length === 0) fail('empty');
  if (key.length > MAX_KEY_LENGTH) fail(`longer than ${MAX_KEY_LENGTH} characters`);
  if (!KEY_CHARACTERS.test(key)) fail('only A-Z, a-z, 0-9, ".", "_", "-" and "/" are allowed');
  if (key.startsWith('/')) fail('absolute');
  if (key.includes('..')) fail('contains ".."');
  if (key.split('/').some((segment) => segment === '' || segment === '.')) fail('empty or "." path segment');
  if (key.split('/').some((segment) => segment.length > MAX_SEGMENT_LENGTH))
    fail(`a path segment longer than ${MAX_SEGMENT_LENGTH} characters`);
}

// type "/" subtype, optional parameters; no control characters (the file driver stores it as text).
const CONTENT_TYPE =
  /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\p{Cc}]*"|[A-Za-z0-9!#$&^_.+-]+))*$/u;

export function assertValidContentType(contentType: string): void {
  if (typeof contentType !== 'string' || contentType.length > 200 || !CONTENT_TYPE.test(contentType)) {
    throw new Error(
      `invalid content type ${JSON.stringify(contentType)}: expected type/subtype with optional parameters`,
    );
  }
}

export function apiAssetPath(key: string): string {
  assertValidKey(key);
  return ASSET_PATH_PREFIX + key;
}
