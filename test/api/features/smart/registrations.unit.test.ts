import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { exportJWK, generateKeyPair } from 'jose';
import { loadRegistrations } from '../../../../api/src/features/smart/registrations.js';

const file = (content: unknown) => {
  const name = path.join(os.tmpdir(), `registrations-${randomUUID()}.json`);
  writeFileSync(name, typeof content === 'string' ? content : JSON.stringify(content));
  return name;
};
const brand = (over: Record<string, string> = {}) => ({
  id: 'b-1',
  platformType: 'EPIC' as const,
  fhirBaseUrl: 'https://fhir.example-health.org/r4',
  ...over,
});

describe('SMART client registrations (PORTICO_SMART_CLIENTS)', () => {
  it('gives a brand the first entry whose every given field matches, and each its client authentication', async () => {
    const { privateKey } = await generateKeyPair('ES384', { extractable: true });
    const registrations = await loadRegistrations(
      file([
        { match: { brandId: 'b-2' }, clientId: 'by-id', clientSecret: 's' },
        {
          match: { platformType: 'EPIC', fhirHost: 'fhir.example-health.org' },
          clientId: 'by-host',
          privateKeyJwk: { ...(await exportJWK(privateKey)), alg: 'ES384', kid: 'k' },
        },
        { match: {}, clientId: 'anyone' },
      ]),
    );
    expect(registrations.for(brand({ id: 'b-2' }))).to.deep.include({
      clientId: 'by-id',
      auth: { method: 'client_secret_basic', secret: 's' },
    });
    expect(registrations.for(brand())?.auth.method).to.equal('private_key_jwt');
    expect(registrations.for(brand({ platformType: 'CERNER' }))).to.deep.include({
      clientId: 'anyone',
      auth: { method: 'none' },
    });
  });

  it('stops start-up with the file, the entry and the problem', async () => {
    const fails = async (content: unknown, message: RegExp) => {
      const name = file(content);
      const error = await loadRegistrations(name).then(
        () => null,
        (e: Error) => e,
      );
      expect(error?.message).to.include(name);
      expect(error?.message).to.match(message);
    };
    await fails('{not json', /JSON/);
    await fails([{ match: {}, clientId: '' }], /clientId/);
    await fails([{ match: { platformType: 'NOPE' }, clientId: 'x' }], /platformType/);
    await fails(
      [{ match: {}, clientId: 'x', clientSecret: 's', privateKeyJwk: { kty: 'EC', alg: 'ES384', kid: 'k', d: 'x' } }],
      /entry 0 gives both/,
    );
    await fails(
      [{ match: {}, clientId: 'x', privateKeyJwk: { kty: 'EC', alg: 'ES384', kid: 'k', d: 'not-a-key' } }],
      /entry 0: privateKeyJwk/,
    );
  });
});
