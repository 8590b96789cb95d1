// Object storage in a local directory (the default, under the data directory), served by the API itself.
//
// Layout: the object `a/b.png` is the file `<dir>/a/b.png`, holding exactly the stored bytes, and its
// content type is the text file `<dir>/a/b.png~type` beside it. `~` is not allowed in keys, so a sidecar
// (or a temporary file, `…~tmp-<random>`) can never be mistaken for, or collide with, an object. The
// sidecar keeps whatever content type the writer gave, which a file-extension table could not; a file
// without one (copied in by hand) is served with the type its extension implies.
//
// Writes are atomic: bytes go to a temporary file in the same folder, are flushed, and the file is renamed
// into place, so a reader or a crash never sees half an object. The sidecar is put in place before the
// object, and `exists` and `get` look at the object, so an object that exists always has its type.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { apiAssetPath, assertValidContentType, assertValidKey } from './keys.js';
import type { ObjectStorage, StoredObject } from './types.js';

const TYPE_SUFFIX = '~type';

const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

export class FileObjectStorage implements ObjectStorage {
  readonly directory: string;

  constructor(directory: string) {
    this.directory = path.resolve(directory);
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    assertValidContentType(contentType);
    // Content-addressed keys: an object that is there already holds these bytes.
    if (await this.exists(key)) return;
    const file = this.fileOf(key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeAtomically(file + TYPE_SUFFIX, Buffer.from(contentType, 'utf8'));
    await writeAtomically(file, body);
  }

  async get(key: string): Promise<StoredObject | null> {
    const file = this.fileOf(key);
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    return { body, contentType: await this.contentTypeOf(file) };
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.fileOf(key))).isFile();
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.fileOf(key);
    await rm(file, { force: true });
    await rm(file + TYPE_SUFFIX, { force: true });
  }

  publicUrl(key: string): string {
    return apiAssetPath(key);
  }

  private fileOf(key: string): string {
    assertValidKey(key);
    return path.join(this.directory, ...key.split('/'));
  }

  private async contentTypeOf(file: string): Promise<string> {
    try {
      return (await readFile(file + TYPE_SUFFIX, 'utf8')).trim();
    } catch (error) {
      if (!isMissing(error)) throw error;
      return TYPES_BY_EXTENSION[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
    }
  }
}

async function writeAtomically(file: string, bytes: Buffer): Promise<void> {
  const temporary = `${file}~tmp-${randomBytes(6).toString('hex')}`;
  try {
    const handle = await open(temporary, 'wx', 0o644);
    try {
      await handle.writeFile(bytes);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** ENOENT; ENOTDIR when a prefix of the key is an object; EISDIR when the key is a prefix of others. */
function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}
