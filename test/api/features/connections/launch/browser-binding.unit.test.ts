// The cookie that binds a sign-in to its browser (docs/connecting.md, "The callback belongs to the browser that
// started it").
import { expect } from 'chai';
import {
  bindingCookie,
  readBindings,
  withBinding,
} from '../../../../../api/src/features/connections/launch/browser-binding.js';

const id = (n: number) => `0193a0c4-7b1e-7c1a-9d2e-3f4a5b6c7d${String(n).padStart(2, '0')}`;
const secret = (n: number) => String.fromCharCode(65 + n).repeat(43);

describe('the browser binding cookie', () => {
  it('is __Host-, Secure, HttpOnly and SameSite=Lax over https, and plain without Secure over http', () => {
    const one = withBinding(new Map(), id(1), secret(1));
    expect(bindingCookie(one, true, 1800)).to.equal(
      `__Host-portico-connect=${id(1)}.${secret(1)}; Path=/; Max-Age=1800; HttpOnly; SameSite=Lax; Secure`,
    );
    expect(bindingCookie(one, false, 1799.7)).to.equal(
      `portico-connect=${id(1)}.${secret(1)}; Path=/; Max-Age=1799; HttpOnly; SameSite=Lax`,
    );
    expect(bindingCookie(new Map(), true, 1800), 'nothing left: deleted').to.match(
      /^__Host-portico-connect=; .*Max-Age=0/,
    );
  });

  it('keeps four sign-ins, newest first, and reads only its own name', () => {
    let held = new Map<string, string>();
    for (let n = 1; n <= 5; n++) held = withBinding(held, id(n), secret(n));
    const header = bindingCookie(held, true, 60).split(';')[0]!;
    const read = readBindings(`other=1; ${header}; portico-connect=${id(9)}.${secret(9)}`, true);
    expect([...read.keys()]).to.deep.equal([id(5), id(4), id(3), id(2)]);
    expect(read.get(id(5))).to.equal(secret(5));
    // Over http the Secure cookie's name is not read, and over https the plain one is not either.
    expect([...readBindings(`portico-connect=${id(9)}.${secret(9)}; ${header}`, false).keys()]).to.deep.equal([id(9)]);
    expect(withBinding(read, id(4)).has(id(4)), 'removed').to.equal(false);
    expect(readBindings(`__Host-portico-connect=garbage~${id(1)}.short`, true).size).to.equal(0);
    expect(readBindings(undefined, true).size).to.equal(0);
  });
});
