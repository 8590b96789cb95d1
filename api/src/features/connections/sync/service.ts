// Keeping a signed-in connection's records in sync with its health system (docs/connecting.md, "Sync"): a run
// reads the patient's observations page by page (page-walk.ts: the first page, after the first run only what changed
// since the last run began, and which entries are kept), following `next` links on the FHIR server's own origin only.
// Pages are read as they arrive and stored in batches bounded by count and bytes (batch-writer.ts), so memory stays
// flat however large a page or its resources are. The resources kept are upserted by id, so a page read twice (a run
// taken over) duplicates nothing; the others are counted. A run ends with `connection.synced` or
// `connection.sync_failed`, written with its state through the outbox; a run whose replicas keep dying on it ends
// FAILED after three takeovers without progress. Connections of suspended apps and accounts are not synced (nor their
// tokens refreshed) until reactivated.
import type { Clock } from '#core/clock.js';
import type { AccountStore } from '../../accounts/index.js';
import type { AppStore } from '../../apps/index.js';
import type { IngestService } from '../../clinical/index.js';
import type { EventOutbox } from '../../events/index.js';
import type { ConnectionService } from '../lifecycle.js';
import type { TokenDisposal } from '../vault/index.js';
import { BatchWriter, ENTRY_BYTES, OTHER_BYTES } from './batch-writer.js';
import { openPage, parsedJson, readWhole, SyncFailure, type PageReaderDeps } from './fhir-pages.js';
import { Capabilities } from './capabilities.js';
import { readReferences } from './references.js';
import { typeRun, typesReadWhole } from './type-tallies.js';
import { finishRun } from './finish.js';
import { checkEntry, checkResource, nextHighWater, nextLink, type Tally } from './page-walk.js';
import { collectReferences, firstPageOf, planOf, REFUSED_TYPE, stepOf } from './plan.js';
import type { Registrations } from '../../smart/index.js';
import type { AttachmentStore } from '../../clinical/index.js';
import { AttachmentQueue, ATTACHMENTS_AT_ONCE, attachmentsOf, fetchAttachments } from './attachments.js';
import type { ServedBrands } from '../../connect-sessions/index.js';
import { MalformedBundle, readSearchset } from './searchset-stream.js';
import type { SyncRun, SyncState, SyncStore } from './store.js';
import { suspendedNow } from './requests.js';

/** Takeovers without progress after which a run ends FAILED (`takeover_limit`). */
export const MAX_TAKEOVERS = 3;
const LIMITS = { maxEntryBytes: ENTRY_BYTES, maxOtherBytes: OTHER_BYTES };

export interface SyncServiceDeps {
  store: SyncStore;
  connections: Pick<ConnectionService, 'connectionOf'>;
  ingest: IngestService;
  outbox: EventOutbox;
  pages: Omit<PageReaderDeps, 'beforeWait'>;
  /** Forgets a connection's tokens (its connection is gone). */
  tokens: Pick<TokenDisposal, 'forget'>;
  /** Whether the account or the app is suspended (then nothing is synced or refreshed), as stored now. */
  accounts: Pick<AccountStore, 'find'>;
  apps: Pick<AppStore, 'find'>;
  clock: Clock;
  intervalMs: number;
  /** How long a run's claim lasts without progress. */
  leaseMs: number;
  /** The client registrations: one may name a type's searches (`searches`). */
  registrations?: Pick<Registrations, 'for'>;
  /** The catalog's brands (a registration may match a brand's platform). */
  brands?: ServedBrands;
  /** Where fetched attachments are kept, and the largest fetched (without: attachments are not fetched). */
  attachments?: { store: Pick<AttachmentStore, 'put'>; maxBytes: number };
}

export class SyncService {
  /** Health systems' CapabilityStatements read, kept an hour per FHIR base. */
  private readonly capabilities: Capabilities;

  constructor(private readonly deps: SyncServiceDeps) {
    this.capabilities = new Capabilities(deps.clock);
  }

