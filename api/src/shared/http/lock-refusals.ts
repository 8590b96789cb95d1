// What a refused document lock tells the idempotency middleware (idempotency.ts) about a failure: a write whose lock
// was not taken (core/src/infra/where.ts) never started, so when it is the write the handler announced last, no
// write of the request is on its way to the database.
import type { RecoveryPoint } from '../infra/change-scope.js';
import { DependencyUnavailableError, findCause } from '#core/errors.js';

/**
 * Whether `error` stopped the write the handler announced last before that write started: the first dependency failure
 * in its causes is that write's document lock not being taken. A lock refused to any other write (a compensation after
 * an ambiguous failure, say) proves nothing of the announced one.
 */
export function stoppedBeforeLastWrite(error: unknown, targets: readonly RecoveryPoint[]): boolean {
  const last = targets.at(-1);
  return last !== undefined && lockRefused(error) === targetKey(last);
}

/** The document lock whose refusal is the first dependency failure among `error`'s causes, if that is what it is. */
export function lockRefused(error: unknown): string | undefined {
  return findCause(error, (e): e is DependencyUnavailableError => e instanceof DependencyUnavailableError)
    ?.lockNotTaken;
}

/** A recovery point's document, named as its lock is (core/src/infra/where.ts). */
export function targetKey(point: RecoveryPoint): string {
  return `${point.collection}:${point.id}`;
}
