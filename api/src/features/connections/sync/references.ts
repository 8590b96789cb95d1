// After a run's searches (docs/connecting.md, "Sync"): the resources of referenced types the records point at
// (plan.ts, collectReferences), each read once (at most 1,000 a run), a type at a time; one the server refuses or
// does not have is skipped and counted.
import { underBase } from '../../smart/index.js';
import type { BatchWriter } from './batch-writer.js';
import { ENTRY_BYTES } from './batch-writer.js';
import { openPage, parsedJson, readWhole, SyncFailure, type PageReaderDeps } from './fhir-pages.js';
import { checkResource, type Tally } from './page-walk.js';
import { REFUSED_TYPE } from './plan.js';

export interface ReferenceRead {
  connectionId: string;
  references: Set<string>;
  pages: PageReaderDeps;
  binding: { accountId: string; fhirBaseUrl: string; patient: string };
  health: { patient: string; fhirBaseUrl: string };
  writer: BatchWriter;
  tally: Tally;
  /** The type being read, for the run's per-type tallies. */
  current: { type: string };
  /** Adds the tally to the run's (for `current.type`). */
  counted: () => void;
  stop: AbortSignal | undefined;
}

export async function readReferences(context: ReferenceRead): Promise<void> {
  const { connectionId, references, pages, binding, health, writer, tally, current, counted, stop } = context;
  const byType = new Map<string, string[]>();
  for (const reference of references) {
    const [type] = reference.split('/');
    byType.set(type!, [...(byType.get(type!) ?? []), reference]);
  }
  for (const [type, list] of byType) {
    current.type = type;
    for (const reference of list) {
      if (stop?.aborted) return;
      const url = underBase(health.fhirBaseUrl, reference);
      try {
        const page = await openPage(pages, connectionId, binding, url);
        const text = await readWhole(page.chunks, ENTRY_BYTES);
        const read = text === null ? undefined : checkResource(parsedJson(text), text.length, health, tally);
        if (text === null) tally.skipped++;
        if (read) await writer.add(read.observation, read.bytes, url);
      } catch (error) {
        if (!(error instanceof SyncFailure) || !REFUSED_TYPE.has(error.reason)) throw error;
        tally.skipped++;
      }
    }
    await writer.flush();
    counted();
  }
}
