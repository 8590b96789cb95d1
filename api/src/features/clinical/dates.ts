// FHIR dates as the ranges FHIR search compares: a value stands for the whole period of its precision, so
// "2024-03" is every instant of March 2024 (UTC). Ingest uses it for effective[x]; search reuses it for date
// parameters, so both sides agree on what a partial date means.

/** The start of an effectivePeriod without a start. */
export const BEGINNING = new Date('0001-01-01T00:00:00.000Z');
/** The end of an effectivePeriod without an end: still ongoing. */
export const ONGOING = new Date('9999-12-31T23:59:59.999Z');

export interface DateRange {
  start: Date;
  end: Date;
}

// FHIR R4 date, dateTime and instant: a year, a month, a day, or a time to the second (optional fraction)
// with a time zone. Hours and minutes without seconds are not FHIR.
const FHIR_DATE_TIME =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2}))?)?)?$/;

const MINUTE = 60_000;

/**
 * The range a FHIR date/dateTime/instant string stands for, or null when it is not one (wrong syntax or no
 * such calendar date, e.g. 2023-02-29). A time without fractional seconds covers its whole second; with a
 * fraction it is that instant (to the millisecond).
 */
export function dateRange(value: string): DateRange | null {
  const match = FHIR_DATE_TIME.exec(value);
  if (!match) return null;
  const [, yearText, monthText, dayText, hourText, minuteText, secondText, fraction, zone] = match;
  const year = Number(yearText);
  if (year < 1) return null;
  if (monthText === undefined) return { start: utc(year, 0, 1), end: lastMillisecond(utc(year + 1, 0, 1)) };
  const month = Number(monthText) - 1;
  if (month < 0 || month > 11) return null;
  if (dayText === undefined) return { start: utc(year, month, 1), end: lastMillisecond(utc(year, month + 1, 1)) };
  const day = Number(dayText);
  if (day < 1 || day > daysIn(year, month)) return null;
  if (hourText === undefined) return { start: utc(year, month, day), end: lastMillisecond(utc(year, month, day + 1)) };

  const hour = Number(hourText);
  const minute = Number(minuteText);
  const second = Number(secondText);
  // 60 is a leap second, which FHIR's own pattern allows; it lands on the next minute's first second.
  if (hour > 23 || minute > 59 || second > 60) return null;
  const offset = zoneOffsetMinutes(zone!);
  if (offset === null) return null;
  const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  const start = new Date(utc(year, month, day, hour, minute, second, millis).getTime() - offset * MINUTE);
  return { start, end: fraction === undefined ? new Date(start.getTime() + 999) : new Date(start.getTime()) };
}

/** Date.UTC reads years 0–99 as 1900–1999; FHIR years 0001–0099 are real years. */
function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, millis = 0): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  date.setUTCHours(hour, minute, second, millis);
  return date;
}

const lastMillisecond = (next: Date): Date => new Date(next.getTime() - 1);

function daysIn(year: number, month: number): number {
  return new Date(utc(year, month + 1, 1).getTime() - 1).getUTCDate();
}

/** Minutes east of UTC; null outside FHIR's −14:00…+14:00 or with minutes over 59. */
function zoneOffsetMinutes(zone: string): number | null {
  if (zone === 'Z') return 0;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(4, 6));
  if (minutes > 59 || hours * 60 + minutes > 14 * 60) return null;
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}
