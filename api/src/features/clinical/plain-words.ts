// The record types in a patient's words: what Portico Connect's consent page lists before a sign-in, and what the
// patient's own page says an app read ("Companion read 42 lab results and vital signs"). One table, so both say
// the same thing about the same type.
import { COMPARTMENT_TYPES, REFERENCED_TYPES } from './record-types.js';

/** A category as the patient reads it: the plural, and the singular for a count of one. */
interface Words {
  many: string;
  one: string;
}

const words = (many: string, one: string): Words => ({ many, one });

/**
 * Each type's words, in the order a patient expects to read them: their health first, then care and visits, then
 * paperwork. Types that share words (the three medication types) are one category.
 */
const PLAIN_WORDS: ReadonlyMap<string, Words> = new Map([
  ['Observation', words('Lab results and vital signs', 'Lab result or vital sign')],
  ['MedicationRequest', words('Medications', 'Medication')],
  ['MedicationDispense', words('Medications', 'Medication')],
  ['Medication', words('Medications', 'Medication')],
  ['Condition', words('Conditions (health problems)', 'Condition (health problem)')],
  ['AllergyIntolerance', words('Allergies', 'Allergy')],
  ['Immunization', words('Immunizations', 'Immunization')],
  ['Procedure', words('Procedures', 'Procedure')],
  ['DiagnosticReport', words('Lab reports', 'Lab report')],
  ['DocumentReference', words('Clinical notes and documents', 'Clinical note or document')],
  ['Encounter', words('Visits', 'Visit')],
  ['CarePlan', words('Care plans', 'Care plan')],
  ['CareTeam', words('Care teams', 'Care team')],
  ['Goal', words('Goals', 'Goal')],
  ['ServiceRequest', words('Orders and referrals', 'Order or referral')],
  ['Specimen', words('Specimens', 'Specimen')],
  ['Device', words('Devices', 'Device')],
  ['QuestionnaireResponse', words('Questionnaire answers', 'Questionnaire answer')],
  ['Coverage', words('Insurance coverage', 'Insurance coverage')],
  ['ExplanationOfBenefit', words('Claims and explanations of benefits', 'Claim or explanation of benefits')],
  ['Patient', words('Your demographics', 'Demographics record')],
  ['RelatedPerson', words('Related people', 'Related person')],
  ['Provenance', words('Record history', 'Record history entry')],
  ['Practitioner', words('Doctors and care providers', 'Doctor or care provider')],
  ['PractitionerRole', words('Doctors and care providers', 'Doctor or care provider')],
  ['Organization', words('Organizations', 'Organization')],
  ['Location', words('Locations', 'Location')],
  ['Binary', words('Attachments', 'Attachment')],
]);

const ORDER = [...PLAIN_WORDS.keys()];
const REFERENCED = new Set<string>(REFERENCED_TYPES);

/** A type's words ("Medications"); a type without any keeps its FHIR name, so nothing read goes unsaid. */
export function plainTypeName(type: string, count?: number): string {
  const found = PLAIN_WORDS.get(type);
  if (!found) return type;
  return count === 1 ? found.one : found.many;
}

/** A count in words: "42 lab results and vital signs", "1 lab result or vital sign". */
export function plainCount(type: string, count: number): string {
  const name = plainTypeName(type, count);
  // "Your demographics" reads as a count without its possessive; a FHIR name keeps its capital.
  const lower = PLAIN_WORDS.has(type) ? name.replace(/^Your /, '').replace(/^./, (c) => c.toLowerCase()) : name;
  return `${count.toLocaleString('en-US')} ${lower}`;
}

/**
 * What a grant's `resourceTypes` lets an app read, as the categories a patient is asked to share: deduplicated, in
 * the table's order, `*` meaning every type in the patient's compartment. The referenced types (the doctors,
 * organizations, places and drug definitions a record names) are read only as part of those records, so they are
 * not a category of their own here, except where they share one (Medication is "Medications").
 */
export function plainCategories(resourceTypes: readonly string[]): string[] {
  const granted = new Set(resourceTypes.includes('*') ? COMPARTMENT_TYPES : resourceTypes);
  const categories = new Set<string>();
  for (const type of ORDER)
    if (granted.has(type) && (!REFERENCED.has(type) || type === 'Medication')) categories.add(plainTypeName(type));
  return [...categories];
}
