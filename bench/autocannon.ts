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
}

export interface Measurement {
  requestsPerSecond: number;
  p99Ms: number;
  errors: number;
}

export async function measure(target: Target, seconds: number, connections: number): Promise<Measurement> {
  let wrongStatus = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        headers: target.headers,
        connections,
        duration: seconds,
        pipelining: 1,
        ...(target.paths && { requests: target.paths.map((path) => ({ method: 'GET' as const, path })) }),
      },
      (error, res) => (error ? reject(error) : resolve(res)),
    );
    instance.on('response', (_client: unknown, statusCode: number) => {
      if (statusCode !== target.expectStatus) wrongStatus++;
    });
  });
  return { requestsPerSecond: result.requests.average, p99Ms: result.latency.p99, errors: result.errors + result.timeouts + wrongStatus };
}
