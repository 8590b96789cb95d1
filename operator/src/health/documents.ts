// What an endpoint check reads from the two documents it fetches, and nothing more. A CapabilityStatement can
// run to megabytes, so only its first bytes are fetched and scanned for two top-level members (`resourceType`
// and `fhirVersion`, which serializers write before the large `rest` part); a SMART configuration is small and
// parsed whole. Both readers are single linear passes over untrusted text.

/** The resource types a FHIR server's `GET /metadata` answers with (DSTU2 named it Conformance). */
const CAPABILITY_TYPES = new Set(['CapabilityStatement', 'Conformance']);
/** 4.0.1, 3.0.2, 1.0.2, 5.0.0, 4.3.0-snapshot1 …: anything else is not reported as a version. */
const FHIR_VERSION = /^[0-9]{1,2}\.[0-9]{1,2}(\.[0-9]{1,3})?(-[A-Za-z0-9.]{1,20})?$/;

export interface CapabilityReading {
  /** The body is (the start of) a JSON object whose resourceType is CapabilityStatement or Conformance. */
  capabilityStatement: boolean;
  fhirVersion: string | null;
}

/** Reads a `/metadata` body, possibly cut short at the byte limit. */
export function readCapabilityStatement(bytes: Buffer): CapabilityReading {
  const members = topLevelStrings(bytes.toString('utf8'), ['resourceType', 'fhirVersion']);
  const capabilityStatement = members !== undefined && CAPABILITY_TYPES.has(members.get('resourceType') ?? '');
  const version = members?.get('fhirVersion');
  return {
    capabilityStatement,
    fhirVersion: capabilityStatement && version !== undefined && FHIR_VERSION.test(version) ? version : null,
  };
}

/**
 * Whether a `/.well-known/smart-configuration` body is a SMART configuration: a JSON object naming at least
 * the endpoint a client needs to get a token (token_endpoint, or authorization_endpoint for older servers).
 * An HTML login page, `[]`, or `{"error": …}` served with 200 is not.
 */
export function isSmartConfiguration(bytes: Buffer): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return false;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return false;
  const document = parsed as Record<string, unknown>;
  return typeof document.token_endpoint === 'string' || typeof document.authorization_endpoint === 'string';
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r', '\uFEFF']);

/**
 * The string values of the named top-level members of a JSON object, read from its text or a prefix of it; it
 * stops once every name is found or the text ends. Undefined when the text does not start as an object.
 * Values of other members are skipped without being parsed (strings, nesting and escapes tracked), so the
 * cost is one pass over what was read.
 */
export function topLevelStrings(text: string, names: readonly string[]): Map<string, string> | undefined {
  const wanted = new Set(names);
  const found = new Map<string, string>();
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && WHITESPACE.has(text[i]!)) i++;
  };
  /** The end (exclusive) of the string starting at i (a quote); -1 when the text ends inside it. */
  const stringEnd = (start: number) => {
    for (let j = start + 1; j < text.length; j++) {
      if (text[j] === '\\') j++;
      else if (text[j] === '"') return j + 1;
    }
    return -1;
  };
  const readString = (): string | undefined => {
    const end = stringEnd(i);
    if (end < 0) return undefined;
    try {
      const value = JSON.parse(text.slice(i, end)) as string;
      i = end;
      return value;
    } catch {
      return undefined;
    }
  };
  /** Skips one value that is not a string; false when the text ends (or breaks) first. */
  const skipValue = (): boolean => {
    let depth = 0;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') {
        const end = stringEnd(i);
        if (end < 0) return false;
        i = end;
        continue;
      }
      if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        if (depth === 0) return true; // the end of the enclosing object: the value was a bare literal
        depth--;
        if (depth === 0) {
          i++;
          return true;
        }
      } else if (c === ',' && depth === 0) return true;
      i++;
    }
    return false;
  };

  skipSpace();
  if (text[i] !== '{') return undefined;
  i++;
  while (found.size < wanted.size) {
    skipSpace();
    if (text[i] !== '"') break; // the end of the object, of the text, or something that is not JSON
    const name = readString();
    if (name === undefined) break;
    skipSpace();
    if (text[i] !== ':') break;
    i++;
    skipSpace();
    if (text[i] === '"') {
      const value = readString();
      if (value === undefined) break;
      if (wanted.has(name) && !found.has(name)) found.set(name, value);
    } else if (!skipValue()) break;
    skipSpace();
    if (text[i] !== ',') break;
    i++;
  }
  return found;
}
