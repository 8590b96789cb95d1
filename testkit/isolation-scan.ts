// What the tenant-isolation matrix compares and searches in a response: its bytes without the per-request
// fields (for "byte-identical denials"), and the tokens in it that belong to a tenant (for "no field of
// another tenant"). Every value a tenant is known by is one of four shapes — a UUID, a key (sk_/pk_/ak_), a
// signing secret (whsec_) or a marker (leakmark-<tenant>-…, which every name, e-mail, URL, app user id and
// FHIR id of the test data carries) — so a response is searched by extracting those shapes, also from inside
// the base64url payload of any cursor it holds.

export interface Exchange {
  method: string;
  path: string;
  requestHeaders: Record<string, string>;
  requestBody: string | undefined;
  status: number;
  headers: [string, string][];
  body: string;
}

const SHAPES = [
  /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi,
  /\b(?:sk|pk|ak)_[0-9A-Za-z]{32,128}/g,
  /whsec_[A-Za-z0-9+/=]{40,}/g,
  /leakmark-[abc]-[a-z0-9]+-[0-9a-f]{8}/gi,
];
const CURSOR = /([A-Za-z0-9_-]{12,})\.([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/g;

/** The tenant-shaped tokens of a text (lower-cased UUIDs and markers), cursors' payloads included. */
export function tokensOf(text: string): Set<string> {
  const found = new Set<string>();
  const scan = (t: string) => {
    for (const shape of SHAPES) for (const match of t.matchAll(shape)) found.add(normaliseToken(match[0]));
  };
  scan(text);
  for (const cursor of text.matchAll(CURSOR)) scan(Buffer.from(cursor[1]!, 'base64url').toString('utf8'));
  // Percent-encoded forms (a cursor or an id inside a query string of a link).
  if (text.includes('%')) {
    try {
      const decoded = decodeURIComponent(text.replace(/%(?![0-9a-f]{2})/gi, '%25'));
      if (decoded !== text) for (const t of tokensOf(decoded)) found.add(t);
    } catch {
      // not decodable as a whole: the raw scan stands
    }
  }
  return found;
}

function normaliseToken(token: string): string {
  return /^[0-9a-f-]{36}$/i.test(token) || /^leakmark-/i.test(token) ? token.toLowerCase() : token;
}

/** The tokens by which a value (an id, a name, a URL, a secret) is recognised; throws when it has none. */
export function tokensOfValue(value: string): string[] {
  const tokens = [...tokensOf(value)];
  if (tokens.length === 0) throw new Error(`test data ${JSON.stringify(value)} carries no recognisable token`);
  return tokens;
}

/** The tenant a marker token names ("a" → "A"). */
export const markerTenant = (token: string): string | undefined =>
  /^leakmark-([abc])-/i.exec(token)?.[1]?.toUpperCase();

export function requestText(x: Exchange): string {
  return [x.method, x.path, ...Object.values(x.requestHeaders), x.requestBody ?? ''].join('\n');
}

export function responseText(x: Exchange): string {
  return [...x.headers.map(([name, value]) => `${name}: ${value}`), x.body].join('\n');
}

/**
 * The tokens of tenants other than `allowed` in the response that the request did not itself carry (an
 * echo of what the caller sent, such as a problem's `instance`, reveals nothing).
 */
export function leaksOf(
  x: Exchange,
  allowed: string | undefined,
  known: Record<string, Set<string>>,
  alsoSent: Set<string> = new Set(),
): string[] {
  const sent = tokensOf(requestText(x));
  for (const token of alsoSent) sent.add(token);
  const leaks: string[] = [];
  for (const token of tokensOf(responseText(x))) {
    if (sent.has(token)) continue;
    const owners = Object.keys(known).filter((tenant) => known[tenant]!.has(token));
    const byMarker = markerTenant(token);
    if (byMarker !== undefined && !owners.includes(byMarker)) owners.push(byMarker);
    if (owners.some((tenant) => tenant !== allowed)) leaks.push(`${token} (tenant ${owners.join(',')})`);
  }
  return leaks;
}

const VOLATILE = new Set(['date', 'x-request-id', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

/** The response as bytes, without the per-request parts: X-Request-Id, Date, lengths, a problem's `instance`. */
export function normalised(x: Exchange): string {
  const headers = x.headers
    .filter(([name]) => !VOLATILE.has(name.toLowerCase()))
    .map(([name, value]) => `${name.toLowerCase()}: ${value}`)
    .sort();
  const body = x.body.replace(/"instance":"(?:[^"\\]|\\.)*"/, '"instance":"…"');
  return `${x.status}\n${headers.join('\n')}\n\n${body}`;
}
