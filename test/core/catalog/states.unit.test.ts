// One table of US states for the operator (what sources write → codes) and the search index (codes ↔ names).
import { expect } from 'chai';
import { STATE_CODES, stateCode, stateName } from '#core/catalog/states.js';
import { brandFile } from '../../../testkit/brand-data.js';

describe('core: US states', () => {
  describe('stateCode', () => {
    const cases: [string, string | undefined][] = [
      ['WI', 'WI'],
      ['wi', 'WI'],
      [' Wi ', 'WI'],
      ['Wisconsin', 'WI'],
      ['new  york', 'NY'],
      ['NORTH CAROLINA', 'NC'],
      ['New-York', 'NY'],
      ['District of Columbia', 'DC'],
      ['Washington, D.C.', 'DC'],
      ['Washington DC', 'DC'],
      ['Washington', 'WA'],
      ['Puerto Rico', 'PR'],
      ['Commonwealth of Puerto Rico', 'PR'],
      ['pr', 'PR'],
      ['Guam', 'GU'],
      ['U.S. Virgin Islands', 'VI'],
      ['Virgin Islands', 'VI'],
      ['American Samoa', 'AS'],
      ['Northern Mariana Islands', 'MP'],
      ['Commonwealth of the Northern Mariana Islands', 'MP'],
      ['QC', undefined],
      ['Ontario', undefined],
      ['XX', undefined],
      ['', undefined],
      ['...(more here)...', undefined],
      ['Wis', undefined],
    ];
    for (const [raw, code] of cases)
      it(`maps ${JSON.stringify(raw)} to ${String(code)}`, () => expect(stateCode(raw)).to.equal(code));

    it('maps every full state name in the Oracle Health 2023 bundle (synthetic: GeoNames’ state names)', () => {
      type Bundle = { entry: { resource: { contained?: { address?: { state?: string }[] }[] } }[] };
      const states = (
        JSON.parse(brandFile('oracle-health-legacy-2023/millennium_patient_r4_endpoints.json')) as Bundle
      ).entry
        .flatMap((e) => e.resource.contained ?? [])
        .flatMap((o) => o.address ?? [])
        .map((a) => a.state)
        .filter((s): s is string => s !== undefined);
      expect(states.length).to.be.greaterThan(1_600);
      expect(states.filter((s) => stateCode(s) === undefined)).to.deep.equal([]);
    });
  });

  it('names every code, in any case, and nothing else', () => {
    expect(STATE_CODES).to.have.length(56);
    for (const code of STATE_CODES) expect(stateCode(stateName(code)!), code).to.equal(code);
    expect(stateName('ny')).to.equal('New York');
    expect(stateName('XX')).to.equal(undefined);
  });
});
