// Telling look-alikes apart: where brands in one response share a name, each gets a short label a
// picker can show after the name ("ExampleHealth — Madison, WI", "ExampleHealth — ehpmadison.example.com").
//
// Each brand takes the first of these that no other brand of the same name in the response has: its place
// (city and state, or whichever it has), its portal's host, its FHIR server's host, and finally its FHIR
// base URL without the scheme, which is unique because brands are distinct FHIR systems. Names are the same
// when they fold to the same words (core/src/catalog/fold.ts), as search compares them.
import type { CatalogBrand } from '#core/catalog/model.js';
import { words } from '#core/catalog/fold.js';

function hostOf(url: string | null): string | null {
  if (url === null) return null;
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

function placeOf(brand: CatalogBrand): string | null {
  if (brand.city && brand.state) return `${brand.city}, ${brand.state}`;
  return brand.city ?? brand.state ?? null;
}

const LABELS: readonly ((brand: CatalogBrand) => string | null)[] = [
  placeOf,
  (b) => hostOf(b.portalUrl),
  (b) => hostOf(b.fhirBaseUrl),
];

// Brands never change once loaded: each one's folded name and candidate labels are worked out once, not in every
// response that lists it.
const foldedNames = new WeakMap<CatalogBrand, string>();

function foldedName(brand: CatalogBrand): string {
  let key = foldedNames.get(brand);
  if (key === undefined) foldedNames.set(brand, (key = words(brand.name).join(' ')));
  return key;
}

/**
 * A brand's labels in the order they are tried: LABELS' answers, then its FHIR base URL without the scheme (unique:
 * brands are distinct FHIR systems). Each also as compared (lower case; null for none, and for the last, which is
 * never compared) and as JSON text.
 */
export interface Candidates {
  labels: readonly (string | null)[];
  compared: readonly (string | null)[];
  json: readonly string[];
  /** Per JSON text, how many more bytes than UTF-16 code units it takes in UTF-8. */
  extraBytes: readonly number[];
}

const LAST = LABELS.length;
const candidateLabels = new WeakMap<CatalogBrand, Candidates>();

function candidatesOf(brand: CatalogBrand): Candidates {
  let candidates = candidateLabels.get(brand);
  if (candidates === undefined) {
    const labels = [...LABELS.map((of) => of(brand)), brand.fhirBaseUrl.replace(/^https?:\/\//, '')];
    const json = labels.map((label) => JSON.stringify(label));
    candidates = {
      labels,
      compared: labels.map((label, k) => (k === LAST ? null : (label?.toLowerCase() ?? null))),
      json,
      extraBytes: json.map((text) => Buffer.byteLength(text) - text.length),
    };
    candidateLabels.set(brand, candidates);
  }
  return candidates;
}

/**
 * Calls `labelled` for each brand whose name another brand in the list shares, with its position, its candidates
 * and the one that labels it. `nameKeys`, from the search index: each brand's folded name, or null when no brand of
 * the catalog shares it (without them, the names are folded here).
 */
export function chooseLabels(
  brands: readonly CatalogBrand[],
  nameKeys: readonly (string | null)[] | undefined,
  labelled: (i: number, candidates: Candidates, k: number) => void,
): void {
  const n = brands.length;
  const keys: (string | null)[] = new Array<string | null>(n);
  // first[i]: the first position with brand i's folded name, -1 for a name no other brand of the catalog has; size:
  // how many positions have it, at the first. Plain arrays: a typed array of more than 16 of these is allocated
  // outside the JS heap, at ten times the cost.
  const first: number[] = Array.from({ length: n }, () => -1);
  const size: number[] = Array.from({ length: n }, () => 0);
  let namesakes = false;
  for (let i = 0; i < n; i++) {
    const key = nameKeys === undefined ? foldedName(brands[i]!) : (nameKeys[i] ?? null);
    keys[i] = key;
    if (key === null) continue;
    let j = 0;
    while (j < i && keys[j] !== key) j++;
    first[i] = j < i ? first[j]! : i;
    if (++size[first[i]!]! > 1) namesakes = true;
  }
  if (!namesakes) return; // most responses: no work beyond the names
  // Unique against every label of the namesakes, not only the same kind: Epic serves a portal and another
  // system's FHIR API from one host, so one brand's portal host can be another's FHIR host. A label is free for
  // a brand when no other namesake has it: when it is among the labels of one brand only (counted once each).
  const holders = new Map<string, number>();
  for (let leader = 0; leader < n; leader++) {
    if (first[leader] !== leader || size[leader]! < 2) continue;
    holders.clear();
    for (let i = leader; i < n; i++) {
      if (first[i] !== leader) continue;
      const compared = candidatesOf(brands[i]!).compared;
      for (let k = 0; k < LAST; k++) {
        const label = compared[k];
        if (label === null || label === undefined || compared.indexOf(label) < k) continue; // counted once a brand
        holders.set(label, (holders.get(label) ?? 0) + 1);
      }
    }
    for (let i = leader; i < n; i++) {
      if (first[i] !== leader) continue;
      const candidates = candidatesOf(brands[i]!);
      let k = 0;
      while (k < LAST && (candidates.compared[k] === null || holders.get(candidates.compared[k]!) !== 1)) k++;
      labelled(i, candidates, k);
    }
  }
}

/**
 * One label per brand (same positions); undefined for a brand whose name no other brand in the list shares.
 * `nameKeys` as for chooseLabels.
 */
export function disambiguations(
  brands: readonly CatalogBrand[],
  nameKeys?: readonly (string | null)[],
): (string | undefined)[] {
  const labels: (string | undefined)[] = new Array<string | undefined>(brands.length).fill(undefined);
  chooseLabels(brands, nameKeys, (i, candidates, k) => (labels[i] = candidates.labels[k]!));
  return labels;
}
