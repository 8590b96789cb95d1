// A connection's observations as of one committed generation, kept packed (docs/operations.md, "Clinical ingest"):
// the gateway's index of a connection is built from its checkpoint and the records of the bundles committed after
// it (store.ts, changes()), a few documents, instead of from one document per observation (the embedded database
// decodes a document field by field: 10,000 observations took 13 s to read, their checkpoint 0.1 s).
//
// observation_checkpoints, one document per connection (its manifest): the generation, the number of parts, and
// whether the connection was too large to keep (then nothing else is kept, and its gateway searches the database).
// observation_checkpoint_parts, `<connection>@<gen>.<writer>#<n>`: gzipped text, the rows without their resources
// (one JSON array), then each resource's JSON text on a line of its own, which is loaded as text and never parsed.
//
// A checkpoint is written whole before its manifest names it, with a write conditioned on the manifest as it was
// read, and the parts of the one it replaces are deleted after; a writer whose checkpoint is not named deletes its
// own. Each writer's parts carry its own id, so two writers of one generation never mix. A reader that meets a part
// deleted under it reads the manifest again. A writer first claims the generation (observation_checkpoint_claims,
// `<connection>@<gen>`), so two replicas that both find a connection due do not both write it: the second leaves
// it to the first; a claim older than CLAIM_MS is a writer that stopped, and is taken over. (A writer that stops
// between its parts and the manifest leaves its parts and its claim behind: nothing names or sweeps them.)
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Binary, type Collection, type Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { updateOneWhere } from '#core/infra/where.js';
import type { ObservationRow } from './rows.js';
import { isDuplicateKey } from '#core/infra/mongo.js';

export const CHECKPOINTS = 'observation_checkpoints';
export const CHECKPOINT_PARTS = 'observation_checkpoint_parts';
export const CHECKPOINT_CLAIMS = 'observation_checkpoint_claims';

/** A claim this old is a writer that stopped: a write takes well under the long deadline (60 s) per part. */
const CLAIM_MS = 5 * 60_000;

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
  /** Too large to keep: no parts, and the connection's gateway searches the database. `bytes` is then a lower bound. */
  oversized: boolean;
  /** The id of the writer whose parts these are. */
  writer: string;
  at: Date;
}

interface CheckpointPart {
  _id: string;
  connectionId: string;
  gen: number;
  data: Binary;
}

/** A writer's claim on a connection's generation (one writer per generation at a time). */
interface CheckpointClaim {
  /** `<connection>@<gen>`. */
  _id: string;
  writer: string;
  at: Date;
}

export type Checkpoint = { gen: number; rows: ObservationRow[] } | { gen: number; oversized: true; bytes: number };

