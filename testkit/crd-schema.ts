// Checks on a CRD's openAPIV3Schema that need no API server: the structural-schema rules the server applies
// when a CRD is created, bounds on every string and list, and its CEL rules run over an object (with a
// JavaScript CEL; Kubernetes' own extension functions are not there, standard CEL is).
import { evaluate } from '@marcbachmann/cel-js';

type Schema = { [key: string]: unknown };

const KNOWN = new Set([
  'type',
  'format',
  'title',
  'description',
  'default',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'required',
  'properties',
  'items',
  'additionalProperties',
  'nullable',
  'example',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
]);
const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);

const children = (node: Schema, at: string): [string, Schema][] => [
  ...Object.entries((node.properties as Record<string, Schema> | undefined) ?? {}).map(
    ([name, child]): [string, Schema] => [`${at}.${name}`, child],
  ),
  ...(node.items ? [[`${at}[]`, node.items as Schema] as [string, Schema]] : []),
];

/**
 * Why the schema is not structural (empty when it is). Stricter than the server in one way: logical
 * junctors (anyOf, allOf, oneOf, not) are refused outright rather than checked for the fields they repeat.
 */
export function structuralProblems(node: Schema, at = '$'): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(node))
    if (!KNOWN.has(key)) problems.push(`${at}: "${key}" is not allowed in a CRD schema`);
  const free = node['x-kubernetes-int-or-string'] === true || node['x-kubernetes-preserve-unknown-fields'] === true;
  if (typeof node.type !== 'string' && !free) problems.push(`${at}: no type`);
  if (node.uniqueItems === true) problems.push(`${at}: uniqueItems is forbidden`);
  if (node.additionalProperties !== undefined && (node.additionalProperties === false || node.properties)) {
    problems.push(`${at}: additionalProperties is forbidden with properties or as false`);
  }
  if (node.type === 'array' && !node.items) problems.push(`${at}: an array needs items`);
  const properties = (node.properties as Record<string, Schema> | undefined) ?? {};
  for (const name of (node.required as string[] | undefined) ?? [])
    if (!properties[name]) problems.push(`${at}: required "${name}" is not a property`);
  const items = node.items as Schema | undefined;
  if (node['x-kubernetes-list-type'] === 'set' && !SCALARS.has(String(items?.type)))
    problems.push(`${at}: a set lists scalars`);
  if (node['x-kubernetes-list-type'] === 'map') {
    const itemProperties = (items?.properties as Record<string, Schema> | undefined) ?? {};
    for (const key of (node['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []) {
      const keySchema = itemProperties[key];
      const requiredKey =
        ((items?.required as string[] | undefined) ?? []).includes(key) || keySchema?.default !== undefined;
      if (!keySchema || !SCALARS.has(String(keySchema.type)) || !requiredKey)
        problems.push(`${at}: map key "${key}" must be a required scalar`);
    }
    if (!Array.isArray(node['x-kubernetes-list-map-keys']))
      problems.push(`${at}: a map list needs x-kubernetes-list-map-keys`);
  }
  for (const validation of (node['x-kubernetes-validations'] as Schema[] | undefined) ?? []) {
    if (typeof validation.rule !== 'string' || typeof validation.message !== 'string')
      problems.push(`${at}: a validation needs a rule and a message`);
  }
  if (at === '$.metadata' && Object.keys(node).some((key) => key !== 'type'))
    problems.push(`${at}: metadata may not be constrained here`);
  for (const [childAt, child] of children(node, at)) problems.push(...structuralProblems(child, childAt));
  return problems;
}

/** Strings without maxLength (or enum) and lists without maxItems: they make CEL cost estimates unbounded. */
export function unboundedFields(node: Schema, at = '$'): string[] {
  const found: string[] = [];
  if (node.type === 'string' && node.maxLength === undefined && node.enum === undefined) found.push(at);
  if (node.type === 'array' && node.maxItems === undefined) found.push(at);
  for (const [childAt, child] of children(node, at)) found.push(...unboundedFields(child, childAt));
  return found;
}

/** Every node that sets a default, with the path to it. */
export function defaultsOf(node: Schema, at = '$'): [string, Schema][] {
  const found: [string, Schema][] = node.default !== undefined ? [[at, node]] : [];
  for (const [childAt, child] of children(node, at)) found.push(...defaultsOf(child, childAt));
  return found;
}

/** The messages of the CEL rules the value breaks, as "path: message" (an evaluation error breaks a rule too). */
export function celViolations(node: Schema, value: unknown, at = '$'): string[] {
  if (value === undefined || value === null) return [];
  const found: string[] = [];
  for (const { rule, message } of (node['x-kubernetes-validations'] as
    { rule: string; message: string }[] | undefined) ?? []) {
    let holds: unknown;
    try {
      holds = evaluate(rule, { self: value });
    } catch (error) {
      holds = error;
    }
    if (holds !== true) found.push(`${at}: ${message}`);
  }
  if (Array.isArray(value) && node.items)
    value.forEach((item, i) => found.push(...celViolations(node.items as Schema, item, `${at}[${i}]`)));
  const properties = node.properties as Record<string, Schema> | undefined;
  if (properties && typeof value === 'object' && !Array.isArray(value)) {
    for (const [name, child] of Object.entries(properties))
      found.push(...celViolations(child, (value as Record<string, unknown>)[name], `${at}.${name}`));
  }
  return found;
}
