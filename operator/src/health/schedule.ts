// When each brand is checked. Every brand has a fixed place in the interval (its phase, from a hash of the
// catalog and brand id), so 30,000 brands over 6 hours are about 1.4 checks a second, evenly, and the places
// survive restarts. A check lands on its brand's phase point; the next one on the first phase point at least
// half an interval later (exactly one interval once on time). A brand never checked, or overdue (the operator
// was down when its turn came), is checked within the catch-up window instead, spread by the same phase, so a
// first start or a long outage is a ramp rather than a burst.
import { createHash } from 'node:crypto';

/** The brand's place in every interval, a fraction in [0, 1). */
export function phaseOf(catalog: string, brandId: string): number {
  return createHash('sha256').update(catalog).update('\0').update(brandId).digest().readUInt32BE(0) / 2 ** 32;
}

export interface DueInput {
  phase: number;
  intervalMs: number;
  catchUpMs: number;
  /** When the brand's outcome was last established (ms since the epoch); null when never. */
  checkedAt: number | null;
  now: number;
}

/** When the brand is checked next (ms since the epoch). */
export function nextDue({ phase, intervalMs, catchUpMs, checkedAt, now }: DueInput): number {
  const catchUp = now + phase * Math.min(catchUpMs, intervalMs);
  if (checkedAt === null) return catchUp;
  const offset = phase * intervalMs;
  const earliest = checkedAt + intervalMs / 2;
  const due = Math.ceil((earliest - offset) / intervalMs) * intervalMs + offset;
  return due >= now ? due : catchUp;
}

/** A DOWN after UP or DEGRADED is confirmed by a second check this long after, with jitter, before it shows. */
export function confirmDue(phase: number, confirmMs: number, now: number): number {
  return now + confirmMs * (1 + phase / 2);
}
