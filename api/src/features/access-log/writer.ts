// The access log's writes (docs/api.md, "The access log"): every read's entry is stored before its answer leaves, and
// the reads of a busy replica share their writes. A read's entry joins a queue; one insert at a time takes everything
// queued (up to MAX_BATCH) and, once the database acknowledges it, releases those reads to answer. While an insert is
// at work the next reads' entries gather behind it, so under load one insert carries many reads (group commit), and
// alone a read waits for one insert of its own.
//
// A crash cannot lose the record of an answered read: no read is answered before its entry is acknowledged. It may
// leave the record of a read that was never answered (stored, then the process died before sending): at most the
// reads in flight, and such an entry over-reports, never hides, a read.
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '#core/clock.js';
import { AppError } from '../../shared/http/errors.js';
import type { ReadEntry, ReadLog } from '../clinical/index.js';
import type { AccessEntry, AccessLogStore } from './store.js';

/** The most entries one insert carries (FerretDB takes a batch this size in one statement). */
export const MAX_BATCH = 1_000;
/** The most entries waiting for their insert (about 10 s of a busy replica's reads). */
export const MAX_QUEUED = 50_000;

interface Waiting {
  entry: AccessEntry;
  settle: (error?: Error) => void;
}

export class AccessLogWriter implements ReadLog {
  private queue: Waiting[] = [];
  private writing: Promise<void> | undefined;

  constructor(
    private readonly store: AccessLogStore,
    private readonly clock: Clock,
  ) {}

  record(read: ReadEntry): Promise<void> {
    // A database that stalls holds every read waiting for it: past MAX_QUEUED, reads are refused at once (503, their
    // clients retry) rather than queued without bound.
    if (this.queue.length >= MAX_QUEUED)
      return Promise.reject(
        new AppError(
          'SERVICE_UNAVAILABLE',
          'The access log cannot record reads right now; try again shortly.',
          {},
          {
            'Retry-After': '1',
          },
        ),
      );
    const entry: AccessEntry = { ...read, id: uuidv7(), createdAt: this.clock.now() };
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ entry, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      this.writing ??= this.drain();
    });
  }

  /** Resolves once everything queued so far is stored (or refused): for shutdown and tests. */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.store.append(batch.map((waiting) => waiting.entry));
          for (const waiting of batch) waiting.settle();
        } catch (error) {
          // Their reads fail (the database's error is the answer): none is answered unrecorded.
          const failure = error instanceof Error ? error : new Error(String(error));
          for (const waiting of batch) waiting.settle(failure);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }
}
