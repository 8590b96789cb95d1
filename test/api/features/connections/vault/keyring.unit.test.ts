import { expect } from 'chai';
import { parseTokenKeys } from '../../../../../api/src/config.js';
import { Keyring, SealBroken, UnknownTokenKey } from '../../../../../api/src/features/connections/vault/keyring.js';
import { sealContext, sealTokens } from '../../../../../api/src/features/connections/vault/sealing.js';

const K1 = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
const K2 = `k2:${Buffer.alloc(32, 2).toString('base64')}`;

describe('token vault: the keyring (AES-256-GCM, keyed rotation)', () => {
  it('seals with the first key and opens with any listed one', () => {
    const old = new Keyring(parseTokenKeys(K1)!);
    const sealed = old.seal('access-token-value', 'c1/access');
    expect(sealed.kid).to.equal('k1');
    expect(JSON.stringify(sealed)).to.not.include('access-token-value');
    const rotated = new Keyring(parseTokenKeys(`${K2},${K1}`)!);
    expect(rotated.open(sealed, 'c1/access')).to.equal('access-token-value');
    expect(rotated.seal('x', 'c1/access').kid).to.equal('k2');
  });

  it('refuses a value moved to another connection or field, altered, or sealed under a key no longer listed', () => {
    const ring = new Keyring(parseTokenKeys(K1)!);
    const sealed = ring.seal('secret', 'c1/refresh');
    expect(() => ring.open(sealed, 'c2/refresh')).to.throw(SealBroken);
    expect(() => ring.open(sealed, 'c1/access')).to.throw(SealBroken);
    const flipped = Buffer.from(sealed.ct, 'base64url');
    flipped[0]! ^= 1;
    expect(() => ring.open({ ...sealed, ct: flipped.toString('base64url') }, 'c1/refresh')).to.throw(SealBroken);
    // A key no longer listed is told apart: putting it back makes the value readable again.
    expect(() => new Keyring(parseTokenKeys(K2)!).open(sealed, 'c1/refresh')).to.throw(UnknownTokenKey, /k1/);
  });

  it('binds a vault entry to its account, connection, field and FHIR base URL, and still opens the first form', () => {
    const ring = new Keyring(parseTokenKeys(K1)!);
    const binding = { accountId: 'a1', fhirBaseUrl: 'https://fhir.example.org/r4' };
    const { access, refresh } = sealTokens(ring, 'c1', binding, 'the-access', 'the-refresh');
    expect(access.aad).to.equal(2);
    expect(ring.open(access, sealContext('c1', 'access', binding, access))).to.equal('the-access');
    expect(ring.open(refresh!, sealContext('c1', 'refresh', binding, refresh!))).to.equal('the-refresh');
    for (const [label, other] of [
      ['another account', { ...binding, accountId: 'a2' }],
      ['another FHIR base URL', { ...binding, fhirBaseUrl: 'https://evil.example.org/r4' }],
    ] as const)
      expect(() => ring.open(access, sealContext('c1', 'access', other, access)), label).to.throw(SealBroken);
    expect(() => ring.open(access, sealContext('c2', 'access', binding, access))).to.throw(SealBroken);
    expect(() => ring.open(access, sealContext('c1', 'refresh', binding, access))).to.throw(SealBroken);
    // Entries sealed before the binding named account and base URL open in their own form until rewrapped.
    const first = ring.seal('old-access', 'c1/access');
    expect(ring.open(first, sealContext('c1', 'access', binding, first))).to.equal('old-access');
  });

  it('reads PORTICO_TOKEN_KEYS strictly: kid:base64 of 32 bytes, distinct kids', () => {
    expect(parseTokenKeys(`${K1},${K2}`)!.map((k) => k.kid)).to.deep.equal(['k1', 'k2']);
    for (const bad of ['', 'k1', `k1:${Buffer.alloc(16).toString('base64')}`, `${K1},${K1}`, `bad kid:${K1.slice(3)}`])
      expect(parseTokenKeys(bad), bad).to.equal(undefined);
  });
});
