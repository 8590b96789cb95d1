// The gateway's search parameters as a client writes them: FHIR token and date strings, what each means,
// and a 400 naming the field for anything malformed.
import { expect } from 'chai';
import { AppError } from '../../../../../api/src/shared/http/errors.js';
import { anyStringExcept, parseDateParam, parseToken } from '../../../../../api/src/features/clinical/gateway/query.js';

/** The AppError `run` throws; fails the test when it returns or throws anything else. */
function thrown(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    return error as AppError;
  }
  return expect.fail('did not throw');
}

function expectInvalid(run: () => unknown, name: string, detail: RegExp): void {
  const error = thrown(run);
  expect(error.status).to.equal(400);
  expect(error.code).to.equal('BAD_REQUEST');
  const errors = (error.details as { errors: { in: string; name: string; detail: string }[] }).errors;
  expect(errors).to.have.length(1);
  expect(errors[0]).to.include({ in: 'body', name });
  expect(errors[0]!.detail).to.match(detail);
}

const at = (iso: string) => new Date(iso);

describe('observations: search parameters', () => {
  describe('parseToken', () => {
    it('reads the four forms of a token', () => {
      expect(parseToken('http://loinc.org|8867-4', 'code')).to.deep.equal([
        { kind: 'system-and-code', system: 'http://loinc.org', code: '8867-4' },
      ]);
      expect(parseToken('8867-4', 'code')).to.deep.equal([{ kind: 'code', code: '8867-4' }]);
      expect(parseToken('|GLU', 'code')).to.deep.equal([{ kind: 'code-without-system', code: 'GLU' }]);
      expect(parseToken('http://loinc.org|', 'code')).to.deep.equal([{ kind: 'system', system: 'http://loinc.org' }]);
    });

    it('reads comma-separated alternatives, each in its own form', () => {
      expect(
        parseToken(
          'vital-signs,http://terminology.hl7.org/CodeSystem/observation-category|laboratory,|exam',
          'category',
        ),
      ).to.deep.equal([
        { kind: 'code', code: 'vital-signs' },
        {
          kind: 'system-and-code',
          system: 'http://terminology.hl7.org/CodeSystem/observation-category',
          code: 'laboratory',
        },
        { kind: 'code-without-system', code: 'exam' },
      ]);
    });

    it('unescapes \\, \\| \\$ and \\\\, and splits only on the unescaped', () => {
      expect(parseToken('urn:x\\|y|a\\,b,c\\$d\\\\', 'code')).to.deep.equal([
        { kind: 'system-and-code', system: 'urn:x|y', code: 'a,b' },
        { kind: 'code', code: 'c$d\\' },
      ]);
    });

    it('keeps spaces and case as written', () => {
      expect(parseToken(' 8867-4 ,Vital-Signs', 'code')).to.deep.equal([
        { kind: 'code', code: ' 8867-4 ' },
        { kind: 'code', code: 'Vital-Signs' },
      ]);
    });

    it('accepts 50 alternatives of 256 characters', () => {
      const long = 'x'.repeat(256);
      expect(parseToken(Array.from({ length: 50 }, () => long).join(','), 'code')).to.have.length(50);
    });

    it('refuses empty parts, naming the field', () => {
      expectInvalid(() => parseToken('', 'code'), 'code', /empty/);
      expectInvalid(() => parseToken(',8867-4', 'category'), 'category', /empty alternative/);
      expectInvalid(() => parseToken('8867-4,', 'code'), 'code', /empty alternative/);
      expectInvalid(() => parseToken('8867-4,,718-7', 'code'), 'code', /empty alternative/);
      expectInvalid(() => parseToken('|', 'code'), 'code', /system, a code or both/);
    });

    it('refuses over 50 alternatives, or one over 256 characters', () => {
      expectInvalid(
        () => parseToken(Array.from({ length: 51 }, (_, i) => `c${i}`).join(','), 'code'),
        'code',
        /at most 50/,
      );
      expectInvalid(() => parseToken(`8867-4,${'x'.repeat(257)}`, 'code'), 'code', /at most 256 characters/);
    });

    it('refuses a second "|" and unknown or dangling escapes', () => {
      expectInvalid(() => parseToken('http://loinc.org|8867-4|extra', 'code'), 'code', /more than one/);
      expectInvalid(() => parseToken('a\\nb', 'code'), 'code', /escapes only/);
      expectInvalid(() => parseToken('8867-4\\', 'code'), 'code', /escapes only/);
    });
  });

  describe('parseDateParam', () => {
    it('reads every prefix, eq when there is none', () => {
      for (const prefix of ['eq', 'ne', 'gt', 'lt', 'ge', 'le'] as const)
        expect(parseDateParam(`${prefix}2024`).prefix).to.equal(prefix);
      expect(parseDateParam('2024').prefix).to.equal('eq');
    });

    it('covers the range of the precision given', () => {
      expect(parseDateParam('ge2024')).to.deep.equal({
        prefix: 'ge',
        start: at('2024-01-01T00:00:00.000Z'),
        end: at('2024-12-31T23:59:59.999Z'),
      });
      expect(parseDateParam('lt2024-02')).to.deep.equal({
        prefix: 'lt',
        start: at('2024-02-01T00:00:00.000Z'),
        end: at('2024-02-29T23:59:59.999Z'),
      });
      expect(parseDateParam('2023-02')).to.deep.include({ end: at('2023-02-28T23:59:59.999Z') });
      expect(parseDateParam('le2024-03-05')).to.deep.equal({
        prefix: 'le',
        start: at('2024-03-05T00:00:00.000Z'),
        end: at('2024-03-05T23:59:59.999Z'),
      });
      expect(parseDateParam('gt2024-03-05T10:20:30Z')).to.deep.equal({
        prefix: 'gt',
        start: at('2024-03-05T10:20:30.000Z'),
        end: at('2024-03-05T10:20:30.999Z'),
      });
      expect(parseDateParam('ne2024-03-05T10:20:30.125Z')).to.deep.equal({
        prefix: 'ne',
        start: at('2024-03-05T10:20:30.125Z'),
        end: at('2024-03-05T10:20:30.125Z'),
      });
    });

    it('honours time-zone offsets', () => {
      expect(parseDateParam('eq2019-12-31T23:30:00-05:00')).to.deep.include({
        start: at('2020-01-01T04:30:00.000Z'),
        end: at('2020-01-01T04:30:00.999Z'),
      });
      expect(parseDateParam('2024-03-05T01:00:00+02:00')).to.deep.include({ start: at('2024-03-04T23:00:00.000Z') });
    });

    it('refuses unknown prefixes and anything that is not a FHIR date, naming the field', () => {
      for (const value of [
        '',
        'eq',
        'sa2024',
        'ap2024',
        'EQ2024',
        'xx2024-01-01',
        'ge 2024',
        'ge24',
        '2024-13',
        '2024-02-30',
        '2024-3-5',
        'ge2024-03-05T10:00:00',
        'tomorrow',
        '2024-01-01 ',
      ]) {
        expectInvalid(() => parseDateParam(value), 'date', /prefix|FHIR date/);
      }
    });
  });

  describe('anyStringExcept (the sensitivity clause)', () => {
    // The pattern is read by MongoDB (PCRE) and FerretDB (Go RE2); JavaScript reads these constructs alike
    // once \z is spelled $ (no flags, so $ is the end of the string in JavaScript).
    const matcher = (allowed: string[]) => new RegExp(anyStringExcept(allowed).pattern.replaceAll('\\z', '$'));

    it('matches exactly the strings outside the allowed set', () => {
      const allowed = ['HIV', 'PSY', 'H', 'HIVX', 'a]b', '-^\\', 'é', 'x\ny'];
      const re = matcher(allowed);
      for (const value of allowed) expect(re.test(value), value).to.equal(false);
      for (const value of [
        '',
        'HI',
        'HIVXY',
        'HIVY',
        'P',
        'PSYCH',
        'hiv',
        'ETH',
        'a]',
        'a]bc',
        '-^',
        '-^\\\\',
        'e',
        'éé',
        'x',
        'x\nyz',
        '\n',
      ]) {
        expect(re.test(value), JSON.stringify(value)).to.equal(true);
      }
    });

    it('matches every string when nothing is allowed', () => {
      const re = matcher([]);
      for (const value of ['', 'HIV', '\n']) expect(re.test(value)).to.equal(true);
    });
  });
});
