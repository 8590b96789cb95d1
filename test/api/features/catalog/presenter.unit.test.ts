import { expect } from 'chai';
import { lookupJson, searchJson } from '../../../../api/src/features/catalog/presenter.js';
import { UNCHECKED } from '../../../../api/src/features/catalog/service.js';
import type { EndpointHealth } from '#core/catalog/model.js';
import { buildBrand } from './search/real-brands.js';

describe('sdk: catalog presenter', () => {
  // The fast path sends Content-Length from the count the presenter keeps as it assembles a body: it must be the
  // body's UTF-8 length whatever the pieces hold.
  it('counts the UTF-8 bytes of every piece: names, labels, endpoint outcomes and cursors beyond ASCII', () => {
    const logo = { kind: 'rendered' as const, assets: { '64': 'a', '128': 'b', '256': 'c', '512': 'd' } };
    // With a logo, so that the origin appears in the body (logoUrl).
    const accented = buildBrand({ name: 'Clínica Señora', city: 'San José', state: 'CA', logo });
    const namesake = buildBrand({ name: 'Clínica Señora', city: 'Añasco', state: 'PR' });
    const plain = buildBrand({ name: 'Mercy Clinic' });
    const odd: EndpointHealth = { ...UNCHECKED, fhirVersion: '4.0.1 – R4 ✓' };
    const answer = {
      brands: [accented, namesake, plain],
      exact: 2,
      nameKeys: ['clinica senora', 'clinica senora', null],
      distanceKm: [1.5, null, 12],
      nextCursor: 'curs☃r',
      endpointOf: (brand: typeof plain) => (brand === plain ? odd : UNCHECKED),
    };
    for (const origin of ['https://portico.example', 'https://pörtico.example']) {
      const body = searchJson(answer, origin);
      expect(body.text).to.include(`"logoUrl":"${origin}/`);
      expect(body.bytes, origin).to.equal(Buffer.byteLength(body.text));
      expect(JSON.parse(body.text).brands.map((b: { disambiguation?: string }) => b.disambiguation)).to.deep.equal([
        'San José, CA',
        'Añasco, PR',
        undefined,
      ]);
      const lookup = lookupJson({ brand: accented, endpoint: odd }, origin);
      expect(lookup.bytes, origin).to.equal(Buffer.byteLength(lookup.text));
    }
  });
});
