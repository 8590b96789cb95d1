// What the gateway tells the access log (docs/api.md, "The access log"): one entry for each read of clinical data it
// answers or refuses, counts and never content. The access-log feature keeps them; the gateway awaits each entry's
// write before its answer leaves, so no read is answered without its record.

/** How the records were read: a search (of one type, or the observation gateway's), a read, `$everything`, `Binary`. */
export type ReadInteraction = 'search' | 'read' | 'everything' | 'binary';

/** Whose record was read, by whom: what the gateway's checks resolved. */
export interface ReadSubject {
  accountId: string;
  /** The app whose key read (or tried to). */
  appId: string;
  appUserId: string;
  connectionId: string;
  brandId: string;
}

export interface ReadEntry extends ReadSubject {
  interaction: ReadInteraction;
  /** The type read; null for `$everything` (every type the install may read). */
  resourceType: string | null;
  /** How many resources the answer carries (0 for a refusal, or a read of nothing). */
  count: number;
  /** Why it was refused; absent when it was answered. */
  denied?: string;
  requestId: string;
  keyId: string;
}

export interface ReadLog {
  /** Resolves once the entry is stored durably; rejects when it cannot be (the read is then not answered). */
  record(entry: ReadEntry): Promise<void>;
}

/** For tests and benchmarks that measure the gateway without its log: nothing is recorded. */
export const NO_READ_LOG: ReadLog = { record: () => Promise.resolve() };
