// The in-memory observation store: per brand and patient, one small record per observation (index, created,
// lastUpdated, version) kept sorted by (lastUpdated, id), which is the order searches page in. Resources are
// built from these records only when a page is served, so paging 10,000 observations stays cheap.
import { observationId, SEED_STEP_MS, SEEDED_AT, type ObservationVersion } from '../data.js';
import type { SandboxPatient } from '../types.js';

/** Where a page starts: after the observation with this lastUpdated and id. */
export interface Position {
  lastUpdated: number;
  id: string;
}

export interface Range {
  /** Bounds on meta.lastUpdated in ms, each inclusive or not. */
  after?: { at: number; inclusive: boolean };
  before?: { at: number; inclusive: boolean };
}

class PatientObservations {
  readonly byIndex: ObservationVersion[] = [];
  readonly sorted: ObservationVersion[] = [];

  constructor(readonly patientId: string) {}

  add(at: number): void {
    const entry = { index: this.byIndex.length, created: at, lastUpdated: at, version: 1 };
    this.byIndex.push(entry);
    this.sorted.splice(this.firstAfter({ lastUpdated: at, id: this.idOf(entry) }), 0, entry);
  }

  touch(index: number, at: number): void {
    const entry = this.byIndex[index];
    if (!entry) throw new Error(`patient ${this.patientId} has no observation ${index}`);
    this.sorted.splice(this.sorted.indexOf(entry), 1);
    entry.lastUpdated = at;
    entry.version += 1;
    this.sorted.splice(this.firstAfter({ lastUpdated: at, id: this.idOf(entry) }), 0, entry);
  }

  idOf(entry: ObservationVersion): string {
    return observationId(this.patientId, entry.index);
  }

  /** The first position in `sorted` whose (lastUpdated, id) is after `position`: a binary search. */
  firstAfter(position: Position): number {
    return this.search((entry) => compare(entry, this.idOf(entry), position) > 0);
  }

  /** The first position in `sorted` for which `past` holds, given that it holds from some point onwards. */
  search(past: (entry: ObservationVersion) => boolean): number {
    let [low, high] = [0, this.sorted.length];
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (past(this.sorted[middle]!)) high = middle;
      else low = middle + 1;
    }
    return low;
  }
}

function compare(entry: ObservationVersion, id: string, position: Position): number {
  if (entry.lastUpdated !== position.lastUpdated) return entry.lastUpdated - position.lastUpdated;
  return id < position.id ? -1 : id > position.id ? 1 : 0;
}

export interface Page {
  entries: ObservationVersion[];
  total: number;
  /** Where the next page starts, when there is one. */
  next?: Position;
}

export class ObservationStore {
  private readonly patients = new Map<string, PatientObservations>();

  constructor(
    private readonly brandKeys: string[],
    private readonly seeds: SandboxPatient[],
  ) {}

  add(brandKey: string, patientId: string, count: number, at: number): void {
    const observations = this.of(brandKey, patientId);
    for (let i = 0; i < count; i++) observations.add(at);
  }

  touch(brandKey: string, patientId: string, index: number, at: number): void {
    this.of(brandKey, patientId).touch(index, at);
  }

  /** One page of the patient's observations in `range`, starting after `from`. */
  page(brandKey: string, patientId: string, range: Range, count: number, from?: Position): Page {
    const observations = this.of(brandKey, patientId);
    const start = observations.search((entry) =>
      range.after
        ? entry.lastUpdated > range.after.at || (range.after.inclusive && entry.lastUpdated === range.after.at)
        : true,
    );
    const end = observations.search((entry) =>
      range.before
        ? entry.lastUpdated > range.before.at || (!range.before.inclusive && entry.lastUpdated === range.before.at)
        : false,
    );
    const total = Math.max(0, end - start);
    const first = from ? Math.max(start, observations.firstAfter(from)) : start;
    const last = Math.min(end, first + count);
    const entries = observations.sorted.slice(first, last);
    const tail = entries.at(-1);
    if (last >= end || !tail) return { entries, total };
    return { entries, total, next: { lastUpdated: tail.lastUpdated, id: observations.idOf(tail) } };
  }

  private of(brandKey: string, patientId: string): PatientObservations {
    const key = `${brandKey}\n${patientId}`;
    let found = this.patients.get(key);
    if (found) return found;
    if (!this.brandKeys.includes(brandKey)) throw new Error(`no sandbox brand "${brandKey}"`);
    const seed = this.seeds.find((patient) => patient.id === patientId);
    if (!seed) throw new Error(`no sandbox patient "${patientId}"`);
    // Seeded lazily: a brand nobody reads costs nothing.
    found = new PatientObservations(patientId);
    for (let i = 0; i < seed.observations; i++) found.add(SEEDED_AT + i * SEED_STEP_MS);
    this.patients.set(key, found);
    return found;
  }
}
