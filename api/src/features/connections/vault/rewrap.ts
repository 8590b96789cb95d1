// Retiring a token key (docs/connecting.md, "Rotating the token keys"): `portico admin rewrap-tokens` seals every
// vault entry afresh under the current key (and in the current binding's form), and `portico_vault_entries{kid}`
// shows how many entries each key still seals, so an operator sees when an old key can leave PORTICO_TOKEN_KEYS.
// The walk goes in connection-id order and skips what is already current, so running it again after an
// interruption resumes where it stopped; each entry is written only while it is at the version read, so a refresh
// meanwhile (which seals under the current key anyway) wins.
import { Gauge, type Registry } from 'prom-client';
import type { Keyring } from './keyring.js';
import { recordBinding, sealContext, sealTokens } from './sealing.js';
import type { TokenRecord, TokenStore } from './store.js';

export interface RewrapReport {
  /** Entries looked at. */
  scanned: number;
  /** Sealed afresh under the current key. */
  rewrapped: number;
  /** Already under the current key, in the current form. */
  current: number;
  /** Changed by a refresh or a reconnect while being rewrapped (sealed under the current key by it). */
  changed: number;
  /** Under a key no longer listed, or not opening: left as they are (their connections need their patients). */
  unreadable: number;
}

export async function rewrapTokens(
  store: TokenStore,
  keyring: Keyring,
  { batch = 200, onBatch }: { batch?: number; onBatch?: (report: RewrapReport) => void } = {},
): Promise<RewrapReport> {
  const report: RewrapReport = { scanned: 0, rewrapped: 0, current: 0, changed: 0, unreadable: 0 };
  let after = '';
  for (;;) {
    const records = await store.page(after, batch);
    for (const record of records) {
      report.scanned++;
      const outcome = await rewrapOne(store, keyring, record);
      report[outcome]++;
    }
    if (records.length === 0) return report;
    after = records.at(-1)!.connectionId;
    onBatch?.({ ...report });
  }
}

async function rewrapOne(
  store: TokenStore,
  keyring: Keyring,
  record: TokenRecord,
): Promise<'rewrapped' | 'current' | 'changed' | 'unreadable'> {
  const inForm = (sealed: TokenRecord['access'] | null) =>
    sealed === null || (sealed.kid === keyring.current && sealed.aad === 2);
  if (inForm(record.access) && inForm(record.refresh)) return 'current';
  const binding = recordBinding(record);
  const open = (field: 'access' | 'refresh') =>
    keyring.open(record[field]!, sealContext(record.connectionId, field, binding, record[field]!));
  let access: string;
  let refresh: string | undefined;
  try {
    access = open('access');
    refresh = record.refresh ? open('refresh') : undefined;
  } catch {
    return 'unreadable';
  }
  const sealed = sealTokens(keyring, record.connectionId, binding, access, refresh);
  return (await store.resealed(record.connectionId, record.version, sealed)) ? 'rewrapped' : 'changed';
}

/** How long a scrape may reuse the last count: counting reads the whole vault. */
const COUNT_TTL_MS = 30_000;

/** `portico_vault_entries{kid}`: the entries each key seals (0 for a listed key that seals none). */
export function vaultEntriesGauge(registry: Registry, store: TokenStore, keyring: Keyring, now = Date.now): Gauge {
  let last: { at: number; counts: Map<string, number> } | undefined;
  return new Gauge({
    name: 'portico_vault_entries',
    help: 'Token vault entries sealed under each key (kid); a key that seals none can leave PORTICO_TOKEN_KEYS.',
    labelNames: ['kid'],
    registers: [registry],
    async collect() {
      if (!last || now() - last.at > COUNT_TTL_MS) {
        try {
          last = { at: now(), counts: await store.entriesByKey() };
        } catch {
          // The database did not answer: the last count stands (or none), and /metrics still answers.
        }
      }
      this.reset();
      if (!last) return;
      for (const kid of keyring.kids) this.set({ kid }, last.counts.get(kid) ?? 0);
      for (const [kid, n] of last.counts) if (!keyring.kids.includes(kid)) this.set({ kid }, n);
    },
  });
}
