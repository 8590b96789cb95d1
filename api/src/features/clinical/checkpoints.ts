// A connection's observations as of one committed generation, kept packed (docs/operations.md, "Clinical ingest"):
// the gateway's index of a connection is built from its checkpoint and the records of the bundles committed after
// it (store.ts, changes()), a few documents, instead of from one document per observation (the embedded database
// decodes a document field by field: 10,000 observations took 13 s to read, their checkpoint 0.1 s).
//
// observation_checkpoints, one document per connection (its manifest): the generation, the number of parts, and
// whether the connection was too large to keep (then nothing else is kept, and its gateway searches the database).
// observation_checkpoint_parts, `<connection>@<gen>#<n>`: gzipped text, the rows without their resources (one JSON
// array), then each resource's JSON text on a line of its own, which is loaded as text and never parsed.
//
// A checkpoint is written whole before its manifest names it, with a write conditioned on the manifest as it was
// read, and the parts of the one it replaces are deleted after. Two writers of one generation write the same rows
// under the same part ids (rows in _id order, one field order), so either's parts serve the manifest. A reader
// that meets a part deleted under it reads the manifest again.
import { gunzipSync, gzipSync } from 'node:zlib';
import { Binary, type Collection, type Db } from 'mongodb';
import type { DocumentLocks } from '../../../../core/src/infra/locks.js';
import { updateOneWhere } from '../../../../core/src/infra/where.js';
import type { ObservationRow } from './rows.js';

export const CHECKPOINTS = 'observation_checkpoints';
export const CHECKPOINT_PARTS = 'observation_checkpoint_parts';

/** Text per part before it is gzipped (about 1 to 2 MB after): well inside MongoDB's 16 MB document limit. */
const PART_TEXT_BYTES = 8 * 1024 * 1024;
/**
 * Reads of a checkpoint that meet a part replaced under them, and writes of a manifest another writer moved first,
 * before either gives up (a reader then reads the database; a writer leaves the newer checkpoint be).
 */
const ATTEMPTS = 3;

export interface CheckpointManifest {
  /** The connection's id. */
  _id: string;
  /** The last committed generation the checkpoint holds. */
  gen: number;
  parts: number;
  rows: number;
  /** The checkpoint's text before gzip. */
  bytes: number;
  /** Too large to keep: no parts, and the connection's gateway searches the database. */
  oversized: boolean;
  at: Date;
}

interface CheckpointPart {
  _id: string;
  connectionId: string;
  gen: number;
  data: Binary;
}

export type Checkpoint = { gen: number; rows: ObservationRow[] } | { gen: number; oversized: true };

const partId = (connectionId: string, gen: number, n: number) => `${connectionId}@${gen}#${n}`;

/**
 * Rows as checkpoint text, cut into parts of about PART_TEXT_BYTES; the text's length in bytes. A part is one line
 * holding its rows without their resources (a JSON array: one parse), then each row's resource on a line of its own
 * (JSON text has no raw line breaks), in the array's order.
 */
export function encodeRows(rows: readonly ObservationRow[]): { parts: Buffer[]; bytes: number } {
  const parts: Buffer[] = [];
  let fields: Omit<ObservationRow, 'resource'>[] = [];
  let resources: string[] = [];
  let size = 0;
  let bytes = 0;
  const cut = () => {
    const text = Buffer.from(`${JSON.stringify(fields)}\n${resources.join('\n')}\n`);
    bytes += text.length;
    parts.push(gzipSync(text, { level: 1 }));
    fields = [];
    resources = [];
    size = 0;
  };
  for (const row of [...rows].sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0))) {
    const { resource, ...rest } = row;
    fields.push(rest);
    resources.push(resource);
    size += resource.length + 512;
    if (size >= PART_TEXT_BYTES) cut();
  }
  if (fields.length > 0) cut();
  return { parts, bytes };
}

