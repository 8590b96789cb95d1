// How the token vault encrypts (docs/connecting.md, "Token vault"): AES-256-GCM under the first of
// PORTICO_TOKEN_KEYS, each sealed value naming its key, so any listed key decrypts and keys rotate by putting a
// new one first. The additional data binds a sealed value to the connection and field it was made for: one
// copied onto another connection, or from the refresh token's field to the access token's, fails to open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { TokenKey } from '../../config.js';

/** What is stored: the key's id, a 96-bit nonce, the ciphertext and its 128-bit tag (base64url). */
export interface Sealed {
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}

export class Keyring {
  private readonly byKid: ReadonlyMap<string, Buffer>;

  constructor(private readonly keys: readonly TokenKey[]) {
    if (keys.length === 0) throw new Error('the token vault needs at least one key');
    this.byKid = new Map(keys.map((k) => [k.kid, k.key]));
  }

  /** The id of the key new values are sealed with. */
  get current(): string {
    return this.keys[0]!.kid;
  }

  seal(plaintext: string, context: string): Sealed {
    const { kid, key } = this.keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(context));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return {
      kid,
      iv: iv.toString('base64url'),
      ct: ct.toString('base64url'),
      tag: cipher.getAuthTag().toString('base64url'),
    };
  }

  /** The plaintext; throws when the key is no longer listed or the value was altered or moved. */
  open(sealed: Sealed, context: string): string {
    const key = this.byKid.get(sealed.kid);
    if (!key) throw new Error(`token key "${sealed.kid}" is not in PORTICO_TOKEN_KEYS`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
