// SMART scopes as a patient-facing EHR reads them: v1 (`patient/Observation.read`) and v2
// (`patient/Observation.rs`), and which FHIR interactions a granted scope string allows.
export const OTHER_SCOPES = ['launch/patient', 'offline_access', 'online_access', 'openid', 'fhirUser'];

interface ResourceScope {
  resourceType: string;
  /** v2 permission letters (c r u d s), with v1's read/write/* translated. */
  permissions: string;
  v2: boolean;
}

const RESOURCE_SCOPE = /^patient\/([A-Z][A-Za-z]*|\*)\.([a-z*]+)(\?.*)?$/;
const V2_PERMISSIONS = /^c?r?u?d?s?$/;
const V1_PERMISSIONS: Record<string, string> = { read: 'rs', write: 'cud', '*': 'cruds' };

/** The scope's resource part, or null when it is not a patient-level resource scope this server knows. */
export function resourceScope(scope: string): ResourceScope | null {
  const match = RESOURCE_SCOPE.exec(scope);
  if (!match) return null;
  const [, resourceType, permissions, query] = match;
  const v1 = V1_PERMISSIONS[permissions!];
  if (v1 !== undefined && query === undefined) return { resourceType: resourceType!, permissions: v1, v2: false };
  if (permissions !== '' && V2_PERMISSIONS.test(permissions!)) {
    // Granular scopes (`?category=…`) narrow what is shared; this sandbox grants nothing narrower, so refuses them.
    if (query !== undefined) return null;
    return { resourceType: resourceType!, permissions: permissions!, v2: true };
  }
  return null;
}

export type ScopeCheck = { ok: true; scopes: string[] } | { ok: false; description: string };

/** A requested scope string, checked against what this brand speaks. */
export function checkRequestedScope(scope: string, acceptsV2: boolean): ScopeCheck {
  const scopes = scope.split(' ').filter((s) => s !== '');
  if (scopes.length === 0) return { ok: false, description: 'scope is empty' };
  for (const requested of scopes) {
    if (OTHER_SCOPES.includes(requested)) continue;
    const parsed = resourceScope(requested);
    if (!parsed) return { ok: false, description: `scope "${requested}" is not supported` };
    if (parsed.v2 && !acceptsV2)
      return { ok: false, description: `scope "${requested}" is a SMART v2 scope; this server grants v1 scopes only` };
  }
  return { ok: true, scopes: [...new Set(scopes)] };
}

/** Whether a granted scope string allows `permission` ('r' read, 's' search) on `resourceType`. */
export function allows(scope: string, resourceType: string, permission: 'r' | 's'): boolean {
  return scope.split(' ').some((granted) => {
    const parsed = resourceScope(granted);
    return (
      parsed !== null &&
      (parsed.resourceType === resourceType || parsed.resourceType === '*') &&
      parsed.permissions.includes(permission)
    );
  });
}

export function hasScope(scope: string, wanted: string): boolean {
  return scope.split(' ').includes(wanted);
}
