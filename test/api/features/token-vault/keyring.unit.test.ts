import { expect } from 'chai';
import { parseTokenKeys } from '../../../../api/src/config.js';
import { Keyring } from '../../../../api/src/features/token-vault/keyring.js';

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
    expect(() => ring.open(sealed, 'c2/refresh')).to.throw();
    expect(() => ring.open(sealed, 'c1/access')).to.throw();
    const flipped = Buffer.from(sealed.ct, 'base64url');
    flipped[0]! ^= 1;
    expect(() => ring.open({ ...sealed, ct: flipped.toString('base64url') }, 'c1/refresh')).to.throw();
    expect(() => new Keyring(parseTokenKeys(K2)!).open(sealed, 'c1/refresh')).to.throw(/k1/);
  });

  it('reads PORTICO_TOKEN_KEYS strictly: kid:base64 of 32 bytes, distinct kids', () => {
    expect(parseTokenKeys(`${K1},${K2}`)!.map((k) => k.kid)).to.deep.equal(['k1', 'k2']);
    for (const bad of ['', 'k1', `k1:${Buffer.alloc(16).toString('base64')}`, `${K1},${K1}`, `bad kid:${K1.slice(3)}`])
      expect(parseTokenKeys(bad), bad).to.equal(undefined);
  });
});
