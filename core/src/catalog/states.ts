// US states, the District of Columbia and the inhabited territories, by USPS code: one table for the operator,
// which turns what sources write into codes, and for the search index, which finds a brand by code ("ny") or
// by name ("new york").

const STATES: Readonly<Record<string, string>> = Object.freeze({
  AL: 'Alabama',
  AK: 'Alaska',
  AZ: 'Arizona',
  AR: 'Arkansas',
  CA: 'California',
  CO: 'Colorado',
  CT: 'Connecticut',
  DE: 'Delaware',
  DC: 'District of Columbia',
  FL: 'Florida',
  GA: 'Georgia',
  HI: 'Hawaii',
  ID: 'Idaho',
  IL: 'Illinois',
  IN: 'Indiana',
  IA: 'Iowa',
  KS: 'Kansas',
  KY: 'Kentucky',
  LA: 'Louisiana',
  ME: 'Maine',
  MD: 'Maryland',
  MA: 'Massachusetts',
  MI: 'Michigan',
  MN: 'Minnesota',
  MS: 'Mississippi',
  MO: 'Missouri',
  MT: 'Montana',
  NE: 'Nebraska',
  NV: 'Nevada',
  NH: 'New Hampshire',
  NJ: 'New Jersey',
  NM: 'New Mexico',
  NY: 'New York',
  NC: 'North Carolina',
  ND: 'North Dakota',
  OH: 'Ohio',
  OK: 'Oklahoma',
  OR: 'Oregon',
  PA: 'Pennsylvania',
  RI: 'Rhode Island',
  SC: 'South Carolina',
  SD: 'South Dakota',
  TN: 'Tennessee',
  TX: 'Texas',
  UT: 'Utah',
  VT: 'Vermont',
  VA: 'Virginia',
  WA: 'Washington',
  WV: 'West Virginia',
  WI: 'Wisconsin',
  WY: 'Wyoming',
  AS: 'American Samoa',
  GU: 'Guam',
  MP: 'Northern Mariana Islands',
  PR: 'Puerto Rico',
  VI: 'U.S. Virgin Islands',
});

// Keyed by the name reduced to lower-case letters, so "new york", "New-York", "NEW YORK" and "Washington,
// D.C." all resolve; sources also write these variants.
const squeeze = (name: string) => name.toLowerCase().replace(/[^a-z]/g, '');
const VARIANTS: readonly [string, string][] = [
  ['Washington DC', 'DC'],
  ['Washington D.C.', 'DC'],
  ['US Virgin Islands', 'VI'],
  ['Virgin Islands', 'VI'],
  ['United States Virgin Islands', 'VI'],
  ['Virgin Islands of the United States', 'VI'],
  ['Commonwealth of the Northern Mariana Islands', 'MP'],
  ['Commonwealth of Puerto Rico', 'PR'],
];
const CODES_BY_NAME: ReadonlyMap<string, string> = new Map([
  ...Object.entries(STATES).map(([code, name]): [string, string] => [squeeze(name), code]),
  ...VARIANTS.map(([name, code]): [string, string] => [squeeze(name), code]),
]);

/** Every known code, upper-case. */
export const STATE_CODES: readonly string[] = Object.freeze(Object.keys(STATES));

/** The full name of a two-letter code (any case), or undefined when the code is not a US state or territory. */
export function stateName(code: string): string | undefined {
  const upper = code.trim().toUpperCase();
  return Object.hasOwn(STATES, upper) ? STATES[upper] : undefined;
}

/** The upper-case code of a code or a full name (any case, spacing or punctuation), or undefined when neither is known.
 * */
export function stateCode(codeOrName: string): string | undefined {
  if (typeof codeOrName !== 'string') return undefined;
  const upper = codeOrName.trim().toUpperCase();
  if (Object.hasOwn(STATES, upper)) return upper;
  return CODES_BY_NAME.get(squeeze(codeOrName));
}
