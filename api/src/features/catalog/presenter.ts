import type { CatalogBrand, EndpointHealth } from '#core/catalog/model.js';
import { JsonMemo } from '../../shared/http/json-memo.js';
import { chooseLabels } from './disambiguation.js';
import type { SearchAnswer } from './service.js';

export const logoPath = (brandId: string) => `/api/sdk/v1/catalog/brands/${brandId}/logo`;

/** A brand as clients see it (/openapi.json, `Brand`, with aliases). `origin` makes logoUrl absolute. */
export function presentBrand(brand: CatalogBrand, origin: string) {
  return {
    id: brand.id,
    name: brand.name,
    aliases: brand.aliases,
    platformType: brand.platformType,
    fhirBaseUrl: brand.fhirBaseUrl,
    city: brand.city,
    state: brand.state,
    portalUrl: brand.portalUrl,
    logoUrl: brand.logo ? origin + logoPath(brand.id) : null,
  };
}

/** A response body, with its length in UTF-8 bytes (the Content-Length), counted from its pieces as it is built. */
export interface Body {
  text: string;
  bytes: number;
}

/** How many more bytes than UTF-16 code units `text` takes in UTF-8: 0 for ASCII. */
const extraBytes = (text: string) => Buffer.byteLength(text) - text.length;

/** A brand's memoised JSON without its closing brace, and its extra bytes (extraBytes). */
interface OpenJson {
  open: string;
  extra: number;
}

// Brands are immutable within a snapshot, so responses are assembled from each one's memoised JSON (per
// origin: PUBLIC_BASE_URL, or one taken from the request), left open for what is appended after its own members:
// what changes without a new snapshot (the endpoint's health) or depends on the request (fuzzy, distance,
// disambiguation). Each piece's byte count is known once too, so a response's Content-Length is a sum rather
// than another pass over the text.
const brandJson = new JsonMemo<CatalogBrand, string, OpenJson>((brand, origin) => {
  const json = JSON.stringify(presentBrand(brand, origin));
  return { open: json.slice(0, -1), extra: extraBytes(json) };
});

/** A brand's endpoint outcome as members to append to its JSON (starting with a comma). */
interface EndpointJson {
  members: string;
  extra: number;
}

// Outcomes are replaced, never changed, when the operator publishes (endpoint-health.ts): each one's JSON is built once.
const endpointJsons = new WeakMap<EndpointHealth, EndpointJson>();

function endpointJson(health: EndpointHealth): EndpointJson {
  let json = endpointJsons.get(health);
  if (json === undefined) {
    const members = `,"endpoint":{"status":"${health.status}","fhirVersion":${JSON.stringify(health.fhirVersion)},"smartConfiguration":${health.smartConfiguration},"checkedAt":${JSON.stringify(health.checkedAt)}}`;
    endpointJsons.set(health, (json = { members, extra: extraBytes(members) }));
  }
  return json;
}

export function searchJson(answer: SearchAnswer, origin: string): Body {
  const { brands, exact, distanceKm } = answer;
  const labels: (string | undefined)[] = new Array<string | undefined>(brands.length);
  let extra = 0;
  chooseLabels(brands, answer.nameKeys, (i, candidates, k) => {
    labels[i] = candidates.json[k];
    extra += candidates.extraBytes[k]!;
  });
  let text = '{"brands":[';
  for (let i = 0; i < brands.length; i++) {
    const brand = brands[i]!;
    const own = brandJson.value(brand, origin);
    const endpoint = endpointJson(answer.endpointOf(brand));
    extra += own.extra + endpoint.extra;
    if (i > 0) text += ',';
    text += own.open;
    text += endpoint.members;
    text += i < exact ? ',"fuzzy":false' : ',"fuzzy":true';
    if (distanceKm) text += `,"distanceKm":${distanceKm[i] ?? null}`;
    const label = labels[i];
    if (label !== undefined) text += `,"disambiguation":${label}`;
    text += '}';
  }
  text += `],"count":${brands.length}`;
  if (answer.nextCursor !== undefined) {
    const next = JSON.stringify(answer.nextCursor);
    text += `,"nextCursor":${next}`;
    extra += extraBytes(next);
  }
  text += '}';
  return { text, bytes: text.length + extra };
}

export function lookupJson(found: { brand: CatalogBrand; endpoint: EndpointHealth }, origin: string): Body {
  const own = brandJson.value(found.brand, origin);
  const endpoint = endpointJson(found.endpoint);
  const text = `{"brand":${own.open}${endpoint.members}}}`;
  return { text, bytes: text.length + own.extra + endpoint.extra };
}
