// The identity of a FHIR system (docs/operator.md): the operator deduplicates brands by it, and the API reads a
// FHIR base URL typed into a catalog search the same way, so the two always agree on what "the same URL" is.

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
// Without a scheme we only guess https when the text starts with something that looks like a DNS name:
// vendor lists contain relative fragments such as `api/nce/R4`, which must not become `https://api/nce/R4`.
/** Hosts that name this machine: 127.0.0.0/8, localhost and [::1]. */
const LOOPBACK = /^(?:127(?:\.\d{1,3}){3}|localhost|\[::1\])$/;
const SCHEMELESS_HOST = /^[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+(?::\d+)?(?:[/?#]|$)/;

/**
 * The identity of a FHIR system: https, lower-case host, no default port, no trailing slash, no fragment;
 * the path keeps its case (FHIR servers route case-sensitively) and the query is kept. Null when unusable.
 * A plain-http URL on a loopback host with an explicit port keeps its scheme: it names a development server on
 * this machine (the sandbox EHR), which no upgrade to https would reach, and which the outbound policy refuses in
 * production. (Published lists hold the odd `http://localhost/…` placeholder; without a port it is read as before.)
 */
export function normaliseFhirBaseUrl(raw: string): string | null {
  if (typeof raw !== 'string') return null;
  let text = raw.trim();
  // RFC 3986 has no whitespace in URLs. WHATWG parsing would silently drop a tab inside one, turning
  // `https://127.0.0.1\thost.example.com/…` into a host that does not exist; a wrong guess is worse than none.
  if (text === '' || /\s/.test(text)) return null;
  const scheme = SCHEME.exec(text);
  // `fhir.example.org:8443/r4` matches the scheme pattern too; a port number after the colon means host:port.
  const hasScheme = scheme !== null && !/^\d+(?:[/?#]|$)/.test(text.slice(scheme[0].length));
  if (hasScheme) {
    const name = scheme[1]!.toLowerCase();
    if (name !== 'http' && name !== 'https') return null;
    // WHATWG parsing forgives `https:///r4` and `https:host` by guessing a host; RFC 3986 needs `//authority`.
    if (!/^[a-z]+:\/\/[^/\\?#]/i.test(text)) return null;
  } else {
    if (text.startsWith('//')) text = text.slice(2);
    if (!SCHEMELESS_HOST.test(text)) return null;
    text = `https://${text}`;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  // Credentials in a published URL are either a leak or a trick; neither identifies a FHIR system.
  if (url.hostname === '' || url.username !== '' || url.password !== '') return null;
  // URL already drops the scheme's own default port (http://x:80); :443 is also the default once upgraded.
  const path = withoutTrailingSlashes(url.pathname);
  if (url.protocol === 'http:' && hasScheme && url.port !== '' && LOOPBACK.test(url.hostname))
    return `http://${url.hostname}:${url.port}${path}${url.search}`;
  const port = url.port === '' || url.port === '443' ? '' : `:${url.port}`;
  return `https://${url.hostname}${port}${path}${url.search}`;
}

/**
 * The path without trailing slashes, read from the right. (`replace(/\/+$/, '')` retried from every slash
 * of a long run that something else follows: a path of 100 000 slashes took 13 s.)
 */
export function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  return path.slice(0, end);
}
