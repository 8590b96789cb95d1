// A thin promise wrapper over autocannon for the benchmark drivers.
import autocannon from 'autocannon';

export interface Target {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** Status every response must have; anything else counts as an error. */
  expectStatus: number;
  /** Paths requested in turn (a mix of queries) instead of `url`'s own path. */
  paths?: string[];
  /** A new path for every request (a patient never read before), instead of `url`'s own path. */
  nextPath?: () => string;
  method?: 'GET' | 'POST';
  /** Concurrent connections for this target (the run's setting otherwise). */
  connections?: number;
  /** Seconds before a request counts as a timeout (autocannon's 10 otherwise). */
  timeoutSeconds?: number;
  body?: string;
}

export interface Measurement {
  requestsPerSecond: number;
  requests: number;
  p99Ms: number;
  errors: number;
}

export async function measure(target: Target, seconds: number, connections: number): Promise<Measurement> {
  let wrongStatus = 0;
  const requests = target.nextPath
    ? [
        {
          method: 'GET' as const,
          setupRequest: (request: autocannon.Request) => ({ ...request, path: target.nextPath!() }),
        },
      ]
    : target.paths?.map((path) => ({ method: 'GET' as const, path }));
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        headers: target.headers,
        method: target.method ?? 'GET',
        ...(target.body !== undefined && { body: target.body }),
        connections: target.connections ?? connections,
        ...(target.timeoutSeconds !== undefined && { timeout: target.timeoutSeconds }),
        duration: seconds,
        pipelining: 1,
        ...(requests && { requests }),
      },
      (error: unknown, res) =>
        error ? reject(error instanceof Error ? error : new Error(JSON.stringify(error))) : resolve(res),
    );
    instance.on('response', (_client: unknown, statusCode: number) => {
      if (statusCode !== target.expectStatus) wrongStatus++;
    });
  });
  return {
    requestsPerSecond: result.requests.average,
    requests: result.requests.total,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + wrongStatus,
  };
}