export function decodeRows(part: Buffer): ObservationRow[] {
  const text = gunzipSync(part).toString('utf8');
  let at = text.indexOf('\n');
  const fields = JSON.parse(text.slice(0, at)) as Omit<ObservationRow, 'resource'>[];
  return fields.map((row) => {
    const end = text.indexOf('\n', at + 1);
    const resource = text.slice(at + 1, end);
    at = end;
    return { ...row, resource };
  });
}

export class CheckpointStore {
  private readonly manifests: Collection<CheckpointManifest>;
  private readonly parts: Collection<CheckpointPart>;

  constructor(
    /** The handle with the deadline of long operations: parts are megabytes. */
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.manifests = db.collection<CheckpointManifest>(CHECKPOINTS);
    this.parts = db.collection<CheckpointPart>(CHECKPOINT_PARTS);
  }

  manifest(connectionId: string): Promise<CheckpointManifest | null> {
    return this.manifests.findOne({ _id: connectionId });
  }

  /** The connection's latest checkpoint; null when it has none (or its parts kept being replaced while read). */
  async load(connectionId: string): Promise<Checkpoint | null> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const manifest = await this.manifest(connectionId);
      if (!manifest) return null;
      if (manifest.oversized) return { gen: manifest.gen, oversized: true };
      const rows: ObservationRow[] = [];
      let whole = true;
      for (let n = 0; n < manifest.parts && whole; n++) {
        const part = await this.parts.findOne({ _id: partId(connectionId, manifest.gen, n) });
        if (part) rows.push(...decodeRows(Buffer.from(part.data.buffer)));
        else whole = false; // replaced and deleted since the manifest was read
      }
      if (whole) return { gen: manifest.gen, rows };
    }
    return null;
  }

  /**
   * Stores the connection's rows as of generation `gen` (or that it is too large, past `maxBytes` of text) unless its
   * checkpoint is already as recent; true when this one is now the connection's.
   */
  async save(connectionId: string, gen: number, rows: readonly ObservationRow[], maxBytes: number): Promise<boolean> {
    const before = await this.manifest(connectionId);
    if (before && before.gen >= gen) return false;
    const { parts, bytes } = encodeRows(rows);
    const oversized = bytes > maxBytes;
    const manifest: CheckpointManifest = {
      _id: connectionId,
      gen,
      parts: oversized ? 0 : parts.length,
      rows: rows.length,
      bytes,
      oversized,
      at: new Date(),
    };
    if (!oversized) {
      for (const [n, data] of parts.entries()) {
        try {
          await this.parts.insertOne({ _id: partId(connectionId, gen, n), connectionId, gen, data: new Binary(data) });
        } catch (error) {
          // Another writer of this generation wrote it first: the same rows.
          if ((error as { code?: unknown }).code !== 11000) throw error;
        }
      }
    }
    // Named with a write conditioned on the manifest as read; read again when another writer moved first.
    let current = before;
    for (let attempt = 0; attempt < ATTEMPTS && !(current && current.gen >= gen); attempt++) {
      if (current ? await this.replace(current, manifest) : await this.insert(manifest)) {
        if (current) await this.deleteParts(connectionId, current.gen, current.parts);
        return true;
      }
      current = await this.manifest(connectionId);
    }
    // Another checkpoint is the connection's: these parts are no one's unless it is of this same generation.
    if (current?.gen !== gen) await this.deleteParts(connectionId, gen, manifest.parts);
    return false;
  }

  private async insert(manifest: CheckpointManifest): Promise<boolean> {
    try {
      await this.manifests.insertOne(manifest);
      return true;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 11000) throw error;
      return false; // another writer's first checkpoint landed first
    }
  }

  private async replace(before: CheckpointManifest, manifest: CheckpointManifest): Promise<boolean> {
    const { _id, ...fields } = manifest;
    return (await updateOneWhere(this.manifests, this.locks, _id, { gen: before.gen }, { $set: fields })) !== null;
  }

  private async deleteParts(connectionId: string, gen: number, parts: number): Promise<void> {
    for (let n = 0; n < parts; n++) await this.parts.deleteOne({ _id: partId(connectionId, gen, n) });
  }
}
