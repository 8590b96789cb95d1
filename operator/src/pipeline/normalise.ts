// Normalisation shared by every source format: the FHIR system identity (docs/operator.md, in core), names, and the
// platform type a well-known FHIR host or path gives away. US states are core's (core/src/catalog/states.ts).
import { withoutTrailingSlashes } from '#core/catalog/fhir-url.js';
import type { PlatformType } from '#core/catalog/model.js';

// The identity itself is core's: the API reads FHIR base URLs typed into a search the same way.
export { normaliseFhirBaseUrl, withoutTrailingSlashes } from '#core/catalog/fhir-url.js';

/** Trims, collapses runs of whitespace (including no-break spaces) and composes Unicode, so equal names compare equal.
 * */
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
