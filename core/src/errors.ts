// Errors core raises for its callers to translate: the API answers DependencyUnavailableError with 503
// problem details, the operator records it in status and retries.

/** A dependency (Redis, a write lock, object storage, DNS) did not answer in time or refused the call. */
export class DependencyUnavailableError extends Error {
  /**
   * The document lock (`collection:id`, core/src/infra/locks.ts) that was not taken, when this stopped a write
   * before it started: that write cannot land later. Other writes of the same request are not covered by it.
   */
  readonly lockNotTaken: string | undefined;

  constructor(
    readonly dependency: string,
    options?: { cause?: unknown; lockNotTaken?: string },
  ) {
    super(`${dependency} is unavailable`, options);
    this.name = 'DependencyUnavailableError';
    this.lockNotTaken = options?.lockNotTaken;
  }
}

/** The first error in `error`'s cause chain that `test` recognises. */
export function findCause<E>(error: unknown, test: (error: unknown) => error is E): E | undefined {
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 10; depth++) {
    if (test(at)) return at;
    at = (at as { cause?: unknown }).cause;
  }
  return undefined;
}
