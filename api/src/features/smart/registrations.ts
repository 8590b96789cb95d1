// Portico's client registrations at health systems (PORTICO_SMART_CLIENTS; docs/connecting.md, "Client
// registrations"): a JSON file read and checked once at start-up, so a bad file stops the process with the entry
// and field at fault rather than failing a patient's sign-in later. The first entry whose every given `match`
// field matches a brand is its registration; a brand none matches is not connectable.
//
// Which hosts a registration may talk to (docs/connecting.md, "Mix-up defence"): a registration matched by platform
// type alone (or by nothing) stands for every brand of a vendor, including a brand whose endpoints an attacker
// controls (a stale domain in a public list), so it must pin `endpointHosts`, and a brand whose discovered endpoints
// are elsewhere is not connectable. A confidential client's secret or key is only ever sent to a pinned host, or,
// for a registration matched by the exact FHIR host or brand, to that brand's own FHIR host.
import { webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { PLATFORM_TYPES, type CatalogBrand } from '#core/catalog/model.js';
import { checkDocument, describeProblems } from '#core/schema.js';

/** A host name (letters, digits, hyphens, dots), or `*.` and one: compared case-insensitively. */
const HOST_PATTERN = '^(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$';

const Jwk = Type.Object(
  {
    kty: Type.Union([Type.Literal('EC'), Type.Literal('RSA')]),
    alg: Type.Union([Type.Literal('ES384'), Type.Literal('RS384')]),
    kid: Type.String({ minLength: 1, maxLength: 200 }),
    d: Type.String({ minLength: 1 }),
  },
  { additionalProperties: true, description: 'A private JWK (ES384 on P-384, or RS384).' },
);

const Registration = Type.Object(
  {
    match: Type.Object(
      {
        platformType: Type.Optional(Type.Union(PLATFORM_TYPES.map((p) => Type.Literal(p)))),
        fhirHost: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
        brandId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      },
      { additionalProperties: false },
    ),
    clientId: Type.String({ minLength: 1, maxLength: 512 }),
    clientSecret: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    privateKeyJwk: Type.Optional(Jwk),
    scopes: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    searches: Type.Optional(
      Type.Record(
        Type.String({ pattern: '^[A-Z][A-Za-z]{1,63}$' }),
        Type.Array(Type.String({ minLength: 1, maxLength: 512, pattern: '^[^?#]+$' }), { minItems: 1, maxItems: 10 }),
        {
          description:
            'Per record type, the searches a sync runs in place of the plain one (each a query, e.g. `category=laboratory`), for servers that need one.',
        },
      ),
    ),
    endpointHosts: Type.Optional(
      Type.Array(Type.String({ pattern: HOST_PATTERN }), {
        minItems: 1,
        maxItems: 1000,
        description: 'Host names, or `*.suffix` for any host under suffix, where the endpoints must be.',
      }),
    ),
  },
  { additionalProperties: false },
);
export const RegistrationsFile = Type.Array(Registration, { maxItems: 10_000 });
type RegistrationEntry = Static<typeof Registration>;

/** How Portico authenticates at a token endpoint. */
export type ClientAuthentication =
  | { method: 'none' }
  | { method: 'client_secret_basic'; secret: string }
  | { method: 'private_key_jwt'; key: webcrypto.CryptoKey; kid: string };

export interface SmartRegistration {
  match: RegistrationEntry['match'];
  clientId: string;
  auth: ClientAuthentication;
  /** The scopes to ask for instead of the defaults (space-separated). */
  scopes?: string;
  /** Per record type, the searches a sync runs in place of the plain one (queries such as `category=laboratory`). */
  searches?: Record<string, string[]>;
  /** Lower-case host names or `*.suffix` patterns the endpoints must be on; absent: see `pinnedEndpointProblem`. */
  endpointHosts?: readonly string[];
}

/** The discovered endpoints of a brand's authorization server, as far as pinning is concerned. */
export interface DiscoveredEndpoints {
  fhirBaseUrl: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  revocationEndpoint: string | undefined;
}

/** A registration matched by the exact FHIR host or brand vouches for that brand alone. */
export const matchesExactly = (registration: Pick<SmartRegistration, 'match'>): boolean =>
  registration.match.fhirHost !== undefined || registration.match.brandId !== undefined;

/** Whether `host` is one of `patterns` (a name, or `*.suffix` for any host under the suffix). */
export function onHosts(host: string, patterns: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((pattern) =>
    pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1 : name === pattern,
  );
}

/**
 * Why the registration may not be used with these endpoints, or undefined when it may: with `endpointHosts`, every
 * endpoint must be on them; without (only a registration matched exactly), a confidential client's token and
 * revocation endpoints must be on the brand's own FHIR host, so its secret never goes anywhere else.
 */
export function pinnedEndpointProblem(
  registration: SmartRegistration,
  server: DiscoveredEndpoints,
): string | undefined {
  const named = [
    ['authorization_endpoint', server.authorizationEndpoint],
    ['token_endpoint', server.tokenEndpoint],
    ['revocation_endpoint', server.revocationEndpoint],
  ] as const;
  if (registration.endpointHosts) {
    for (const [name, url] of named)
      if (url !== undefined && !onHosts(new URL(url).hostname, registration.endpointHosts))
        return `its ${name} (${new URL(url).host}) is not on the registration's endpointHosts`;
    return undefined;
  }
  if (registration.auth.method === 'none') return undefined;
  const fhirHost = new URL(server.fhirBaseUrl).hostname.toLowerCase();
  for (const [name, url] of named.slice(1))
    if (url !== undefined && new URL(url).hostname.toLowerCase() !== fhirHost)
      return `its ${name} (${new URL(url).host}) is not the FHIR server's host, and the registration lists no endpointHosts to send its credentials to`;
  return undefined;
}

export class Registrations {
  constructor(private readonly entries: readonly SmartRegistration[]) {}

  static none(): Registrations {
    return new Registrations([]);
  }

  /** These, then `entry` (which matches only what none of these does). */
  followedBy(entry: SmartRegistration): Registrations {
    return new Registrations([...this.entries, entry]);
  }

  isEmpty(): boolean {
    return this.entries.length === 0;
  }

  /** The brand's registration: the first entry whose every given field matches; undefined when none. */
  for(brand: Pick<CatalogBrand, 'id' | 'platformType' | 'fhirBaseUrl'>): SmartRegistration | undefined {
    const host = new URL(brand.fhirBaseUrl).hostname;
    return this.entries.find(
      ({ match }) =>
        (match.platformType === undefined || match.platformType === brand.platformType) &&
        (match.fhirHost === undefined || match.fhirHost.toLowerCase() === host) &&
        (match.brandId === undefined || match.brandId === brand.id),
    );
  }
}

/** Reads and checks the file; throws an Error naming the file, the entry and the problem. */
export async function loadRegistrations(file: string): Promise<Registrations> {
  const fail = (detail: string) => new Error(`PORTICO_SMART_CLIENTS (${file}): ${detail}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw fail((error as Error).message);
  }
  const checked = checkDocument(RegistrationsFile, parsed);
  if (!checked.ok) throw fail(describeProblems(checked));
  const entries: SmartRegistration[] = [];
  for (const [index, entry] of checked.value.entries()) {
    if (entry.clientSecret !== undefined && entry.privateKeyJwk !== undefined)
      throw fail(`entry ${index} gives both clientSecret and privateKeyJwk; one client authenticates one way`);
    if (!matchesExactly(entry) && entry.endpointHosts === undefined)
      throw fail(
        `entry ${index} matches ${entry.match.platformType ? `every ${entry.match.platformType} brand` : 'every brand'}, so it must list endpointHosts: the hosts its brands' authorization, token and revocation endpoints may be on`,
      );
    entries.push({
      match: entry.match,
      clientId: entry.clientId,
      ...(entry.endpointHosts !== undefined && { endpointHosts: entry.endpointHosts.map((h) => h.toLowerCase()) }),
      auth: await authenticationOf(entry).catch((error: Error) => {
        throw fail(`entry ${index}: privateKeyJwk is not a usable ${entry.privateKeyJwk?.alg} key (${error.message})`);
      }),
      ...(entry.scopes !== undefined && { scopes: entry.scopes }),
      ...(entry.searches !== undefined && { searches: entry.searches }),
    });
  }
  return new Registrations(entries);
}

async function authenticationOf(entry: RegistrationEntry): Promise<ClientAuthentication> {
  if (entry.clientSecret !== undefined) return { method: 'client_secret_basic', secret: entry.clientSecret };
  const jwk = entry.privateKeyJwk;
  if (jwk === undefined) return { method: 'none' };
  const algorithm =
    jwk.alg === 'ES384' ? { name: 'ECDSA', namedCurve: 'P-384' } : { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-384' };
  const key = await webcrypto.subtle.importKey('jwk', jwk as webcrypto.JsonWebKey, algorithm, false, ['sign']);
  return { method: 'private_key_jwt', key, kid: jwk.kid };
}
