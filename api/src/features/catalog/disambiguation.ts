// Telling look-alikes apart: where brands in one response share a name, each gets a short label a
// picker can show after the name ("ExampleHealth — Madison, WI", "ExampleHealth — ehpmadison.example.com").
//
// Each brand takes the first of these that no other brand of the same name in the response has: its place
// (city and state, or whichever it has), its portal's host, its FHIR server's host, and finally its FHIR
// base URL without the scheme, which is unique because brands are distinct FHIR systems. Names are the same
// when they fold to the same words (core/src/catalog/fold.ts), as search compares them.
import type { CatalogBrand } from '../../../../core/src/catalog/model.js';
import { words } from '../../../../core/src/catalog/fold.js';

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
const candidateLabels = new WeakMap<CatalogBrand, { label: string | null; compared: string | null }[]>();

function foldedName(brand: CatalogBrand): string {
  let key = foldedNames.get(brand);
  if (key === undefined) foldedNames.set(brand, (key = words(brand.name).join(' ')));
  return key;
}

/** LABELS' answers for the brand, and each as it is compared (lower case). */
function candidatesOf(brand: CatalogBrand) {
  let candidates = candidateLabels.get(brand);
  if (candidates === undefined)
    candidateLabels.set(
      brand,
      (candidates = LABELS.map((of) => {
        const label = of(brand);
        return { label, compared: label?.toLowerCase() ?? null };
      })),
    );
  return candidates;
}

/**
 * One label per brand (same positions); undefined for a brand whose name no other brand in the list shares.
 * `nameKeys`, from the search index: each brand's folded name, or null when no brand of the catalog shares it.
 */
export function disambiguations(
  brands: readonly CatalogBrand[],
  nameKeys?: readonly (string | null)[],
): (string | undefined)[] {
  const labels: (string | undefined)[] = new Array<string | undefined>(brands.length).fill(undefined);
  const byName = new Map<string, number[]>();
  let namesakes = false;
  brands.forEach((brand, i) => {
    const key = nameKeys === undefined ? foldedName(brand) : nameKeys[i];
    if (key === null || key === undefined) return; // a name no other brand of the catalog has
    const group = byName.get(key);
    if (group) {
      group.push(i);
      namesakes = true;
    } else byName.set(key, [i]);
  });
  if (!namesakes) return labels; // most responses: no work beyond the names
  for (const group of byName.values()) {
    if (group.length < 2) continue;
    const candidates = group.map((i) => candidatesOf(brands[i]!));
    // Unique against every label of the namesakes, not only the same kind: Epic serves a portal and another
    // system's FHIR API from one host, so one brand's portal host can be another's FHIR host. A label is free for
    // a brand when no other namesake has it: when it is among the labels of one brand only (counted once each).
    const holders = new Map<string, number>();
    for (const own of candidates)
      for (const compared of new Set(own.map((c) => c.compared)))
        if (compared !== null) holders.set(compared, (holders.get(compared) ?? 0) + 1);
    group.forEach((i, g) => {
      const own = candidates[g]!.find((c) => c.compared !== null && holders.get(c.compared) === 1);
      labels[i] = own?.label ?? brands[i]!.fhirBaseUrl.replace(/^https?:\/\//, '');
    });
  }
  return labels;
}
