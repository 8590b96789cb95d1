// How the token vault encrypts (docs/connecting.md, "Token vault"): AES-256-GCM under the first of
// PORTICO_TOKEN_KEYS, each sealed value naming its key, so any listed key decrypts and keys rotate by putting a
// new one first. The additional data (the caller's `context`) binds a sealed value to what it was made for: one
// copied elsewhere fails to open, and says so apart from a value whose key is no longer listed.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { TokenKey } from '../../../config.js';

/** What is stored: the key's id, a 96-bit nonce, the ciphertext and its 128-bit tag (base64url). */
export interface Sealed {
  /** Which form of additional data the vault sealed it with (service.ts); absent on the first form. */
  aad?: 2;
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}

/** The value names a key PORTICO_TOKEN_KEYS no longer lists: putting the key back makes it readable again. */
export class UnknownTokenKey extends Error {
  override name = 'UnknownTokenKey';
}

/** The value does not open under its key and context: altered, or moved from where it was sealed for. */
export class SealBroken extends Error {
  override name = 'SealBroken';
}

export class Keyring {
  private readonly byKid: ReadonlyMap<string, Buffer>;

  constructor(private readonly keys: readonly TokenKey[]) {
    if (keys.length === 0) throw new Error('the token vault needs at least one key');
    this.byKid = new Map(keys.map((k) => [k.kid, k.key]));
  }

  /** Every listed key's id, the current one first. */
  get kids(): string[] {
    return this.keys.map((k) => k.kid);
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

  /** The plaintext; UnknownTokenKey when its key is no longer listed, SealBroken when it was altered or moved. */
  open(sealed: Sealed, context: string): string {
    const key = this.byKid.get(sealed.kid);
    if (!key) throw new UnknownTokenKey(`token key "${sealed.kid}" is not in PORTICO_TOKEN_KEYS`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SealBroken(`a value sealed with key "${sealed.kid}" does not open for what it is used for`);
    }
  }
}
