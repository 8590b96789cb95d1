// Attachments a sync fetched (docs/connecting.md, "Attachments"): the bytes of a DocumentReference's or a
// DiagnosticReport's attachment, kept in a private object store of their own (PORTICO_ATTACHMENT_STORAGE, never the
// catalog's public one), by connection and Binary id, and served only through the FHIR face's Binary read, after the
// gateway's checks and only when a record the caller may see names it.
import { createHash } from 'node:crypto';
import type { ObjectStorage } from '#core/object-storage/index.js';

export interface Attachment {
  contentType: string;
  data: Buffer;
}

/** A Binary id: the health system's own (its URL's `Binary/<id>`), else the digest of the URL it was fetched from. */
export function binaryIdOf(url: string): string {
  const own = /\/Binary\/([A-Za-z0-9\-.]{1,64})(?:\?.*)?$/.exec(url)?.[1];
  return own ?? createHash('sha256').update(url).digest('hex').slice(0, 40);
}

export class AttachmentStore {
  constructor(private readonly storage: ObjectStorage) {}

  put(connectionId: string, binaryId: string, attachment: Attachment): Promise<void> {
    return this.storage.put(keyOf(connectionId, binaryId), attachment.data, attachment.contentType);
  }

  async get(connectionId: string, binaryId: string): Promise<Attachment | null> {
    const found = await this.storage.get(keyOf(connectionId, binaryId));
    return found && { contentType: found.contentType, data: Buffer.from(found.body) };
  }
}

const keyOf = (connectionId: string, binaryId: string) => `${connectionId}/${binaryId}`;
