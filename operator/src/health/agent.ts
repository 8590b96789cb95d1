// The connections of one catalog's endpoint checks: the public-only agent (every connection, redirect hops
// included, only to public addresses, checked after DNS), keeping connections alive between requests (a
// host serving thousands of brands is asked over a couple of reused connections, not thousands of TLS
// handshakes), at most perHostConcurrency of them per host, idle ones closed after the request deadline.
import type dns from 'node:dns';
import { PublicHttpsAgent } from '#core/net/address-policy.js';
import { DEFAULT_TIMING, type HealthSettings } from './settings.js';

export interface AgentSeams {
  /** DNS (tests resolve their host names to the stub). */
  lookup?: typeof dns.lookup;
  /** Exact addresses admitted besides public ones: tests' loopback stub. Never in production. */
  admitted?: ReadonlySet<string>;
  /** Certificate authorities to trust instead of the system's: tests' stub CA. */
  ca?: string | Buffer;
}

export function healthAgent(settings: HealthSettings, seams: AgentSeams = {}): PublicHttpsAgent {
  return new PublicHttpsAgent(
    {
      keepAlive: true,
      maxSockets: settings.perHostConcurrency,
      maxFreeSockets: settings.perHostConcurrency,
      timeout: DEFAULT_TIMING.requestTimeoutMs,
      scheduling: 'lifo',
      ...(seams.ca !== undefined && { ca: seams.ca }),
    },
    seams.lookup,
    seams.admitted,
  );
}
