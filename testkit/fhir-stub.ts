// A loopback HTTPS server standing in for every FHIR host of a test or benchmark: it answers by host name
// (the Host header; TLS connections are counted by their SNI name) and path, as a well-behaved FHIR server by
// default (a CapabilityStatement at /metadata and a SMART configuration at /.well-known/smart-configuration,
// both with ETags honoured by If-None-Match), and measures what a polite client must bound: requests and
// connections open at once per host, and requests started per host in any one-second window.
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { testTls } from './tls.js';

export interface StubRequest {
  host: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface StubAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Answer after this long (a slow server). */
  delayMs?: number;
  /** After the head, send one byte of body this often and never finish (a slow-drip error page). */
  dripMs?: number;
}

/** How a host answers; undefined: as a well-behaved FHIR server (wellBehaved). */
export type StubBehaviour = (request: StubRequest) => StubAnswer | undefined;

export const CAPABILITY_STATEMENT = JSON.stringify({
  resourceType: 'CapabilityStatement',
  status: 'active',
  date: '2026-01-01',
  kind: 'instance',
  software: { name: 'Stub FHIR server' },
  fhirVersion: '4.0.1',
  format: ['json'],
  rest: [
    {
      mode: 'server',
      security: {
        service: [
          {
            coding: [
              { system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' },
            ],
          },
        ],
      },
    },
  ],
});
export const SMART_CONFIGURATION = JSON.stringify({
  authorization_endpoint: 'https://auth.fhir.test/authorize',
  token_endpoint: 'https://auth.fhir.test/token',
  capabilities: ['launch-standalone', 'client-public', 'context-standalone-patient'],
  code_challenge_methods_supported: ['S256'],
});

/** The answer of a FHIR server that does everything right (ETags included). */
export function wellBehaved(request: StubRequest): StubAnswer {
  const document = request.path.endsWith('/metadata')
    ? { body: CAPABILITY_STATEMENT, etag: '"cs-1"', type: 'application/fhir+json' }
    : request.path.endsWith('/.well-known/smart-configuration')
      ? { body: SMART_CONFIGURATION, etag: '"smart-1"', type: 'application/json' }
      : undefined;
  if (!document) return { status: 404, body: '{"resourceType":"OperationOutcome"}' };
  if (request.headers['if-none-match'] === document.etag) return { status: 304, headers: { etag: document.etag } };
  return { status: 200, body: document.body, headers: { 'content-type': document.type, etag: document.etag } };
}

interface HostStats {
  inFlight: number;
  peakInFlight: number;
  connections: number;
  peakConnections: number;
  requests: number;
  /** Requests answered (a head sent; not those whose client left first). */
  answered: number;
  /** When each request arrived (by `now`), in order. */
  starts: number[];
}

export class FhirStub {
  behaviour: StubBehaviour = () => undefined;
  /** What arrivals are stamped with: a test whose client runs on manual time stamps them with that clock. */
  now: () => number = () => performance.now();
  /** Every request, in arrival order (unless `record` is off: benchmarks). */
  readonly requests: StubRequest[] = [];
  private readonly stats = new Map<string, HostStats>();

  private constructor(
    private readonly server: https.Server,
    readonly address: string,
    readonly port: number,
    private readonly record: boolean,
  ) {}

  static async start(
    options: { address?: string; tls?: { key: string; cert: string }; record?: boolean } = {},
  ): Promise<FhirStub> {
    const tls = options.tls ?? testTls();
    const server = https.createServer({ key: tls.key, cert: tls.cert, keepAliveTimeout: 5000 });
    const address = options.address ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, address, resolve));
    const stub = new FhirStub(server, address, (server.address() as AddressInfo).port, options.record ?? true);
    server.on('secureConnection', (socket: TLSSocket) => stub.connected(socket));
    server.on('request', (req, res) => stub.answer(req, res));
    return stub;
  }

  /** A FHIR base URL on this stub for a host name (resolved to the stub by the test's DNS). */
  baseUrl(host: string, path = '/r4'): string {
    return `https://${host}:${this.port}${path}`;
  }

  statsOf(host: string): HostStats {
    let stats = this.stats.get(host);
    if (!stats) {
      stats = {
        inFlight: 0,
        peakInFlight: 0,
        connections: 0,
        peakConnections: 0,
        requests: 0,
        answered: 0,
        starts: [],
      };
      this.stats.set(host, stats);
    }
    return stats;
  }

  hosts(): string[] {
    return [...this.stats.keys()];
  }

  /** The most requests to a host that arrived within any window of `windowMs`. */
  peakRate(host: string, windowMs = 1000): number {
    const starts = this.statsOf(host).starts;
    let peak = 0;
    for (let first = 0, last = 0; last < starts.length; last++) {
      while (starts[last]! - starts[first]! >= windowMs) first++;
      peak = Math.max(peak, last - first + 1);
    }
    return peak;
  }

  reset(): void {
    this.requests.length = 0;
    this.stats.clear();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private connected(socket: TLSSocket): void {
    const stats = this.statsOf(typeof socket.servername === 'string' ? socket.servername : this.address);
    stats.connections++;
    stats.peakConnections = Math.max(stats.peakConnections, stats.connections);
    socket.once('close', () => stats.connections--);
  }

  private answer(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    const request: StubRequest = { host, path: req.url ?? '/', headers: req.headers };
    if (this.record) this.requests.push(request);
    const stats = this.statsOf(host);
    stats.requests++;
    stats.starts.push(this.now());
    stats.inFlight++;
    stats.peakInFlight = Math.max(stats.peakInFlight, stats.inFlight);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      stats.inFlight--;
    };
    res.once('close', finish);
    const answer = this.behaviour(request) ?? wellBehaved(request);
    const send = () => {
      if (res.destroyed) return finish();
      stats.answered++;
      res.writeHead(answer.status, answer.headers);
      if (answer.dripMs) {
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(' ')), answer.dripMs);
        drip.unref();
        return;
      }
      res.end(answer.body);
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
    else send();
  }
}
