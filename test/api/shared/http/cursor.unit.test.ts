import { expect } from 'chai';
import { CursorCodec, type CursorBinding } from '../../../../api/src/shared/http/cursor.js';
import { AppError } from '../../../../api/src/shared/http/errors.js';

const SECRET = 'cursor-secret-for-tests-0123456789abcdef';
const LIST: CursorBinding = {
  route: '/api/platform/v1/webhook-endpoints',
  accountId: 'f3b1c2d4-0000-4000-8000-000000000001',
};
const POSITION = { createdAt: '2026-11-22T10:00:00.000Z', id: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b' };

function expectRejected(decode: () => unknown): void {
  let error: unknown;
  try {
    decode();
  } catch (e) {
    error = e;
  }
  expect(error, 'the cursor was accepted').to.be.instanceOf(AppError);
  expect((error as AppError).status).to.equal(400);
  expect((error as AppError).code).to.equal('BAD_REQUEST');
  expect((error as AppError).details).to.have.nested.property('errors[0].name', 'cursor');
  expect((error as AppError).details).to.have.nested.property('errors[0].in', 'query');
}

/** The same string with the character at `index` swapped for another URL-safe one. */
const flip = (text: string, index: number) =>
  text.slice(0, index) + (text[index] === 'A' ? 'B' : 'A') + text.slice(index + 1);

describe('http: list cursors', () => {
  const codec = new CursorCodec(SECRET);
  const cursor = codec.encode(LIST, POSITION);

  it('gives back the position it was made from', () => {
    expect(codec.decode(LIST, cursor)).to.deep.equal(POSITION);
    expect(new CursorCodec(SECRET).decode({ ...LIST }, cursor)).to.deep.equal(POSITION);
  });

  it('is URL-safe, so it travels in a query string unescaped', () => {
    expect(cursor).to.match(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(cursor)).to.equal(cursor);
  });

  it('is stable for the same input and differs for another position', () => {
    expect(codec.encode(LIST, POSITION)).to.equal(cursor);
    expect(codec.encode(LIST, { ...POSITION, id: 'another' })).to.not.equal(cursor);
  });

  it('refuses a cursor with any character of its payload or signature changed', () => {
    const dot = cursor.indexOf('.');
    for (const index of [0, Math.floor(dot / 2), dot - 1, dot + 1, cursor.length - 1]) {
      expectRejected(() => codec.decode(LIST, flip(cursor, index)));
    }
  });

  it('refuses a payload re-encoded with another position under the old signature', () => {
    const [, signature] = cursor.split('.');
    const forged = Buffer.from(
      JSON.stringify({ r: LIST.route, a: LIST.accountId, p: { ...POSITION, id: 'zzz' } }),
    ).toString('base64url');
    expectRejected(() => codec.decode(LIST, `${forged}.${signature}`));
  });

  it('refuses a cursor issued for another route', () => {
    const other = codec.encode({ ...LIST, route: '/api/platform/v1/patients' }, POSITION);
    expectRejected(() => codec.decode(LIST, other));
  });

  it('refuses a cursor issued to another customer account', () => {
    const foreign = codec.encode({ ...LIST, accountId: 'f3b1c2d4-0000-4000-8000-000000000002' }, POSITION);
    expectRejected(() => codec.decode(LIST, foreign));
  });

  it('refuses a cursor signed under another secret', () => {
    expectRejected(() =>
      codec.decode(LIST, new CursorCodec('another-secret-for-tests-0123456789abcd').encode(LIST, POSITION)),
    );
  });

  for (const garbage of ['', '.', 'abc', 'abc.', '.abc', `${'a'.repeat(2000)}.b`, 'a.b.c', 'not a cursor', '%00.%00']) {
    it(`refuses ${JSON.stringify(garbage.length > 20 ? `${garbage.slice(0, 12)}…` : garbage)}`, () => {
      expectRejected(() => codec.decode(LIST, garbage));
    });
  }

  it('refuses the cursor with a third segment appended', () => {
    expectRejected(() => codec.decode(LIST, `${cursor}.${cursor.split('.')[1]}`));
  });
});