  /** Runs a claimed sync to its end, until its claim is lost, or until `stop` fires (its claim then lapses). */
  async run(claimed: SyncState, stop?: AbortSignal): Promise<void> {
    const { connectionId, accountId } = claimed;
    const holder = claimed.run!.holder;
    const live = await this.deps.connections.connectionOf(accountId, connectionId);
    const health = live?.connection.health;
    if (!live || !health) {
      await this.deps.store.remove(connectionId, this.deps.clock.now());
      await this.deps.tokens.forget(connectionId);
      return;
    }
    const suspended = () => this.suspended(accountId, live.connection.appId);
    if (await suspended()) return this.pause(connectionId, holder, suspended, claimed.run?.full === true);
    const run: SyncRun = { foreignPatient: 0, takeovers: 0, ...claimed.run! };
    const tally: Tally = { skipped: 0, foreignPatient: 0 };
    /** The type whose records are being read (each batch holds one type's: the writer is flushed between them). */
    const current = { type: 'Observation' };
    const counted = () => {
      Object.assign(run, {
        skipped: run.skipped + tally.skipped,
        foreignPatient: run.foreignPatient! + tally.foreignPatient,
      });
      const counts = typeRun(run, current.type);
      counts.invalid += tally.skipped;
      counts.foreignPatient += tally.foreignPatient;
      tally.skipped = tally.foreignPatient = 0;
    };
    // Where the reading stands, for the progress written after each batch: the page being read and the next one.
    const position = { page: '', done: false, next: null as string | null };
    const writer = new BatchWriter({
      store: (observations) => this.deps.ingest.store(accountId, connectionId, observations),
      stored: async ({ ingested, updated }, pendingFrom) => {
        run.added += ingested;
        run.updated += updated;
        typeRun(run, current.type).added += ingested;
        typeRun(run, current.type).updated += updated;
        run.takeovers = 0; // progress
        run.next = pendingFrom ?? (position.done ? position.next : position.page);
        counted();
        if (!(await this.extend(connectionId, run))) throw new LostClaim();
      },
    });
    // A live run keeps its claim whatever it waits for (a slow page, a refresh another replica holds, the database):
    // only a run whose replica died is taken over.
    let lost = false;
    const heartbeat = setInterval(() => {
      this.extend(connectionId, run).then(
        (held) => (lost ||= !held),
        () => {},
      );
    }, this.deps.leaseMs / 3);
    heartbeat.unref();
    const stopBeating = () => clearInterval(heartbeat);
    stop?.addEventListener('abort', stopBeating, { once: true });
    try {
      if (live.connection.status === 'REAUTHORIZATION_REQUIRED')
        throw new SyncFailure('reauthorization_required', 'the connection needs the patient to sign in again');
      if ((run.takeovers ?? 0) >= MAX_TAKEOVERS)
        throw new SyncFailure('takeover_limit', `the run was taken over ${run.takeovers} times without progress`);
      const binding = { accountId, fhirBaseUrl: health.fhirBaseUrl, patient: health.patient };
      const origin = new URL(health.fhirBaseUrl).origin;
      const pages = { ...this.deps.pages, beforeWait: async () => void (await this.extend(connectionId, run)) };
      run.plan ??= planOf(
        await this.capabilities.types(pages, connectionId, binding),
        health.scope,
        this.searches(live.connection.brandId, health.fhirBaseUrl),
      );
      run.types ??= {};
      run.marks ??= {};
      const references = new Set(run.references ?? []);
      for (let step = run.step ?? 0; step < run.plan.length; step++) {
        const key = run.plan[step]!;
        const { type } = stepOf(key);
        current.type = type;
        if (run.step !== step) Object.assign(run, { step, next: null });
        // A full run reads every step whole.
        const mark = run.full ? null : (claimed.marks?.[key] ?? (key === 'Observation' ? claimed.highWater : null));
        let url: string | null = run.next ?? firstPageOf(health.fhirBaseUrl, key, health.patient, mark);
        try {
          while (url !== null) {
            // Shutting down, or taken over: another replica goes on from where this one stood.
            if (stop?.aborted || lost) return await writer.settle();
            // Suspended meanwhile: what was read is stored, and the run pauses until the app or account is active again.
            if (await suspended()) {
              await writer.flush();
              return await this.pause(connectionId, holder, suspended, run.full === true);
            }
            Object.assign(position, { page: url, done: false, next: null });
            const page = await openPage(pages, connectionId, binding, url);
            if (type === 'Patient') {
              // A read: the resource itself, not a Bundle.
              const text = await readWhole(page.chunks, ENTRY_BYTES);
              const read = text === null ? undefined : checkResource(parsedJson(text), text.length, health, tally);
              if (text === null) tally.skipped++;
              if (read) await writer.add(read.observation, read.bytes, url);
              run.marks[key] ??= nextHighWater({}, page.date, this.deps.clock.now());
              Object.assign(position, { done: true, next: null });
              url = null;
              continue;
            }
            const searchset = readSearchset(page.chunks, LIMITS);
            // Records with attachments wait for them (a few fetched at once); the writer takes records one at a time.
            const fetching = new AttachmentQueue(writer, ATTACHMENTS_AT_ONCE);
            for await (const entry of searchset.entries) {
              const read = checkEntry(entry, health, tally);
              if (!read) continue;
              collectReferences(read.observation.resource, health.fhirBaseUrl, references);
              const attachments = this.deps.attachments;
              if (attachments && attachmentsOf(read.observation.resource).length > 0)
                await fetching.add(read, url, () =>
                  fetchAttachments(read.observation.resource, {
                    pages,
                    connectionId,
                    binding,
                    maxBytes: attachments.maxBytes,
                    store: attachments.store,
                  }),
                );
              else await fetching.write(read, url);
            }
            await fetching.settled();
            const bundle = searchset.rest();
            if (bundle['resourceType'] !== 'Bundle')
              throw new SyncFailure('invalid_response', 'the FHIR server answered something other than a Bundle');
            run.marks[key] ??= nextHighWater(bundle, page.date, this.deps.clock.now());
            const next = nextLink(bundle);
            const foreign = next !== null && new URL(next).origin !== origin;
            Object.assign(position, { done: true, next: foreign ? null : next });
            // Every page records where the run stands (resuming at the first page whose records are not all stored).
            if (writer.pendingFrom === null) run.next = position.next;
            // With the records they were collected from (a run taken over resumes after them, and never reads them again),
            // and what the page skipped (a full run's removal trusts only a type without an invalid resource).
            run.references = [...references];
            counted();
            if (!(await this.extend(connectionId, run))) return await writer.settle(); // another replica took it over
            if (foreign) {
              await writer.flush();
              throw new SyncFailure(
                'next_link_refused',
                `a next link leads off the FHIR server's origin (${new URL(next).origin})`,
              );
            }
            url = position.next;
          }
        } catch (error) {
          // A type the server refuses is skipped and recorded; the run goes on with the next.
          if (!(error instanceof SyncFailure) || !REFUSED_TYPE.has(error.reason)) throw error;
          typeRun(run, type).status = 'SKIPPED';
          typeRun(run, type).httpStatus = Number(error.reason.slice('http_'.length));
          delete run.marks[key];
        }
        // Each step's records are stored before the next begins: where a run taken over resumes is one step's page.
        await writer.flush();
        counted();
        run.references = [...references];
        run.next = null;
        run.step = step + 1;
        if (!(await this.extend(connectionId, run))) return await writer.settle();
      }
      if (run.full) await this.removeUnreturned(accountId, connectionId, run);
      await readReferences({
        connectionId,
        references,
        pages,
        binding,
        health,
        writer,
        tally,
        current,
        counted,
        stop,
      });
      await writer.flush();
      counted();
      await finishRun(this.deps, claimed, run, null);
    } catch (error) {
      await writer.settle();
      if (error instanceof LostClaim) return;
      counted();
      if (error instanceof SyncFailure) return finishRun(this.deps, claimed, run, error.reason);
      if (error instanceof MalformedBundle) return finishRun(this.deps, claimed, run, 'invalid_response');
      // Portico's own trouble (its database): recorded as such, and the runner logs it.
      await finishRun(this.deps, claimed, run, 'internal_error').catch(() => {});
      throw error;
    } finally {
      stopBeating();
      stop?.removeEventListener('abort', stopBeating);
    }
  }

