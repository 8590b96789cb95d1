// Attachments of a synced record (docs/connecting.md, "Attachments"): each `DocumentReference.content.attachment`
// and `DiagnosticReport.presentedForm` whose `url` is on the FHIR server's own origin (absolute, or relative to its
// base) is fetched with the sync's token (`Accept` its content type), up to PORTICO_ATTACHMENT_MAX_BYTES, kept in the
// attachment store, and its `url` pointed at `Binary/<id>` (relative: the connection's FHIR base serves it). One
// larger, refused or failed keeps its metadata and gains the extension saying why; the record is stored either way.
import { attachmentsOf, binaryIdOf, storableContentType, type AttachmentStore } from '../../clinical/index.js';
export { attachmentsOf };
import { underBase } from '../../smart/index.js';
import pLimit from 'p-limit';
import type { NormalizedObservation } from '../../clinical/index.js';
import type { BatchWriter } from './batch-writer.js';
import { openPage, SyncFailure, type PageReaderDeps } from './fhir-pages.js';

export const NOT_FETCHED = 'https://portico.dev/fhir/StructureDefinition/attachment-not-fetched';
/** Records whose attachments are fetched at once (each fetch is a request to the health system). */
export const ATTACHMENTS_AT_ONCE = 4;
/** Failures of the token, not of one attachment: they end the run as a search's would. */
const FATAL = new Set(['reauthorization_required', 'token_key_missing', 'token_refresh_failed', 'unauthorized']);

export interface AttachmentFetch {
  pages: PageReaderDeps;
  connectionId: string;
  binding: { accountId: string; fhirBaseUrl: string; patient: string };
  maxBytes: number;
  store: Pick<AttachmentStore, 'put'>;
}

type Json = Record<string, unknown>;

/** Fetches and keeps the resource's attachments on the server's origin, rewriting each one's `url` (in place). */
export async function fetchAttachments(resource: Json, context: AttachmentFetch): Promise<{ fetched: number }> {
  let fetched = 0;
  const { fhirBaseUrl } = context.binding;
  const origin = new URL(fhirBaseUrl).origin;
  for (const attachment of attachmentsOf(resource)) {
    if (typeof attachment.url !== 'string' || attachment.url === '') continue;
    const url = URL.canParse(attachment.url) ? attachment.url : underBase(fhirBaseUrl, attachment.url);
    // On the server's own origin, and a relative one under its base (`../x` would leave it): else kept as it is.
    if (new URL(url).origin !== origin) continue;
    if (!URL.canParse(attachment.url) && !new URL(url).pathname.startsWith(new URL(fhirBaseUrl).pathname)) continue;
    const contentType = storableContentType(attachment.contentType);
    const why = await fetchOne(url, contentType, context).then(
      async (data) => {
        if (data === null) return 'too_large';
        const id = binaryIdOf(url, data);
        try {
          await context.store.put(context.connectionId, id, { contentType, data });
        } catch {
          return 'not_stored'; // the store refused it (or failed): the record is kept, without it
        }
        attachment.url = `Binary/${id}`;
        fetched++;
        return null;
      },
      (error: unknown) => {
        if (!(error instanceof SyncFailure) || FATAL.has(error.reason)) throw error;
        return error.reason;
      },
    );
    if (why !== null) attachment.extension = [...list(attachment.extension), { url: NOT_FETCHED, valueString: why }];
  }
  return { fetched };
}

/** The attachment's bytes (a Binary resource's `data` when the server answered FHIR JSON); null when too large. */
async function fetchOne(url: string, contentType: string, context: AttachmentFetch): Promise<Buffer | null> {
  const page = await openPage(context.pages, context.connectionId, context.binding, url, contentType);
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of page.chunks) {
    size += chunk.length;
    // A Binary resource carries the bytes base64 (4/3 larger): allowed for, and measured again once decoded.
    if (size > Math.ceil((context.maxBytes * 4) / 3) + 64 * 1024) return null;
    parts.push(Buffer.from(chunk));
  }
  let data = Buffer.concat(parts);
  if (data[0] === 0x7b) {
    try {
      const binary = JSON.parse(data.toString('utf8')) as Json;
      if (binary.resourceType === 'Binary' && typeof binary.data === 'string')
        data = Buffer.from(binary.data, 'base64');
    } catch {
      // not JSON: the bytes as they came
    }
  }
  return data.length > context.maxBytes ? null : data;
}

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * A page's records on their way to the writer: one with attachments is written once they are fetched (up to `atOnce`
 * records' at a time), one without at once; the writer gets them one at a time. settled() waits for all of them (and
 * throws the first failure); a failure is never left unobserved meanwhile.
 */
export class AttachmentQueue {
  private readonly limit: ReturnType<typeof pLimit>;
  private writing: Promise<void> = Promise.resolve();
  private readonly pending: Promise<void>[] = [];
  /** The tasks not yet done (each settles without throwing). */
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly writer: Pick<BatchWriter, 'add'>,
    atOnce: number,
  ) {
    this.limit = pLimit(atOnce);
  }

  /** The record, once `fetch` has fetched its attachments; waits while `atOnce` records are being fetched. */
  async add(read: { observation: NormalizedObservation; bytes: number }, page: string, fetch: () => Promise<unknown>) {
    while (this.running.size >= this.limit.concurrency) await Promise.race(this.running);
    const task = this.limit(async () => {
      await fetch();
      await this.write(read, page);
    });
    const running = task.then(
      () => {},
      () => {}, // observed by settled()
    );
    this.running.add(running);
    void running.then(() => this.running.delete(running));
    this.pending.push(task);
  }

  /** The record to the writer, after those handed to it before. */
  write(read: { observation: NormalizedObservation; bytes: number }, page: string): Promise<void> {
    const written = this.writing.then(() => this.writer.add(read.observation, read.bytes, page));
    this.writing = written.catch(() => {});
    return written;
  }

  /** Waits for every record handed over (none left fetching), then throws the first failure if there was one. */
  async settled(): Promise<void> {
    const outcomes = await Promise.allSettled(this.pending);
    await this.writing;
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
