import { expect } from 'chai';
import type { Context } from 'koa';
import {
  ifMatch,
  ifNoneMatchHits,
  parseTagList,
  preconditionHolds,
  preconditionOf,
} from '../../../../api/src/shared/http/conditional.js';
import { AppError } from '../../../../api/src/shared/http/errors.js';

/** Just enough of a Koa context for the conditional helpers: request headers and state. */
function contextWith(headers: Record<string, string>): Context {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { get: (name: string) => lower[name.toLowerCase()] ?? '', state: {} } as unknown as Context;
}

/** Runs the If-Match middleware and answers whether the operation may proceed on `current`. */
async function ifMatchAllows(header: string | undefined, current: string): Promise<boolean> {
  const ctx = contextWith(header === undefined ? {} : { 'If-Match': header });
  let reached = false;
  await ifMatch()(ctx, async () => {
    reached = true;
  });
  expect(reached).to.equal(true);
  return preconditionHolds(preconditionOf(ctx), current);
}

describe('http: conditional requests', () => {
  describe('parseTagList', () => {
    it('reads * and lists of strong and weak tags', () => {
      expect(parseTagList('*')).to.equal('*');
      expect(parseTagList('  *  ')).to.equal('*');
      expect(parseTagList('"7"')).to.deep.equal([{ weak: false, opaque: '7' }]);
      expect(parseTagList('W/"7"')).to.deep.equal([{ weak: true, opaque: '7' }]);
      expect(parseTagList('"1", W/"2" ,"x-y"')).to.deep.equal([
        { weak: false, opaque: '1' },
        { weak: true, opaque: '2' },
        { weak: false, opaque: 'x-y' },
      ]);
      expect(parseTagList('""')).to.deep.equal([{ weak: false, opaque: '' }]);
    });

    it('accepts empty list elements, as RFC 9110 §5.6.1 asks of recipients', () => {
      expect(parseTagList('"1", , "2",')).to.deep.equal([
        { weak: false, opaque: '1' },
        { weak: false, opaque: '2' },
      ]);
    });

    for (const malformed of [
      '',
      '   ',
      'abc',
      '"abc',
      'abc"',
      'w/"1"',
      'W/ "1"',
      '"1" "2"',
      '"a"b"',
      '*, "1"',
      '"1", *',
      'W/*',
      '"1";q=1',
    ]) {
      it(`rejects ${JSON.stringify(malformed)} as malformed`, () => {
        expect(parseTagList(malformed)).to.equal(undefined);
      });
    }
  });

  describe('ifNoneMatchHits (weak comparison)', () => {
    const hits = (header: string | undefined, etag = '"3"') =>
      ifNoneMatchHits(contextWith(header === undefined ? {} : { 'If-None-Match': header }), etag);

    it('matches a strong or weak tag with the same opaque value', () => {
      expect(hits('"3"')).to.equal(true);
      expect(hits('W/"3"')).to.equal(true);
    });

    it('matches when any tag of a list matches, and * always', () => {
      expect(hits('"1", W/"2", "3"')).to.equal(true);
      expect(hits('*')).to.equal(true);
    });

    it('does not match other versions, prefixes or an absent header', () => {
      expect(hits('"1", W/"2"')).to.equal(false);
      expect(hits('"30"')).to.equal(false);
      expect(hits('"3"', '"30"')).to.equal(false);
      expect(hits(undefined)).to.equal(false);
    });

    it('ignores a malformed header (the full response is sent)', () => {
      expect(hits('3')).to.equal(false);
      expect(hits('"3" garbage')).to.equal(false);
    });
  });

  describe('If-Match (strong comparison)', () => {
    it('lets the operation run without the header', async () => {
      expect(await ifMatchAllows(undefined, '3')).to.equal(true);
      expect(preconditionHolds(undefined, '3')).to.equal(true);
    });

    it('holds for the current strong tag, alone or in a list', async () => {
      expect(await ifMatchAllows('"3"', '3')).to.equal(true);
      expect(await ifMatchAllows('"1", "3"', '3')).to.equal(true);
    });

    it('fails for another version', async () => {
      expect(await ifMatchAllows('"2"', '3')).to.equal(false);
      expect(await ifMatchAllows('"1", "2"', '3')).to.equal(false);
      expect(await ifMatchAllows('"3"', '30')).to.equal(false);
    });

    it('never matches a weak tag, even with the current value', async () => {
      expect(await ifMatchAllows('W/"3"', '3')).to.equal(false);
      expect(await ifMatchAllows('W/"3", "4"', '3')).to.equal(false);
      expect(await ifMatchAllows('W/"3", "4"', '4')).to.equal(true);
    });

    it('holds for * whatever the version', async () => {
      expect(await ifMatchAllows('*', '1')).to.equal(true);
      expect(await ifMatchAllows('*', '999')).to.equal(true);
    });

    it('compares versions exactly in preconditionHolds', () => {
      expect(preconditionHolds({ kind: 'any' }, '5')).to.equal(true);
      expect(preconditionHolds({ kind: 'versions', versions: ['4', '5'] }, '5')).to.equal(true);
      expect(preconditionHolds({ kind: 'versions', versions: ['4'] }, '5')).to.equal(false);
      expect(preconditionHolds({ kind: 'versions', versions: [] }, '5')).to.equal(false);
    });

    for (const malformed of ['3', '"3', 'W/3', '"3" "4"', '*, "3"']) {
      it(`refuses the malformed header ${JSON.stringify(malformed)} with 400 before the operation runs`, async () => {
        let reached = false;
        let error: unknown;
        try {
          await ifMatch()(contextWith({ 'If-Match': malformed }), async () => {
            reached = true;
          });
        } catch (e) {
          error = e;
        }
        expect(reached).to.equal(false);
        expect(error).to.be.instanceOf(AppError);
        expect((error as AppError).status).to.equal(400);
        expect((error as AppError).code).to.equal('BAD_REQUEST');
        expect((error as AppError).details).to.have.nested.property('errors[0].name', 'If-Match');
      });
    }
  });
});
