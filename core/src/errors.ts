// Errors core raises for its callers to translate: the API answers DependencyUnavailableError with 503
// problem details, the operator records it in status and retries.

/** A dependency (Redis, a write lock, object storage, DNS) did not answer in time or refused the call. */
export class DependencyUnavailableError extends Error {
  /** The write it stopped had not started (a document lock that was not taken): nothing of it can land later. */
  readonly beforeWrite: boolean;

  constructor(
    readonly dependency: string,
    options?: { cause?: unknown; beforeWrite?: boolean },
  ) {
    super(`${dependency} is unavailable`, options);
    this.name = 'DependencyUnavailableError';
    this.beforeWrite = options?.beforeWrite === true;
  }
}

/** Whether `error`, or an error it was caused by, is one `test` recognises. */
export function causedBy(error: unknown, test: (error: unknown) => boolean): boolean {
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 10; depth++) {
    if (test(at)) return true;
    at = (at as { cause?: unknown }).cause;
  }
  return false;
}
