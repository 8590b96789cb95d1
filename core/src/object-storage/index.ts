// Opens the object storage PORTICO_OBJECT_STORAGE names:
//   file://<dir>   a local directory (everything after `file://` is the path; relative to the working folder)
//   s3://<bucket>?endpoint=<url>&region=<r>&publicUrl=<base>&forcePathStyle=true   (every parameter optional)
import path from 'node:path';
import { FileObjectStorage } from './file.js';
import { S3ObjectStorage, type S3ObjectStorageOptions } from './s3.js';
import type { ObjectStorage } from './types.js';

export { FileObjectStorage } from './file.js';
export { S3ObjectStorage, type S3ObjectStorageOptions } from './s3.js';
export { ASSET_PATH_PREFIX, InvalidObjectKeyError } from './keys.js';
export type { ObjectStorage, StoredObject } from './types.js';

export class ObjectStorageSpecError extends Error {
  constructor(spec: string, reason: string) {
    super(`invalid object storage "${spec}": ${reason}`);
    this.name = 'ObjectStorageSpecError';
  }
}

export function openObjectStorage(spec: string): ObjectStorage {
  if (spec.startsWith('file://')) return new FileObjectStorage(parseFileSpec(spec));
  if (spec.startsWith('s3://')) return new S3ObjectStorage(parseS3Spec(spec));
  throw new ObjectStorageSpecError(spec, 'expected file://<dir> or s3://<bucket>?endpoint=…&region=…');
}

export function parseFileSpec(spec: string): string {
  const dir = spec.slice('file://'.length);
  if (dir.trim() === '')
    throw new ObjectStorageSpecError(spec, 'file:// needs a directory, e.g. file:///var/lib/portico/objects');
  if (/[?#]/.test(dir)) throw new ObjectStorageSpecError(spec, 'file:// takes no query or fragment');
  return path.resolve(dir);
}

const S3_PARAMETERS = ['endpoint', 'region', 'publicUrl', 'forcePathStyle'] as const;
// S3's bucket naming rules: 3–63 lower-case letters, digits, dots and hyphens, alphanumeric at both ends.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z0-9-]{1,64}$/;

export function parseS3Spec(spec: string): S3ObjectStorageOptions {
  const fail = (reason: string): never => {
    throw new ObjectStorageSpecError(spec, reason);
  };
  const match = /^s3:\/\/([^/?#]*)(\/?)([^?#]*)(?:\?([^#]*))?(#.*)?$/.exec(spec);
  if (!match) return fail('expected s3://<bucket>?endpoint=…&region=…');
  const [, bucket = '', , rest = '', query = '', fragment] = match;
  if (bucket === '') fail('s3:// needs a bucket name, e.g. s3://portico-assets');
  if (!BUCKET.test(bucket) || bucket.includes('..'))
    fail(`"${bucket}" is not a valid bucket name (3–63 of a-z, 0-9, "." and "-")`);
  if (rest !== '') fail('nothing may follow the bucket name but ?parameters');
  if (fragment !== undefined) fail('s3:// takes no fragment');

  const params = new URLSearchParams(query);
  const options: S3ObjectStorageOptions = { bucket };
  const seen = new Set<string>();
  for (const [name, value] of params) {
    if (!(S3_PARAMETERS as readonly string[]).includes(name))
      fail(`unknown parameter "${name}" (known: ${S3_PARAMETERS.join(', ')})`);
    if (seen.has(name)) fail(`parameter "${name}" is given twice`);
    seen.add(name);
    if (value === '') fail(`parameter "${name}" is empty`);
  }

  const endpoint = params.get('endpoint');
  if (endpoint !== null) options.endpoint = httpUrl(endpoint, 'endpoint', fail).replace(/\/+$/, '');
  const region = params.get('region');
  if (region !== null) {
    if (!REGION.test(region)) fail(`region "${region}" is not a region name such as us-east-1`);
    options.region = region;
  }
  const publicUrl = params.get('publicUrl');
  if (publicUrl !== null) options.publicUrl = httpUrl(publicUrl, 'publicUrl', fail).replace(/\/*$/, '/');
  const forcePathStyle = params.get('forcePathStyle');
  if (forcePathStyle !== null) {
    if (forcePathStyle !== 'true' && forcePathStyle !== 'false') fail('forcePathStyle must be true or false');
    options.forcePathStyle = forcePathStyle === 'true';
  }
  return options;
}

function httpUrl(value: string, name: string, fail: (reason: string) => never): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail(`${name} must be an absolute http(s) URL (got "${value}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${name} must be an http(s) URL (got "${value}")`);
  if (url.search !== '' || url.hash !== '') fail(`${name} may not have a query or fragment`);
  if (url.username !== '' || url.password !== '')
    fail(`${name} may not carry credentials: use the AWS environment variables`);
  return url.toString();
}
