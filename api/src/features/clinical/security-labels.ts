// meta.security as the gateway filters on it: one confidentiality level (v3-Confidentiality, N when absent)
// and any number of sensitivity categories (v3-ActCode, e.g. HIV, PSY). Labels of other systems are kept in
// the resource and play no part here.

export const CONFIDENTIALITY_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality';
export const ACT_CODE_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-ActCode';

/** v3-Confidentiality, least to most restricted: unrestricted, low, moderate, normal, restricted, very restricted. */
export const CONFIDENTIALITY_CODES = ['U', 'L', 'M', 'N', 'R', 'V'] as const;
export const DEFAULT_CONFIDENTIALITY = 'N';
/** The shape of v3-ActCode codes (HIV, PSY, ETH, SUD…); the code system is too large to ship for one check. */
const ACT_CODE = /^[A-Z][A-Z0-9]{1,15}$/;

export interface SecurityLabels {
  confidentiality: string;
  sensitivity: string[];
}

/** Reads meta.security (as given: the schema has checked its shape), reporting labels that break the rules. */
export function securityLabels(security: unknown, add: (path: string, problem: string) => void): SecurityLabels {
  const confidentiality = new Set<string>();
  const sensitivity = new Set<string>();
  (Array.isArray(security) ? security : []).forEach((label: unknown, i) => {
    if (typeof label !== 'object' || label === null) return;
    const { system, code } = label as { system?: unknown; code?: unknown };
    const path = `meta.security[${i}]`;
    if (system === CONFIDENTIALITY_SYSTEM) {
      if (!(CONFIDENTIALITY_CODES as readonly unknown[]).includes(code)) {
        add(`${path}.code`, `must be a v3-Confidentiality code: ${CONFIDENTIALITY_CODES.join(', ')}`);
      } else if (confidentiality.size > 0 && !confidentiality.has(code as string)) {
        add(
          path,
          `is a second confidentiality label (${[...confidentiality][0]} is given too); at most one is allowed`,
        );
      } else {
        confidentiality.add(code as string);
      }
    } else if (system === ACT_CODE_SYSTEM) {
      if (typeof code === 'string' && ACT_CODE.test(code)) sensitivity.add(code);
      else add(`${path}.code`, 'must be a v3-ActCode code (2–16 capital letters and digits, e.g. HIV, PSY)');
    }
  });
  return { confidentiality: [...confidentiality][0] ?? DEFAULT_CONFIDENTIALITY, sensitivity: [...sensitivity].sort() };
}
