// Discovery of a brand's authorization server (docs/connecting.md, "The launch"): its FHIR base URL's
// `.well-known/smart-configuration`, read through the outbound policy within 10 s and kept for at most an hour
// per replica (only what was usable is kept, so a server that was down is asked again next time). A document
// that is not JSON, lacks an endpoint or does not offer PKCE with S256 makes the brand unavailable.
import { LRUCache } from 'lru-cache';
import type { Clock } from '#core/clock.js';
import type { PolicyFetch } from '#core/net/policy-fetch.js';

export const DISCOVERY_TIMEOUT_MS = 10_000;
export const DISCOVERY_TTL_MS = 3_600_000;

export interface SmartServer {
  fhirBaseUrl: string;
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  revocationEndpoint: string | undefined;
  /** Lists `permission-v2`: asks for SMART v2 scopes. */
  v2: boolean;
  /** `scopes_supported`, as listed ([] when absent). */
  scopesSupported: string[];
  /**
   * `authorization_response_iss_parameter_supported` (RFC 9207): its answers to the browser carry `iss`, which the
   * callback then requires to be `issuer` (docs/connecting.md, "Mix-up defence").
   */
  issParameter: boolean;
  /** The document names `issuer` (else `issuer` is the token endpoint's origin, for the OAuth library alone). */
  issuerDeclared: boolean;
}

/** Why a brand's server cannot be used now, in words for logs and the session's record. */
export class DiscoveryError extends Error {
  override name = 'DiscoveryError';
}

export class SmartDiscovery {
  private readonly cache = new LRUCache<string, { server: SmartServer; until: number }>({ max: 10_000 });

  constructor(
    private readonly fetch: PolicyFetch,
    private readonly clock: Clock,
    /** PORTICO_SMART_ALLOW_INSECURE: the authorization endpoint may be http too. */
    private readonly allowInsecure = false,
    private readonly timeoutMs = DISCOVERY_TIMEOUT_MS,
  ) {}

  /** `timeoutMs`: a shorter deadline than discovery's own, for a caller that can go on without the answer. */
  async discover(fhirBaseUrl: string, timeoutMs = this.timeoutMs): Promise<SmartServer> {
    const now = this.clock.now().getTime();
    const cached = this.cache.get(fhirBaseUrl);
    if (cached && cached.until > now) return cached.server;
    const server = await this.read(fhirBaseUrl, Math.min(timeoutMs, this.timeoutMs));
    this.cache.set(fhirBaseUrl, { server, until: now + DISCOVERY_TTL_MS });
    return server;
  }

  private async read(fhirBaseUrl: string, timeoutMs: number): Promise<SmartServer> {
    const url = underBase(fhirBaseUrl, '.well-known/smart-configuration');
    let response: Response;
    try {
      response = await this.fetch(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new DiscoveryError(`${url}: ${(error as Error).message}`);
    }
    if (response.status < 200 || response.status > 299) throw new DiscoveryError(`${url} answered ${response.status}`);
    let document: Record<string, unknown>;
    try {
      document = (await response.json()) as Record<string, unknown>;
    } catch {
      throw new DiscoveryError(`${url} is not JSON`);
    }
    if (typeof document !== 'object' || document === null) throw new DiscoveryError(`${url} is not a JSON object`);
    const endpoint = (name: string, required: boolean): string | undefined => {
      const value = document[name];
      if (value === undefined && !required) return undefined;
      if (typeof value !== 'string' || !URL.canParse(value)) throw new DiscoveryError(`${url} has no usable ${name}`);
      return value;
    };
    const methods = document['code_challenge_methods_supported'];
    if (!Array.isArray(methods) || !methods.includes('S256'))
      throw new DiscoveryError(`${url} does not list S256 in code_challenge_methods_supported`);
    const capabilities = Array.isArray(document['capabilities']) ? document['capabilities'] : [];
    const tokenEndpoint = endpoint('token_endpoint', true)!;
    // The patient's browser is sent there: https only (the other endpoints meet the outbound policy when called).
    const authorizationEndpoint = endpoint('authorization_endpoint', true)!;
    if (new URL(authorizationEndpoint).protocol !== 'https:' && !this.allowInsecure)
      throw new DiscoveryError(`${url}: the authorization_endpoint is not https`);
    const issParameter = document['authorization_response_iss_parameter_supported'] === true;
    const issuer = document['issuer'];
    // RFC 9207 compares `iss` with the issuer the metadata names: a server that promises the one names the other.
    if (issParameter && (typeof issuer !== 'string' || issuer === ''))
      throw new DiscoveryError(`${url} supports the iss parameter but names no issuer`);
    return {
      fhirBaseUrl,
      issuer: typeof issuer === 'string' && issuer !== '' ? issuer : new URL(tokenEndpoint).origin,
      issParameter,
      issuerDeclared: typeof issuer === 'string' && issuer !== '',
      authorizationEndpoint,
      tokenEndpoint,
      revocationEndpoint: endpoint('revocation_endpoint', false),
      v2: capabilities.includes('permission-v2'),
      scopesSupported: Array.isArray(document['scopes_supported'])
        ? (document['scopes_supported'] as unknown[]).filter((s): s is string => typeof s === 'string').slice(0, 1000)
        : [],
    };
  }
}

/** `path` under a FHIR base URL: appended to its path, its query (rare, but kept in the identity) left alone. */
export function underBase(fhirBaseUrl: string, path: string): string {
  const url = new URL(fhirBaseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${path}`;
  return url.href;
}
