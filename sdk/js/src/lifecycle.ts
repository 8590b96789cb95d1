// watchLifecycle: polls the app-user lifecycle probe (GET /api/sdk/v1/app-users/{appUserId}/lifecycle) with
// If-None-Match, reports each move, backs off on failures, and ends by itself on the final state.
import { networkError, PorticoError } from './errors.js';
import { answer, type Transport } from './http.js';
import type { operations } from './schema.js';
import type { Sleep } from './time.js';

type Probe = operations['probeAppUserLifecycle']['responses'][200]['content']['application/json'];
export type LifecycleState = Probe['state'];

/** The state that never moves again: the watch ends when it sees it. */
export const FINAL_STATE = 'TOMBSTONED' satisfies LifecycleState;

export interface WatchLifecycleOptions {
  /** Called with the first state read, then with every state that differs from the one before. */
  onChange: (state: LifecycleState) => void;
  /** Called with each failed poll (retryable ones are retried after a backoff; any other ends the watch). */
  onError?: (error: PorticoError) => void;
  /** Time between polls while the probe answers 200 or 304 (default 2000 ms). */
  intervalMs?: number;
  /** The longest wait of the exponential backoff after failures (default 30000 ms; Retry-After may exceed it). */
  maxIntervalMs?: number;
  /** Aborting it stops the watch, as calling the returned function does. */
  signal?: AbortSignal;
  /** How to wait (default: timers); tests pass their own. */
  sleep?: Sleep;
}

export type WatchEnd =
  | { reason: 'final'; state: typeof FINAL_STATE }
  | { reason: 'stopped'; state: LifecycleState | undefined }
  | { reason: 'error'; error: PorticoError; state: LifecycleState | undefined };

/**
 * Stops the watch when called. `done` resolves once the watch has ended, saying why; it rejects only when
 * `onChange` or `onError` throws (which ends the watch).
 */
export interface LifecycleWatch {
  (): void;
  readonly done: Promise<WatchEnd>;
}

export function watchLifecycle(
  transport: Transport,
  defaultSleep: Sleep,
  appUserId: string,
  { onChange, onError, intervalMs = 2000, maxIntervalMs = 30_000, signal, sleep = defaultSleep }: WatchLifecycleOptions,
): LifecycleWatch {
  const client = transport.publishable();
  const controller = new AbortController();
  const stop = () => controller.abort();
  if (signal?.aborted) stop();
  else signal?.addEventListener('abort', stop, { once: true });
  const stopped = controller.signal;

  async function run(): Promise<WatchEnd> {
    let etag: string | undefined;
    let state: LifecycleState | undefined;
    let failures = 0;
    while (!stopped.aborted) {
      let delay = intervalMs;
      let polled: Awaited<ReturnType<typeof answer<Probe>>> | undefined;
      try {
        polled = await answer(
          client.GET('/api/sdk/v1/app-users/{appUserId}/lifecycle', {
            params: { path: { appUserId }, header: etag === undefined ? {} : { 'If-None-Match': etag } },
            signal: stopped,
          }),
        );
        failures = 0;
      } catch (caught) {
        if (stopped.aborted) break;
        const error = caught instanceof PorticoError ? caught : networkError(caught);
        onError?.(error);
        if (!error.retryable) return { reason: 'error', error, state };
        failures += 1;
        delay = Math.min(maxIntervalMs, intervalMs * 2 ** failures);
        if (error.retryAfterSeconds !== undefined) delay = Math.max(delay, error.retryAfterSeconds * 1000);
      }
      if (polled !== undefined && !('notModified' in polled)) {
        etag = polled.response.headers.get('etag') ?? undefined;
        if (polled.data.state !== state) {
          state = polled.data.state;
          onChange(state);
        }
        if (state === FINAL_STATE) return { reason: 'final', state };
      }
      if (!stopped.aborted) await sleep(delay, stopped);
    }
    return { reason: 'stopped', state };
  }

  const done = run().finally(() => signal?.removeEventListener('abort', stop));
  return Object.assign(stop, { done });
}
