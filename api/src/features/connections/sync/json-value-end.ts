// Finding where a JSON value ends in bytes that arrive in chunks, without decoding or keeping any of them (for
// searchset-stream.ts). JSON's structural bytes are ASCII, which never occurs inside a multi-byte UTF-8 character, so
// bytes can be scanned as they come. A string is crossed with Buffer.indexOf (memchr) rather than byte by byte: a
// multi-MiB base64 attachment costs a few calls. Only the end is found; whether the value is JSON is JSON.parse's call.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENS = 1;
const CLOSES = 2;
const STARTS_STRING = 3;
/** What the scan stops at outside strings: one table load a byte is all the rest costs. */
const STRUCTURE = new Uint8Array(256);
STRUCTURE[0x7b] = STRUCTURE[0x5b] = OPENS;
STRUCTURE[0x7d] = STRUCTURE[0x5d] = CLOSES;
STRUCTURE[QUOTE] = STARTS_STRING;
/** What ends a number or a literal: whitespace, `,`, `]`, `}`. */
const ENDS_SCALAR = new Uint8Array(256);
for (const c of [0x20, 0x0a, 0x0d, 0x09, 0x2c, 0x5d, 0x7d]) ENDS_SCALAR[c] = 1;

export class ValueEnd {
  /** Open objects and arrays (their kinds are not told apart: a crossed bracket is JSON.parse's to refuse). */
  private depth = 0;
  private inString = false;
  private scalar = false;
  /** The chunk's first byte is escaped: the string's run of backslashes before it was odd. */
  private escaped = false;

  /** Starts a value at its first byte; false when no value starts with that byte. */
  begin(c: number): boolean {
    this.depth = c === 0x7b || c === 0x5b ? 1 : 0;
    this.inString = c === QUOTE;
    this.scalar = this.depth === 0 && !this.inString;
    this.escaped = false;
    return !(this.scalar && (ENDS_SCALAR[c] === 1 || c === 0x3a));
  }

  /** From `i`, the end (exclusive) of the value begun, or -1 when the chunk ends first: the next goes on from 0. */
  scan(bytes: Buffer, i: number): number {
    const n = bytes.length;
    if (this.scalar) {
      while (i < n && ENDS_SCALAR[bytes[i]!] === 0) i++;
      return i < n ? i : -1;
    }
    let depth = this.depth;
    for (;;) {
      if (this.inString) {
        const quote = this.closingQuote(bytes, i);
        if (quote < 0) break;
        this.inString = false;
        i = quote + 1;
        if (depth === 0) return i;
      }
      for (; i < n; i++) {
        const kind = STRUCTURE[bytes[i]!];
        if (kind === 0) continue;
        if (kind === OPENS) depth++;
        else if (kind === CLOSES) {
          if (--depth === 0) {
            this.depth = 0;
            return i + 1;
          }
        } else break;
      }
      if (i === n) break;
      this.inString = true;
      i++;
    }
    this.depth = depth;
    return -1;
  }

  /**
   * The quote that closes the string, from `i`, or -1. A quote is escaped when an odd run of backslashes precedes it;
   * the run stops at the opening quote, or at the chunk's start when the string began in an earlier chunk: there
   * `escaped` carries on what the earlier chunk's run was. Each backslash is looked at once, so a run is linear.
   */
  private closingQuote(bytes: Buffer, i: number): number {
    for (let quote = bytes.indexOf(QUOTE, i); quote >= 0; quote = bytes.indexOf(QUOTE, quote + 1)) {
      if (!this.escapedAt(bytes, quote)) {
        this.escaped = false;
        return quote;
      }
    }
    this.escaped = this.escapedAt(bytes, bytes.length);
    return -1;
  }

  private escapedAt(bytes: Buffer, i: number): boolean {
    let b = i - 1;
    while (b >= 0 && bytes[b] === BACKSLASH) b--;
    const run = i - 1 - b + (b < 0 && this.escaped ? 1 : 0);
    return (run & 1) === 1;
  }
}
