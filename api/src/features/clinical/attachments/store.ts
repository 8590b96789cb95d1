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

/**
 * A Binary id: the digest of the URL the attachment was fetched from and of its bytes, so an attachment the health
 * system amends under the same URL is kept anew (the record then names the new one), and an id is always a valid key.
 */
export function binaryIdOf(url: string, data: Buffer): string {
  const content = createHash('sha256').update(data).digest('hex');
  return createHash('sha256').update(`${url}\n${content}`).digest('hex').slice(0, 40);
}

/** The attachments of a resource (a DocumentReference's content, a DiagnosticReport's presentedForm; none else). */
export function attachmentsOf(resource: Record<string, unknown>): Record<string, unknown>[] {
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  if (resource.resourceType === 'DocumentReference')
    return list(resource.content).flatMap((c) => (isObject(c) && isObject(c.attachment) ? [c.attachment] : []));
  if (resource.resourceType === 'DiagnosticReport') return list(resource.presentedForm).filter(isObject);
  return [];
}

/** What the object stores take: type/subtype and simple parameters (core/src/object-storage/keys.ts). */
const STORABLE =
  /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\p{Cc}]*"|[A-Za-z0-9!#$&^_.+-]+))*$/u;

/** A content type the store takes, else `application/octet-stream` (the attachment keeps its own in the record). */
export function storableContentType(contentType: unknown): string {
  if (typeof contentType !== 'string') return 'application/octet-stream';
  const trimmed = contentType.trim();
  return trimmed.length <= 200 && STORABLE.test(trimmed) ? trimmed : 'application/octet-stream';
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
