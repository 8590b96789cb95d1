// Normalisation shared by every source format: the FHIR system identity (CONTRACT §9), names, and the
// platform type a well-known FHIR host or path gives away. US states are core's (core/src/catalog/states.ts).
import type { PlatformType } from '../../../core/src/catalog/model.js';

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
// Without a scheme we only guess https when the text starts with something that looks like a DNS name:
// vendor lists contain relative fragments such as `api/nce/R4`, which must not become `https://api/nce/R4`.
const SCHEMELESS_HOST = /^[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+(?::\d+)?(?:[/?#]|$)/;

/**
 * The identity of a FHIR system: https, lower-case host, no default port, no trailing slash, no fragment;
 * the path keeps its case (FHIR servers route case-sensitively) and the query is kept. Null when unusable.
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
  const port = url.port === '' || url.port === '443' ? '' : `:${url.port}`;
  const path = withoutTrailingSlashes(url.pathname);
  return `https://${url.hostname}${port}${path}${url.search}`;
}

/** Trims, collapses runs of whitespace (including no-break spaces) and composes Unicode, so equal names compare equal. */
export function cleanName(raw: string): string {
  if (typeof raw !== 'string') return '';
  return raw.normalize('NFC').replace(/\s+/g, ' ').trim();
}

/** The key under which two names count as the same name (case- and whitespace-insensitive). */
export function nameKey(name: string): string {
  return cleanName(name).toLowerCase();
}

// Host suffixes each vendor serves patient FHIR APIs from, as seen in the Lantern (ONC CHPL) lists and the
// vendors' own bundles. Only hosts that appear in exactly one vendor's lists are here: Allscripts'
// fhir.fhirpoint.open.allscripts.com appears in both Veradigm's and Altera's lists, so it infers nothing.
const HOST_SUFFIXES: readonly [string, PlatformType][] = [
  ['fhir-myrecord.cerner.com', 'CERNER'],
  ['fhir-ehr.cerner.com', 'CERNER'],
  ['fhir-myrecord-sc.cerner.com', 'CERNER'],
  ['fhir-ehr-sc.cerner.com', 'CERNER'],
  ['epichosted.com', 'EPIC'],
  ['athenahealth.com', 'ATHENAHEALTH'],
  ['api.practicefusion.com', 'PRACTICE_FUSION'],
  ['api.patientfusion.com', 'PRACTICE_FUSION'],
  ['eclinicalworks.com', 'ECLINICALWORKS'],
  ['healow.com', 'ECLINICALWORKS'],
  ['greenwayhealth.com', 'GREENWAY'],
  ['fhir.yourcareuniverse.net', 'MEDHOST'],
  ['netsmartcloud.com', 'NETSMART'],
  ['fhir.nextgen.com', 'NEXTGEN'],
  ['ema-api.com', 'MODMED'],
  ['meditech.cloud', 'MEDITECH'],
  ['meditech.global', 'MEDITECH'],
];

// Epic's FHIR path. Other vendors' servers copy it (in the Lantern lists: Office Practicum, TRIARQ's QSuite,
// CareCloud, Qualifacts), and Epic customers also serve it from the host's root, so no path rule separates
// them: those vendors' hosts are excluded instead of being guessed as Epic.
const EPIC_PATH = /\/api\/FHIR\/(?:R4|STU3|DSTU2)$/i;
const NOT_EPIC_HOSTS = ['op.healthcare', 'myqone.com', 'carecloud.com', 'qualifacts.org'];
// MEDITECH Expanse's API paths; hospitals host it on their own domains, so the path is the only tell.
const MEDITECH_PATH = /^\/(?:v1\/uscore\/R4|v2\/argonaut\/v1)$/;

/**
 * The path without trailing slashes, read from the right. (`replace(/\/+$/, '')` retried from every slash
 * of a long run that something else follows: a path of 100 000 slashes took 13 s.)
 */
export function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  return path.slice(0, end);
}

const hostIs = (host: string, suffix: string): boolean => host === suffix || host.endsWith(`.${suffix}`);

/** The platform a normalised FHIR base URL belongs to when its host or path gives it away; else undefined. */
export function inferPlatformType(fhirBaseUrl: string): PlatformType | undefined {
  let url: URL;
  try {
    url = new URL(fhirBaseUrl);
  } catch {
    return undefined;
  }
  const host = url.hostname;
  for (const [suffix, platform] of HOST_SUFFIXES) if (hostIs(host, suffix)) return platform;
  const path = withoutTrailingSlashes(url.pathname);
  if (EPIC_PATH.test(path) && !NOT_EPIC_HOSTS.some((h) => hostIs(host, h))) return 'EPIC';
  if (MEDITECH_PATH.test(path)) return 'MEDITECH';
  return undefined;
}