  /**
   * A full run's removal, once every step is read: what it did not write of each type it read whole is what the server
   * no longer returns. Done again by a replica that takes the run over here (what is removed is not found again).
   */
  private async removeUnreturned(accountId: string, connectionId: string, run: SyncRun): Promise<void> {
    const types = typesReadWhole(run, run.plan!);
    // Counted as each bundle of removals commits, so a replica that takes over here goes on from those counts.
    await this.deps.ingest.removeStale(accountId, connectionId, types, run.startedAt, async (removed) => {
      for (const [type, count] of removed) typeRun(run, type).removed = (typeRun(run, type).removed ?? 0) + count;
      if (!(await this.extend(connectionId, run))) throw new LostClaim();
    });
  }

  /** The searches a registration names per type, for the connection's brand. */
  private searches(brandId: string, fhirBaseUrl: string): Record<string, string[]> | undefined {
    const brand = this.deps.brands?.brand(brandId);
    return this.deps.registrations?.for({ id: brandId, platformType: brand?.platformType ?? 'OTHER', fhirBaseUrl })
      ?.searches;
  }

  private suspended(accountId: string, appId: string): Promise<boolean> {
    return suspendedNow(this.deps, accountId, appId);
  }

  /**
   * Ends the run without a sync until the app or account is active again. A reactivation that came between the
   * look at the suspension and the pause found nothing paused to resume: the sync is resumed here then.
   */
  private async pause(
    connectionId: string,
    holder: string,
    suspended: () => Promise<boolean>,
    /** A full run paused: the run after the pause is the full one. */
    full: boolean,
  ): Promise<void> {
    if (!(await this.deps.store.pause(connectionId, holder, this.deps.clock.now(), full))) return;
    if (!(await suspended())) await this.deps.store.resume(connectionId, this.deps.clock.now());
  }

  private async extend(connectionId: string, run: SyncRun): Promise<boolean> {
    run.until = new Date(this.deps.clock.now().getTime() + this.deps.leaseMs);
    return this.deps.store.progress(connectionId, run);
  }
}

/** Another replica holds the run now: this one stops without a word. */
class LostClaim extends Error {
  override name = 'LostClaim';
}
