import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { exportJWK, generateKeyPair } from 'jose';
import {
  loadRegistrations,
  onHosts,
  pinnedEndpointProblem,
  type SmartRegistration,
} from '../../../../api/src/features/smart/registrations.js';

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
        { match: {}, clientId: 'anyone', endpointHosts: ['*.example-health.org'] },
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
    const hosts = { endpointHosts: ['fhir.example.org'] };
    await fails(
      [
        {
          match: {},
          clientId: 'x',
          clientSecret: 's',
          privateKeyJwk: { kty: 'EC', alg: 'ES384', kid: 'k', d: 'x' },
          ...hosts,
        },
      ],
      /entry 0 gives both/,
    );
    await fails(
      [{ match: {}, clientId: 'x', privateKeyJwk: { kty: 'EC', alg: 'ES384', kid: 'k', d: 'not-a-key' }, ...hosts }],
      /entry 0: privateKeyJwk/,
    );
    // A registration for every brand, or every brand of a platform, must pin where their endpoints may be.
    await fails([{ match: {}, clientId: 'x' }], /entry 0 matches every brand, so it must list endpointHosts/);
    await fails(
      [
        { match: { brandId: 'b-1' }, clientId: 'y' },
        { match: { platformType: 'EPIC' }, clientId: 'x' },
      ],
      /entry 1 matches every EPIC brand, so it must list endpointHosts/,
    );
    await fails([{ match: {}, clientId: 'x', endpointHosts: [] }], /endpointHosts/);
    await fails([{ match: {}, clientId: 'x', endpointHosts: ['https://fhir.example.org'] }], /endpointHosts/);
  });

  it('matches endpoint hosts by name or *.suffix, whatever their case', () => {
    const pins = ['fhir.epic.com', '*.cerner.com'];
    for (const host of ['fhir.epic.com', 'FHIR.Epic.com', 'authorization.cerner.com', 'a.b.cerner.com'])
      expect(onHosts(host, pins), host).to.equal(true);
    for (const host of ['epic.com', 'evil-fhir.epic.com', 'cerner.com', 'cerner.com.evil.org', 'xcerner.com'])
      expect(onHosts(host, pins), host).to.equal(false);
  });

  it('sends credentials only where the registration pins them', () => {
    const server = (token: string, authorize = 'https://fhir.example.org/oauth/authorize') => ({
      fhirBaseUrl: 'https://fhir.example.org/r4',
      authorizationEndpoint: authorize,
      tokenEndpoint: token,
      revocationEndpoint: undefined,
    });
    const registration = (over: Partial<SmartRegistration>): SmartRegistration => ({
      match: { fhirHost: 'fhir.example.org' },
      clientId: 'c',
      auth: { method: 'client_secret_basic', secret: 's' },
      ...over,
    });
    // Pinned hosts: every endpoint on them, whatever the client.
    const pinned = registration({ match: { platformType: 'EPIC' }, endpointHosts: ['*.example.org'] });
    expect(pinnedEndpointProblem(pinned, server('https://auth.example.org/token'))).to.equal(undefined);
    expect(pinnedEndpointProblem(pinned, server('https://auth.example.net/token'))).to.match(/token_endpoint/);
    expect(
      pinnedEndpointProblem(
        { ...pinned, auth: { method: 'none' } },
        server('https://auth.example.org/token', 'https://evil.example.net/authorize'),
      ),
    ).to.match(/authorization_endpoint/);
    // Matched exactly, no pins: a secret goes to the FHIR server's own host only; a public client anywhere.
    expect(pinnedEndpointProblem(registration({}), server('https://fhir.example.org/oauth/token'))).to.equal(undefined);
    expect(pinnedEndpointProblem(registration({}), server('https://auth.example.org/token'))).to.match(
      /not the FHIR server's host/,
    );
    expect(
      pinnedEndpointProblem(registration({ auth: { method: 'none' } }), server('https://auth.example.org/token')),
    ).to.equal(undefined);
  });
});
