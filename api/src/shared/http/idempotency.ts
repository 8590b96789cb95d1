// Idempotency-Key (docs/api.md, "Rules every operation follows"): one execution per (credential, key); executed
// outcomes are replayed byte-for-byte for 24 hours. Requests rejected before execution are not stored, so they can be
// retried.
//
// Exactly once across crashes: the claim is a durable record (idempotency-store.ts) and the handler runs in
// a change scope (shared/infra/change-scope.ts) whose writes first append their recovery points to the claim and
// then carry its owner as their change id. A claim whose owner stopped renewing its lease is recovered by
// the next request with the key: if any recovery point shows its change happened, the operation executed
// and its response is lost (409 IDEMPOTENCY_KEY_EXECUTED, stored as the outcome, never retryable);
// otherwise nothing happened and the request takes the claim over and executes.
import { createHash, randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { Clock } from '#core/clock.js';
import { AppError } from './errors.js';
import type { DoneRecord, IdempotencyRecord, IdempotencyStore, RunningRecord } from './idempotency-store.js';
import { runInChangeScope, type ChangeScope, type RecoveryPoint } from '../infra/change-scope.js';
import type { Logger } from 'pino';
import { pino } from 'pino';
import type { OperationPatch } from './openapi.js';
import { principalOf } from './auth.js';
import { renderProblem, toAppError } from './problem-middleware.js';
import { captureResponse, replay, seal, sealingKey, unseal, type StoredResponse } from './stored-response.js';
import type { WriteAdmission } from './admission.js';
import { answeredByDeadline, latestWriteStart } from './deadline.js';
import { DependencyUnavailableError } from '#core/errors.js';
import { handBackUnanswered, HAND_BACK_RETRIES_MS, persist } from './idempotency-background.js';
import { keyHeaderDoc, readKey } from './idempotency-key.js';
import { lockRefused, stoppedBeforeLastWrite, targetKey } from './lock-refusals.js';

export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * How long a claim stays its owner's without a sign of life. The owner renews it every third of that while
 * its handler runs (and each recovery point extends it), so only an owner that died or stalled for most of
 * it loses the claim; a retry meanwhile is 409 IDEMPOTENCY_KEY_IN_USE.
 */
export const LEASE_MS = 30_000;
/** After an ambiguous failure (a write may still land): how long recovery waits before judging. */
const SETTLE_MS = 15_000;
/** Outcomes that the operation decided and that a retry would see again. */
const STORED_ERROR_STATUSES = new Set([404, 409, 412]);

export interface IdempotencyOptions {
  logger?: Logger;
  leaseMs?: number;
  /** Every route guarded by idempotent() is a write: each takes its turn here first (admission.ts). */
  admission?: WriteAdmission;
}

export function createIdempotency(
  store: IdempotencyStore,
  clock: Clock,
  serverSecret: string,
  options: IdempotencyOptions = {},
) {
  const logger = options.logger ?? pino({ level: 'silent' });
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const now = () => clock.now().getTime();

  /** Records an outcome (the response is sent regardless). */
  function complete(scope: string, owner: string, done: DoneRecord): Promise<void> {
    return persist(logger, scope, 'recording the outcome', async () => {
      if (!(await store.complete(scope, owner, done)))
        logger.warn({ scope }, 'idempotency: the claim was taken over before its outcome was recorded');
    });
  }

  async function anyReached(targets: RecoveryPoint[]): Promise<boolean> {
    for (const target of targets) if (await store.reached(target)) return true;
    return false;
  }

  return function idempotent(): Middleware & { openapi: OperationPatch } {
    const admission = options.admission;
    const middleware = async function idempotentMiddleware(ctx: Context, next: () => Promise<unknown>) {
      // A write starts by half its request's deadline at the latest, and never once the deadline has answered.
      return admission
        ? admission.run(() => once(ctx, next), {
            startBy: latestWriteStart(ctx.req),
            abandoned: () => answeredByDeadline(ctx.req),
          })
        : once(ctx, next);
    } as Middleware & { openapi: OperationPatch };
    /** One execution per (credential, key). */
    const once = async (ctx: Context, next: () => Promise<unknown>): Promise<unknown> => {
      const key = readKey(ctx);
      if (key === undefined) return next();

      const { keyId } = principalOf(ctx);
      const scope = createHash('sha256').update(`${keyId}\n${key}`).digest('hex');
      const fingerprint = createHash('sha256')
        .update([ctx.method, ctx.path, ctx.state.bodySha256 ?? '', ctx.get('If-Match')].join('\n'))
        .digest('hex');
      const sealWith = (response: StoredResponse, of = fingerprint): DoneRecord => ({
        state: 'done',
        fingerprint: of,
        sealed: seal(sealingKey(serverSecret, keyId, key), response),
        expiresAt: now() + REPLAY_WINDOW_MS,
      });
      const owner = randomUUID();
      const running = (): RunningRecord => ({
        state: 'running',
        fingerprint,
        owner,
        leaseUntil: now() + leaseMs,
        expiresAt: now() + REPLAY_WINDOW_MS,
        targets: [],
      });

      // ——— claim, or answer from the record ———
      for (let round = 1; ; round++) {
        const at = now();
        let existing: IdempotencyRecord | null;
        try {
          existing = await store.claim(scope, running(), at);
        } catch (error) {
          handBackUnanswered(store, scope, owner);
          throw error;
        }
        if (!existing) break;
        // A claim handed back after a failure that changed nothing binds the key to nothing: a corrected
        // request may use it at once (its recovery points are still asked below, in case a write landed late).
        const released = existing.state === 'running' && existing.released === true;
        if (existing.fingerprint !== fingerprint && !released) {
          throw new AppError(
            'IDEMPOTENCY_KEY_REUSED',
            'This Idempotency-Key was already used for a different request.',
          );
        }
        if (existing.state === 'done') {
          replay(ctx, unseal(sealingKey(serverSecret, keyId, key), existing.sealed));
          return;
        }
        if (existing.leaseUntil > at && !released) throw inUse();
        // The owner died, stalled or handed the claim back: its recovery points tell whether the operation
        // changed anything. If it did, that is the key's outcome, under the request that made it.
        if (await anyReached(existing.targets)) {
          const done = sealWith(captureResponse(ctx, executed()), existing.fingerprint);
          if (!(await store.complete(scope, existing.owner, done))) throw inUse(); // settled by another request meanwhile: a retry replays its answer
          if (existing.fingerprint !== fingerprint)
            throw new AppError(
              'IDEMPOTENCY_KEY_REUSED',
              'This Idempotency-Key was already used for a different request.',
            );
          return;
        }
        // Only if the claim is as it was judged: an owner still alive may have recorded a recovery point since.
        let taken: boolean;
        try {
          taken = await store.takeOver(scope, existing, running());
        } catch (error) {
          handBackUnanswered(store, scope, owner); // like an unanswered claim: it may have landed
          throw error;
        }
        if (taken) break;
        if (round >= 3) throw inUse(); // it keeps changing hands: let the client come back
      }

      // ——— execute, tied to the claim ———
      const targets: RecoveryPoint[] = [];
      let active = true;
      const changeScope: ChangeScope = {
        changeId: owner,
        get active() {
          return active;
        },
        recoveryPoint: async (point) => {
          let added: boolean;
          try {
            added = await store.addTarget(scope, owner, point, now() + leaseMs);
          } catch (error) {
            // The claim's lock was not taken, so neither was the step to the announced write: it stopped before it.
            if (!lockRefused(error)) throw error;
            targets.push(point);
            throw new DependencyUnavailableError('Redis', { cause: error, lockNotTaken: targetKey(point) });
          }
          if (!added) {
            // Taken over (this execution stalled past its lease): it must not write any more.
            throw new AppError(
              'IDEMPOTENCY_KEY_IN_USE',
              'A request with this Idempotency-Key is executing elsewhere.',
              {},
              { 'Retry-After': '1' },
            );
          }
          targets.push(point);
        },
      };
      const renewal = setInterval(
        () => {
          store
            .renew(scope, owner, now() + leaseMs)
            .catch((error: unknown) =>
              logger.warn({ err: error, scope }, 'idempotency: the claim could not be renewed'),
            );
        },
        Math.max(1, Math.floor(leaseMs / 3)),
      );
      renewal.unref();

      /**
       * A failure: release the claim when nothing can have happened, else settle it by the recovery points.
       * `beforeWrite`: the write the handler announced last had not started when it stopped (its document lock was
       * not taken), so no write of this request is on its way to the database. Handlers write one thing at a time.
       */
      const fail = async (decided: AppError | undefined, beforeWrite = false): Promise<'executed' | 'failed'> => {
        let reached: boolean | undefined = false;
        // Within the database's deadline; unknown is judged later, as ambiguous.
        if (targets.length > 0) reached = await anyReached(targets).catch(() => undefined);
        if (reached) {
          // Part of the operation happened: a retry must not run it again, and this answer is final.
          const done = sealWith(captureResponse(ctx, executed()));
          await complete(scope, owner, done);
          return 'executed';
        }
        // Nothing happened and the failure is a decided one: the key is free again. After an ambiguous
        // failure a write may still land: recovery judges once it has settled.
        const settled =
          targets.length === 0 ||
          (reached === false && ((decided !== undefined && decided.status < 500) || beforeWrite));
        // Until the store takes the step, retries see IDEMPOTENCY_KEY_IN_USE (at most for the lease). After a
        // decided failure the answer waits for it, so that a corrected retry runs at once; after a dependency's
        // failure it does not, so that the answer is not held up by the same dependency.
        const step = settled
          ? persist(
              logger,
              scope,
              'handing back a failed claim',
              () => store.release(scope, owner),
              HAND_BACK_RETRIES_MS,
            )
          : persist(logger, scope, 'holding a failed claim until it settles', () =>
              store.renew(scope, owner, now() + SETTLE_MS),
            );
        if (decided !== undefined && decided.status < 500) await step;
        return 'failed';
      };

      try {
        await runInChangeScope(changeScope, async () => {
          await next();
        });
      } catch (error) {
        const decided = toAppError(error);
        if (
          !decided ||
          !STORED_ERROR_STATUSES.has(decided.status) ||
          decided.code === 'IDEMPOTENCY_KEY_IN_USE' ||
          decided.options.storable === false
        ) {
          active = false;
          clearInterval(renewal);
          if ((await fail(decided, stoppedBeforeLastWrite(error, targets))) === 'executed') return;
          throw error;
        }
        renderProblem(ctx, decided);
      } finally {
        active = false;
        clearInterval(renewal);
      }

      if (ctx.status >= 500 || (ctx.status >= 300 && !STORED_ERROR_STATUSES.has(ctx.status))) {
        await fail(undefined);
        return;
      }
      // The operation's outcome is final from here: a store failure does not turn it into an error.
      await complete(scope, owner, sealWith(captureResponse(ctx)));
      return undefined;
    };
    middleware.openapi = { requestHeaders: [keyHeaderDoc()] };
    return middleware;
  };
}

const inUse = () =>
  new AppError(
    'IDEMPOTENCY_KEY_IN_USE',
    'A request with this Idempotency-Key is still executing.',
    {},
    { 'Retry-After': '1' },
  );

const executed = () =>
  new AppError(
    'IDEMPOTENCY_KEY_EXECUTED',
    'The request with this Idempotency-Key was executed, but its response is no longer available; read the resource to see its state.',
  );
