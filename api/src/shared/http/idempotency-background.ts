// The idempotency middleware's steps on its store that a response does not wait for (idempotency.ts): recording an
// outcome or handing a claim back is tried again in the background while the store fails (a stalled or restarted
// Redis or database), and a claim whose write went unanswered is handed back once the store answers again.
import type { Logger } from 'pino';
import type { IdempotencyStore } from './idempotency-store.js';

/** Delays of the background attempts of a step on the store (recording an outcome, handing a claim back) that failed at
 * first. */
const STORE_RETRIES_MS = [250, 500, 1_000, 2_000, 2_000, 5_000, 5_000, 15_000, 30_000];
/**
 * The same for handing back a claim under which nothing was written (settled): every retry of the key meets
 * IDEMPOTENCY_KEY_IN_USE until it lands, so it is tried again often (a write under a lock: cheap) for as long as the
 * claim's lease, and lands within a moment of the store answering again, well within the Retry-After the failure was
 * answered with.
 */
export const HAND_BACK_RETRIES_MS = [...Array<number>(40).fill(250), ...Array<number>(30).fill(1_000)];
/** How many answers of the store an unanswered claim's hand-back waits for (found nothing each time) before it stops.
 * */
const HAND_BACK_ANSWERS = 4;

/**
 * Runs a step on the store, and again in the background while the store fails (a stalled or restarted
 * Redis or database): the response does not wait for it.
 */
export async function persist(
  logger: Logger,
  scope: string,
  what: string,
  step: () => Promise<unknown>,
  schedule = STORE_RETRIES_MS,
  attempt = 0,
): Promise<void> {
  try {
    await step();
  } catch (error) {
    const delay = schedule[attempt];
    if (delay === undefined) {
      logger.error(
        { err: error, scope },
        `idempotency: ${what} failed for good; a retry will settle the key from its recovery points once its lease ends`,
      );
      return;
    }
    logger.warn({ err: error, scope, attempt: attempt + 1 }, `idempotency: ${what} failed; retrying in the background`);
    setTimeout(() => void persist(logger, scope, what, step, schedule, attempt + 1), delay).unref();
  }
}

/**
 * A claim whose insert went unanswered may still land: a stalled database reads it when it resumes, after
 * this request gave up. Nothing ran under it, yet it would hold the key for a whole lease (LEASE_MS), every
 * retry meeting IDEMPOTENCY_KEY_IN_USE, well after the database was back. It is handed back in the
 * background instead: attempts while the store fails, and a few more once it answers (the insert may land
 * after the first answer), until one finds the claim and releases it. Conditional on the owner, so a claim
 * that never landed, or that another request holds, is left alone. One that lands after the last attempt
 * (HAND_BACK_ANSWERS answers, a few seconds) holds the key until its lease ends, as before. The same goes
 * for a take-over that went unanswered.
 */
export function handBackUnanswered(store: IdempotencyStore, scope: string, owner: string): void {
  let answered = 0;
  const attempt = async (index: number): Promise<void> => {
    try {
      if (await store.release(scope, owner)) return;
      answered++;
    } catch {
      // still away: the next attempt
    }
    const delay = STORE_RETRIES_MS[index + 1];
    if (delay === undefined || answered >= HAND_BACK_ANSWERS) return;
    setTimeout(() => void attempt(index + 1), delay).unref();
  };
  setTimeout(() => void attempt(0), STORE_RETRIES_MS[0]).unref();
}
