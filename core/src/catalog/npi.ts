// National Provider Identifiers (NPI): ten digits whose last is a Luhn check digit computed over the nine before
// it prefixed with 80840 (the ISO 7812 issuer prefix for US health identifiers), the check-digit algorithm CMS
// publishes for NPIs. The catalog keeps the NPIs sources give a FHIR system and finds brands by them.

/** The card-issuer prefix CMS puts before the nine identifying digits for the Luhn computation. */
const PREFIX = '80840';

/** Whether `text` is exactly ten digits whose tenth is the Luhn check digit of 80840 + the first nine. */
export function isValidNpi(text: string): boolean {
  if (typeof text !== 'string' || !/^\d{10}$/.test(text)) return false;
  const payload = PREFIX + text.slice(0, 9);
  let sum = 0;
  // Luhn: from the rightmost payload digit leftwards, every other digit (starting with that one) is doubled.
  for (let i = 0; i < payload.length; i++) {
    let digit = payload.charCodeAt(payload.length - 1 - i) - 48;
    if (i % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return (10 - (sum % 10)) % 10 === text.charCodeAt(9) - 48;
}

/**
 * The NPI a source wrote, as its ten digits, when valid; else undefined. Sources write NPIs as strings or as JSON
 * numbers (an NPI starts with 1 or 2, so a number loses no leading zero); surrounding whitespace is ignored.
 */
export function validNpi(value: unknown): string | undefined {
  const text =
    typeof value === 'number' && Number.isSafeInteger(value)
      ? String(value)
      : typeof value === 'string'
        ? value.trim()
        : '';
  return isValidNpi(text) ? text : undefined;
}
