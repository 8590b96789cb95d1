import { expect } from 'chai';
import { BEGINNING, dateRange, ONGOING } from '../../../../api/src/features/clinical/dates.js';

/** The range as ISO strings, for readable failures. */
function range(value: string): [string, string] | null {
  const found = dateRange(value);
  return found && [found.start.toISOString(), found.end.toISOString()];
}

describe('clinical: FHIR date ranges', () => {
  it('reads a year as the whole year', () => {
    expect(range('2024')).to.deep.equal(['2024-01-01T00:00:00.000Z', '2024-12-31T23:59:59.999Z']);
  });

  it('reads a month as the whole month, leap Februaries included', () => {
    expect(range('2024-03')).to.deep.equal(['2024-03-01T00:00:00.000Z', '2024-03-31T23:59:59.999Z']);
    expect(range('2024-02')).to.deep.equal(['2024-02-01T00:00:00.000Z', '2024-02-29T23:59:59.999Z']);
    expect(range('2023-02')).to.deep.equal(['2023-02-01T00:00:00.000Z', '2023-02-28T23:59:59.999Z']);
    expect(range('2024-12')).to.deep.equal(['2024-12-01T00:00:00.000Z', '2024-12-31T23:59:59.999Z']);
  });

  it('reads a date as the whole UTC day', () => {
    expect(range('2024-03-05')).to.deep.equal(['2024-03-05T00:00:00.000Z', '2024-03-05T23:59:59.999Z']);
    expect(range('2024-02-29')).to.deep.equal(['2024-02-29T00:00:00.000Z', '2024-02-29T23:59:59.999Z']);
  });

  it('reads a time to the second as that whole second', () => {
    expect(range('2024-03-05T08:30:00Z')).to.deep.equal(['2024-03-05T08:30:00.000Z', '2024-03-05T08:30:00.999Z']);
  });

  it('reads a time with fractional seconds as that instant', () => {
    expect(range('2024-03-04T09:12:44.150Z')).to.deep.equal(['2024-03-04T09:12:44.150Z', '2024-03-04T09:12:44.150Z']);
    expect(range('2024-03-04T09:12:44.5Z')).to.deep.equal(['2024-03-04T09:12:44.500Z', '2024-03-04T09:12:44.500Z']);
  });

  it('keeps milliseconds of a finer fraction (microseconds are dropped, not rounded)', () => {
    expect(range('2024-03-04T09:12:44.123999Z')).to.deep.equal([
      '2024-03-04T09:12:44.123Z',
      '2024-03-04T09:12:44.123Z',
    ]);
  });

  it('honours time-zone offsets, across a day boundary too', () => {
    expect(range('2024-03-05T08:30:00-05:00')).to.deep.equal(['2024-03-05T13:30:00.000Z', '2024-03-05T13:30:00.999Z']);
    expect(range('2024-03-05T01:15:00+05:30')).to.deep.equal(['2024-03-04T19:45:00.000Z', '2024-03-04T19:45:00.999Z']);
    expect(range('2024-12-31T23:00:00-14:00')).to.deep.equal(['2025-01-01T13:00:00.000Z', '2025-01-01T13:00:00.999Z']);
    expect(range('2024-03-05T08:30:00+00:00')).to.deep.equal(range('2024-03-05T08:30:00Z'));
  });

  it('reads years before 100 as those years, not as 19xx', () => {
    expect(range('0001')).to.deep.equal(['0001-01-01T00:00:00.000Z', '0001-12-31T23:59:59.999Z']);
    expect(range('0050-06-15')).to.deep.equal(['0050-06-15T00:00:00.000Z', '0050-06-15T23:59:59.999Z']);
  });

  it('reaches the last year FHIR can write', () => {
    expect(range('9999')).to.deep.equal(['9999-01-01T00:00:00.000Z', ONGOING.toISOString()]);
  });

  it('has the open ends of a period at the first and the last instant FHIR can write', () => {
    expect(BEGINNING.toISOString()).to.equal('0001-01-01T00:00:00.000Z');
    expect(ONGOING.toISOString()).to.equal('9999-12-31T23:59:59.999Z');
  });

  describe('refuses what is not a FHIR date, dateTime or instant', () => {
    const refused: Array<[string, string]> = [
      ['2024-3', 'a month of one digit'],
      ['2024-3-5', 'a day of one digit'],
      ['24', 'a two-digit year'],
      ['0000', 'the year zero'],
      ['2024-13', 'a thirteenth month'],
      ['2024-00', 'a month zero'],
      ['2023-02-29', 'the 29th of February in a common year'],
      ['2024-04-31', 'the 31st of April'],
      ['2024-03-00', 'a day zero'],
      ['2024-03-05T08:30Z', 'a time without seconds'],
      ['2024-03-05T08:30:00', 'a time without a zone'],
      ['2024-03-05T24:00:00Z', 'hour 24'],
      ['2024-03-05T08:60:00Z', 'minute 60'],
      ['2024-03-05T08:30:00+15:00', 'an offset beyond +14:00'],
      ['2024-03-05T08:30:00+05:60', 'an offset with 60 minutes'],
      ['2024-03-05 08:30:00Z', 'a space instead of T'],
      ['2024-03-05T08:30:00.Z', 'an empty fraction'],
      ['', 'an empty string'],
      [' 2024', 'leading whitespace'],
    ];
    for (const [value, what] of refused) {
      it(`${what}: "${value}"`, () => expect(dateRange(value)).to.equal(null));
    }
  });
});