const partId = (connectionId: string, gen: number, writer: string, n: number) =>
  `${connectionId}@${gen}.${writer}#${n}`;

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
  private readonly claims: Collection<CheckpointClaim>;

  constructor(
    /** The handle with the deadline of long operations: parts are megabytes. */
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.manifests = db.collection<CheckpointManifest>(CHECKPOINTS);
    this.parts = db.collection<CheckpointPart>(CHECKPOINT_PARTS);
    this.claims = db.collection<CheckpointClaim>(CHECKPOINT_CLAIMS);
  }

  manifest(connectionId: string): Promise<CheckpointManifest | null> {
    return this.manifests.findOne({ _id: connectionId });
  }

  /** The connection's latest checkpoint; null when it has none (or its parts kept being replaced while read). */
  async load(connectionId: string): Promise<Checkpoint | null> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const manifest = await this.manifest(connectionId);
      if (!manifest) return null;
      if (manifest.oversized) return { gen: manifest.gen, oversized: true, bytes: manifest.bytes };
      const rows: ObservationRow[] = [];
      let whole = true;
      for (let n = 0; n < manifest.parts && whole; n++) {
        const part = await this.parts.findOne({ _id: partId(connectionId, manifest.gen, manifest.writer, n) });
        if (part) rows.push(...decodeRows(Buffer.from(part.data.buffer)));
        else whole = false; // replaced and deleted since the manifest was read
      }
      if (whole) return { gen: manifest.gen, rows };
    }
    return null;
  }

  /**
   * Stores the connection's rows as of generation `gen`, or that it is too large (`{ oversized: bytes }`: at least
   * that many bytes of text; so are rows past `maxBytes`), unless its checkpoint is already as recent; true when this
   * one is now the connection's.
   */
  async save(
    connectionId: string,
    gen: number,
    content: { rows: readonly ObservationRow[] } | { oversized: number },
    maxBytes: number,
  ): Promise<boolean> {
    const before = await this.manifest(connectionId);
    if (newer(before, gen)) return false;
    const writer = randomUUID();
    if (!(await this.claim(connectionId, gen, writer))) return false; // another writer is writing it
    try {
      return await this.write(connectionId, gen, content, maxBytes, before, writer);
    } finally {
      await this.claims.deleteOne({ _id: `${connectionId}@${gen}`, writer });
    }
  }

  private async write(
    connectionId: string,
    gen: number,
    content: { rows: readonly ObservationRow[] } | { oversized: number },
    maxBytes: number,
    before: CheckpointManifest | null,
    writer: string,
  ): Promise<boolean> {
    const encoded = 'rows' in content ? encodeRows(content.rows) : { parts: [], bytes: content.oversized };
    const oversized = 'oversized' in content || encoded.bytes > maxBytes;
    const manifest: CheckpointManifest = {
      _id: connectionId,
      gen,
      parts: oversized ? 0 : encoded.parts.length,
      rows: 'rows' in content ? content.rows.length : 0,
      bytes: encoded.bytes,
      oversized,
      writer,
      at: new Date(),
    };
    for (let n = 0; n < manifest.parts; n++) {
      const data = new Binary(encoded.parts[n]);
      await this.parts.insertOne({ _id: partId(connectionId, gen, manifest.writer, n), connectionId, gen, data });
    }
    // Named with a write conditioned on the manifest as read; read again when another writer moved first.
    let current = before;
    for (let attempt = 0; attempt < ATTEMPTS && !newer(current, gen); attempt++) {
      if (current ? await this.replace(current, manifest) : await this.insert(manifest)) {
        if (current) await this.deleteParts(current);
        return true;
      }
      current = await this.manifest(connectionId);
    }
    await this.deleteParts(manifest); // another checkpoint is the connection's
    return false;
  }

  /** Claims the connection's generation for `writer`; false while another writer holds it. */
  private async claim(connectionId: string, gen: number, writer: string): Promise<boolean> {
    const _id = `${connectionId}@${gen}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.claims.insertOne({ _id, writer, at: new Date() });
        return true;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const held = await this.claims.findOne({ _id });
      if (held && held.at.getTime() > Date.now() - CLAIM_MS) return false;
      if (held) await this.claims.deleteOne({ _id, writer: held.writer }); // its writer stopped
    }
    return false;
  }

  private async insert(manifest: CheckpointManifest): Promise<boolean> {
    try {
      await this.manifests.insertOne(manifest);
      return true;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return false; // another writer's first checkpoint landed first
    }
  }

  private async replace(before: CheckpointManifest, manifest: CheckpointManifest): Promise<boolean> {
    const { _id, ...fields } = manifest;
    const condition = { gen: before.gen, writer: before.writer };
    return (await updateOneWhere(this.manifests, this.locks, _id, condition, { $set: fields })) !== null;
  }

  private async deleteParts(manifest: CheckpointManifest): Promise<void> {
    for (let n = 0; n < manifest.parts; n++)
      await this.parts.deleteOne({ _id: partId(manifest._id, manifest.gen, manifest.writer, n) });
  }
}

/**
 * Whether the manifest is newer than generation `gen`, or as recent (a mark of too large is replaced by rows of the
 * same generation: read again under a larger budget).
 */
function newer(manifest: CheckpointManifest | null, gen: number): boolean {
  return manifest !== null && (manifest.gen > gen || (manifest.gen === gen && !manifest.oversized));
}
