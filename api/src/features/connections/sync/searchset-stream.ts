// Reading a FHIR searchset page (a Bundle, JSON) as its bytes arrive, one element of its top-level `entry` array at a
// time, so that a page of a hundred resources of several MiB each is never held whole (docs/connecting.md, "Sync").
// Each element is collected as raw bytes and given to JSON.parse; one larger than `maxEntryBytes` is counted and
// dropped as it streams past, even when the excess is one enormous base64 string. Everything outside `entry` (the
// skeleton: link, total, meta) is kept, at most `maxOtherBytes`, and parsed at the end. Streaming JSON libraries were
// not used: they hold each string token whole and run an order of magnitude slower than JSON.parse; this reader only
// finds where values end (json-value-end.ts) and leaves the parsing to JSON.parse.
import { ValueEnd } from './json-value-end.js';

export class MalformedBundle extends Error {
  override name = 'MalformedBundle';
}

export interface SearchsetLimits {
  /** An entry (one element of the top-level `entry` array, as raw JSON bytes) larger than this is skipped unread. */
  maxEntryBytes: number;
  /** Everything outside `entry` (resourceType, meta, link, total…), as raw bytes, at most this; more → MalformedBundle. */
  maxOtherBytes: number;
}

export type StreamedEntry =
  /** JSON.parse of the element's bytes; `bytes`: its raw size, whitespace around it not included. */
  | { kind: 'entry'; value: unknown; bytes: number }
  /** Larger than maxEntryBytes: `bytes` were counted as they went past, never kept. */
  | { kind: 'oversized'; bytes: number };

export interface Searchset {
  /** Each element of `entry` in order; the source is read only as far as the element asked for needs. */
  entries: AsyncIterable<StreamedEntry>;
  /** After `entries` is exhausted: the top-level object without its `entry` member, parsed. */
  rest(): Record<string, unknown>;
  /** The most raw bytes held at once so far: what the limits bound (an element, the skeleton, a key cut by chunks). */
  heldPeak(): number;
}

/**
 * Reads a JSON object incrementally from `source`, yielding each element of its top-level `entry` array. Anything
 * but such an object (truncated, trailing bytes, `entry` not an array or twice) fails the iteration with a
 * MalformedBundle, possibly after the entries before the fault were yielded.
 */
export function readSearchset(source: AsyncIterable<Uint8Array>, limits: SearchsetLimits): Searchset {
  const splitter = new Splitter(limits);
  let rest: Record<string, unknown> | undefined;
  // The next chunk is asked for only when the consumer asks for the next entry, and leaving the loop early (a
  // `break`, an error) returns the source, which ends its network read.
  async function* entries(): AsyncGenerator<StreamedEntry, void, undefined> {
    for await (const chunk of source) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      for (let at = 0; at < bytes.length;) {
        at = splitter.feed(bytes, at);
        const entry = splitter.take();
        if (entry) yield entry;
      }
      splitter.endChunk(bytes);
    }
    rest = splitter.finish();
  }
  return {
    entries: entries(),
    rest() {
      if (rest === undefined) throw new Error('rest() needs the entries read to their end first');
      return rest;
    },
    heldPeak: () => splitter.peak,
  };
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const UTF8_BOM = [0xef, 0xbb, 0xbf];
const EMPTY_ARRAY = Buffer.from('[]');
/** `"entry"` with every letter escaped as \uXXXX: no longer spelling of a key can mean `entry`. */
const LONGEST_ENTRY_KEY = 32;

/** Where the reader stands in the top-level object. */
const At = {
  Bom: 0,
  Start: 1,
  KeyOrClose: 2,
  Key: 3,
  InKey: 4,
  Colon: 5,
  Value: 6,
  InValue: 7,
  AfterValue: 8,
  EntryOrClose: 9,
  Entry: 10,
  InEntry: 11,
  AfterEntry: 12,
  End: 13,
} as const;
type Position = (typeof At)[keyof typeof At];

class Splitter {
  peak = 0;
  private at: Position = At.Bom;
  private bomSeen = 0;
  /** Bytes of the chunks before the current one, for error messages. */
  private offset = 0;
  private readonly value = new ValueEnd();
  private ready: StreamedEntry | null = null;
  private entryKey = false;
  private seenEntry = false;
  private entryCount = 0;

