// Errors core raises for its callers to translate: the API answers DependencyUnavailableError with 503
// problem details, the operator records it in status and retries.

/** A dependency (Redis, a write lock, object storage, DNS) did not answer in time or refused the call. */
export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: string,
    options?: { cause?: unknown },
  ) {
    super(`${dependency} is unavailable`, options);
    this.name = 'DependencyUnavailableError';
  }
}
