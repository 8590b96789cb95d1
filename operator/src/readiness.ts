// The operator's readiness (/readyz on the side port): the API server has answered this instance lately (its
// Lease reads, every retry interval, whether it leads or waits), and, while it leads and so reconciles, the
// database answers within its deadline. A standby with a working Kubernetes connection is ready: it is a
// healthy candidate, and nothing routes traffic to the operator.

export interface ReadinessSources {
  /** When (performance.now()) the API server last answered; undefined before its first answer. */
  lastContact(): number | undefined;
  leading(): boolean;
  /** Whether the database answers within its deadline. */
  pingDatabase(): Promise<boolean>;
}

export interface ReadinessResult {
  ready: boolean;
  checks: { kubernetes: boolean; database?: boolean };
}

/** `contactWindowMs`: how long since the API server's last answer still counts as a connection. */
export function operatorReadiness(sources: ReadinessSources, contactWindowMs: number): () => Promise<ReadinessResult> {
  return async () => {
    const contact = sources.lastContact();
    const kubernetes = contact !== undefined && performance.now() - contact <= contactWindowMs;
    if (!sources.leading()) return { ready: kubernetes, checks: { kubernetes } };
    const database = await sources.pingDatabase();
    return { ready: kubernetes && database, checks: { kubernetes, database } };
  };
}