  // Where what is being collected starts in the current chunk (-1: nothing), and what earlier chunks gave of it.
  private skeletonFrom = -1;
  private skeleton: Buffer[] = [];
  private skeletonBytes = 0;
  private keyFrom = -1;
  private key: Buffer[] = [];
  private keyBytes = 0;
  private entryFrom = -1;
  private entry: Buffer[] = [];
  /** The element's raw size so far, kept or not. */
  private entryBytes = 0;
  /** What `entry` holds of it. */
  private entryHeld = 0;

  constructor(private readonly limits: SearchsetLimits) {}

  take(): StreamedEntry | null {
    const ready = this.ready;
    this.ready = null;
    return ready;
  }

  /** Reads `bytes` from `i` until an element is complete (then `take()` has it) or to the chunk's end. */
  feed(bytes: Buffer, i: number): number {
    const n = bytes.length;
    while (i < n) {
      const at = this.at;
      if (at === At.InEntry || at === At.InValue || at === At.InKey) {
        const end = this.value.scan(bytes, i);
        if (end < 0) return n;
        i = end;
        if (at === At.InKey) {
          this.completeKey(bytes, end);
          this.at = At.Colon;
        } else if (at === At.InValue) this.at = At.AfterValue;
        else {
          this.completeEntry(bytes, end);
          this.at = At.AfterEntry;
          return end;
        }
        continue;
      }
      const c = bytes[i]!;
      if (at === At.Bom) {
        // A leading byte order mark is allowed, as fetch's response.json() allows it.
        if (this.bomSeen === 0 && c !== UTF8_BOM[0]) {
          this.at = At.Start;
          continue;
        }
        if (c !== UTF8_BOM[this.bomSeen]) throw this.malformed(i, 'an incomplete byte order mark');
        i++;
        if (++this.bomSeen === UTF8_BOM.length) this.at = At.Start;
        continue;
      }
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        i++;
        continue;
      }
      switch (at) {
        case At.Start:
          if (c !== OPEN_OBJECT) throw this.malformed(i, 'the page is not a JSON object');
          this.skeletonFrom = i;
          this.at = At.KeyOrClose;
          break;
        case At.KeyOrClose:
        case At.Key:
          if (c === CLOSE_OBJECT && at === At.KeyOrClose) this.closeObject(bytes, i);
          else if (c === QUOTE) {
            this.value.begin(c);
            this.keyFrom = i;
            this.at = At.InKey;
          } else throw this.malformed(i, 'a member name was expected');
          break;
        case At.Colon:
          if (c !== COLON) throw this.malformed(i, '":" was expected');
          this.at = At.Value;
          break;
        case At.Value:
          if (this.entryKey) this.openEntries(bytes, i);
          else if (this.value.begin(c)) this.at = At.InValue;
          else throw this.malformed(i, 'a value was expected');
          break;
        case At.AfterValue:
          if (c === COMMA) this.at = At.Key;
          else if (c === CLOSE_OBJECT) this.closeObject(bytes, i);
          else throw this.malformed(i, '"," or "}" was expected');
          break;
        case At.EntryOrClose:
        case At.Entry:
          if (c === CLOSE_ARRAY && at === At.EntryOrClose) this.closeEntries(i);
          else if (this.value.begin(c)) {
            this.entryFrom = i;
            this.at = At.InEntry;
          } else throw this.malformed(i, 'an element of "entry" was expected');
          break;
        case At.AfterEntry:
          if (c === COMMA) this.at = At.Entry;
          else if (c === CLOSE_ARRAY) this.closeEntries(i);
          else throw this.malformed(i, '"," or "]" was expected in "entry"');
          break;
        default:
          throw this.malformed(i, 'something follows the top-level object');
      }
      i++;
    }
    return n;
  }

  /** Keeps what the chunk gave of whatever is being collected: the next chunk continues it from its first byte. */
  endChunk(bytes: Buffer): void {
    const n = bytes.length;
    if (this.skeletonFrom >= 0) this.keep(bytes.subarray(this.skeletonFrom, n));
    if (this.keyFrom >= 0) {
      // Also in the skeleton, whose limit therefore bounds it.
      this.key.push(Buffer.from(bytes.subarray(this.keyFrom, n)));
      this.keyBytes += n - this.keyFrom;
    }
    if (this.entryFrom >= 0) {
      this.entryBytes += n - this.entryFrom;
      if (this.entryBytes <= this.limits.maxEntryBytes) {
        this.entry.push(Buffer.from(bytes.subarray(this.entryFrom, n)));
        this.entryHeld += n - this.entryFrom;
      } else {
        this.entry = []; // oversized: from here on only counted
        this.entryHeld = 0;
      }
    }
    this.skeletonFrom = this.skeletonFrom >= 0 ? 0 : -1;
    this.keyFrom = this.keyFrom >= 0 ? 0 : -1;
    this.entryFrom = this.entryFrom >= 0 ? 0 : -1;
    this.notePeak(this.entryHeld);
    this.offset += n;
  }

  /** At the source's end: the top-level object without `entry`. */
  finish(): Record<string, unknown> {
    if (this.at !== At.End) throw this.malformed(0, 'the page ends before its top-level object does');
    let skeleton: Record<string, unknown>;
    try {
      skeleton = JSON.parse(Buffer.concat(this.skeleton, this.skeletonBytes).toString('utf8')) as typeof skeleton;
    } catch (error) {
      throw new MalformedBundle(`the page outside "entry" is not JSON: ${(error as Error).message}`);
    }
    delete skeleton.entry; // an empty array stood in for it
    return skeleton;
  }

  private completeKey(bytes: Buffer, end: number): void {
    const last = bytes.subarray(this.keyFrom, end);
    const size = this.keyBytes + last.length;
    this.entryKey = false;
    if (size <= LONGEST_ENTRY_KEY) {
      const raw = this.key.length === 0 ? last : Buffer.concat([...this.key, last], size);
      try {
        this.entryKey = JSON.parse(raw.toString('utf8')) === 'entry';
      } catch {
        throw this.malformed(end, 'a member name is not a JSON string');
      }
    }
    this.keyFrom = -1;
    this.key = [];
    this.keyBytes = 0;
  }

  /** At `entry`'s `[`: the skeleton gets `[]` in its place, parsed as valid JSON and then deleted. */
  private openEntries(bytes: Buffer, i: number): void {
    if (this.seenEntry) throw this.malformed(i, 'a second "entry" member');
    if (bytes[i] !== OPEN_ARRAY) throw this.malformed(i, '"entry" is not an array');
    this.seenEntry = true;
    this.keep(bytes.subarray(this.skeletonFrom, i));
    this.keep(EMPTY_ARRAY);
    this.skeletonFrom = -1;
    this.at = At.EntryOrClose;
  }

  private closeEntries(i: number): void {
    this.skeletonFrom = i + 1;
    this.at = At.AfterValue;
  }

  private closeObject(bytes: Buffer, i: number): void {
    this.keep(bytes.subarray(this.skeletonFrom, i + 1));
    this.skeletonFrom = -1;
    this.at = At.End;
  }

  private completeEntry(bytes: Buffer, end: number): void {
    const last = bytes.subarray(this.entryFrom, end);
    const size = this.entryBytes + last.length;
    const index = this.entryCount++;
    if (size > this.limits.maxEntryBytes) this.ready = { kind: 'oversized', bytes: size };
    else {
      this.notePeak(size);
      const raw = this.entry.length === 0 ? last : Buffer.concat([...this.entry, last], size);
      try {
        this.ready = { kind: 'entry', value: JSON.parse(raw.toString('utf8')), bytes: size };
      } catch (error) {
        throw new MalformedBundle(`entry ${index} is not JSON: ${(error as Error).message}`);
      }
    }
    this.entryFrom = -1;
    this.entry = [];
    this.entryBytes = 0;
    this.entryHeld = 0;
  }

  /** Adds to the skeleton, refusing one larger than its limit before copying any of the excess. */
  private keep(part: Buffer): void {
    if (this.skeletonBytes + part.length > this.limits.maxOtherBytes)
      throw new MalformedBundle(`the page outside "entry" exceeds ${this.limits.maxOtherBytes} bytes`);
    this.skeleton.push(Buffer.from(part));
    this.skeletonBytes += part.length;
  }

  private notePeak(entryBytes: number): void {
    this.peak = Math.max(this.peak, this.skeletonBytes + this.keyBytes + entryBytes);
  }

  private malformed(i: number, problem: string): MalformedBundle {
    return new MalformedBundle(`${problem} (at byte ${this.offset + i})`);
  }
}
