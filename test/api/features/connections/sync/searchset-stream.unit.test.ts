import { expect } from 'chai';
import {
  MalformedBundle,
  readSearchset,
  type SearchsetLimits,
  type StreamedEntry,
} from '../../../../../api/src/features/connections/sync/searchset-stream.js';
import { seededRandom } from '../../../../../testkit/synthetic-brands.js';

const MiB = 1024 * 1024;
const ROOMY: SearchsetLimits = { maxEntryBytes: MiB, maxOtherBytes: MiB };

type Random = () => number;

/** `bytes` cut at `cuts` (ascending offsets), as views into one larger buffer (so byteOffset is never 0). */
function cut(bytes: Buffer, cuts: number[]): Uint8Array[] {
  const backing = new Uint8Array(bytes.length + 8);
  backing.set(bytes, 3);
  const view = backing.subarray(3, 3 + bytes.length);
  const bounds = [0, ...cuts, bytes.length];
  return bounds.slice(1).map((end, i) => view.subarray(bounds[i], end));
}

const everyByte = (bytes: Buffer) =>
  cut(
    bytes,
    Array.from({ length: Math.max(bytes.length - 1, 0) }, (_, i) => i + 1),
  );

/** An async source over `chunks` that counts how many were pulled and whether it was closed. */
function counted(chunks: Iterable<Uint8Array>) {
  const state = { pulled: 0, closed: false };
  async function* generate() {
    try {
      for (const chunk of chunks) {
        state.pulled++;
        yield chunk;
      }
    } finally {
      state.closed = true;
    }
  }
  return { source: generate(), state };
}

async function readAll(chunks: Iterable<Uint8Array>, limits = ROOMY) {
  const page = readSearchset(counted(chunks).source, limits);
  const entries: StreamedEntry[] = [];
  for await (const entry of page.entries) entries.push(entry);
  return { entries, rest: page.rest() };
}

/** What JSON.parse makes of the page, with each entry's raw size taken from the element texts it was written from. */
function parsedAs(text: string, elements: string[] | null = null) {
  const { entry, ...rest } = JSON.parse(text.replace(/^\uFEFF/, ''));
  const values: unknown[] = entry ?? [];
  return {
    entries: values.map((value, i) => ({
      kind: 'entry',
      value,
      bytes: elements ? Buffer.byteLength(elements[i]!) : (undefined as unknown as number),
    })),
    rest,
  };
}

async function expectEquivalent(text: string, chunks: Uint8Array[], elements: string[] | null, limits = ROOMY) {
  const read = await readAll(chunks, limits);
  const expected = parsedAs(text, elements);
  const entries = elements ? read.entries : read.entries.map((e) => ({ ...e, bytes: undefined }));
  expect(entries, `${JSON.stringify(text)} cut ${chunks.map((c) => c.length).join('+')}`).to.deep.equal(
    expected.entries,
  );
  expect(read.rest).to.deep.equal(expected.rest);
}

async function failure(chunks: Iterable<Uint8Array>, limits = ROOMY) {
  const page = readSearchset(counted(chunks).source, limits);
  const entries: StreamedEntry[] = [];
  try {
    for await (const entry of page.entries) entries.push(entry);
    page.rest();
  } catch (error) {
    return { error, entries };
  }
  return { error: null, entries };
}

// JSON written by hand, so that escapes, whitespace and key spellings JSON.stringify never produces are covered.
const HANDWRITTEN = [
  String.raw`{"resourceType":"Bundle","link":[{"relation":"next","url":"https://x/a?b=1"}],"entry":[{"resource":{"entry":[{"entry":1}]}},{"s":"a\\\\"},{"s":"\\\""},"\"","\\",{"u":"\u00e9\ud83d\ude00\u2028\/"}],"total":3}`,
  `{"entry":[{"m":"é😀中ß","entry":"entry"},"😀"],"meta":{"entry":[{"entry":{}}],"tag":"中"},"link":[]}`,
  ` \t{ \r\n"resourceType" :\t"Bundle" ,"entry"\n:\n[ \n{ "a" : [ 1 , 2 ] } \t, "x" , 12.5e3 , -0 , true , false , null , [ ] , { } \n] \n, "total":\t3 }\n\n`,
  `{"entry":[]}`,
  `{}`,
  `{ }`,
  `{"resourceType":"Bundle","type":"searchset","total":0}`,
  String.raw`{"entr\u0079":[{"a":1}],"n":"entry","\u0065ntry ":2}`,
  String.raw`{"a":"\\","q\"\\":0,"entry":[{"a\"":"\\\\\"\\"},["\\\\",["\\\"\\\\\""]],{"":""}],"b":"\"entry\":["}`,
  `\uFEFF{"entry":[[[[{"deep":[[{}]]}]]]]}`,
  `{"entry":[1,2.5,-3e-2,"x",null],"z":{"entry":[]}}`,
];

const WHITESPACE = ['', '', '', '', ' ', '\n  ', '\t', '\r\n'];
const KEYS = ['entry', 'resource', 'search', 'id', 'a"b', 'back\\slash', 'é', ''];
const UNITS = ['a', 'b', 'z', ' ', '"', '\\', '/', 'é', '中', '😀', '\n', '\u0001', '\u2028', 'u', '0'];

function pick<T>(random: Random, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)]!;
}

function randomString(random: Random): string {
  const length = random() < 0.05 ? Math.floor(random() * 3000) : Math.floor(random() * 12);
  return Array.from({ length }, () => pick(random, UNITS)).join('');
}

function randomValue(random: Random, depth = 0): unknown {
  const roll = random();
  if (depth > 4 || roll < 0.4) {
    const scalar = random();
    if (scalar < 0.5) return randomString(random);
    if (scalar < 0.8) return Math.round((random() - 0.5) * 1e6) / (random() < 0.5 ? 1 : 1000);
    return pick(random, [true, false, null]);
  }
  const size = Math.floor(random() * 5);
  if (roll < 0.75)
    return Object.fromEntries(Array.from({ length: size }, () => [pick(random, KEYS), randomValue(random, depth + 1)]));
  return Array.from({ length: size }, () => randomValue(random, depth + 1));
}

/** JSON text with random whitespace and random \uXXXX escapes (never splitting a surrogate pair from its half). */
function write(value: unknown, random: Random): string {
  const ws = () => pick(random, WHITESPACE);
  if (typeof value === 'string') return writeString(value, random);
  if (Array.isArray(value)) return `[${ws()}${value.map((v) => write(v, random)).join(`${ws()},${ws()}`)}${ws()}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${ws()}${writeString(k, random)}${ws()}:${ws()}${write(v, random)}${ws()}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

function writeString(text: string, random: Random): string {
  let out = '"';
  for (const unit of text) {
    if (unit === '"' || unit === '\\') out += `\\${unit}`;
    else if (unit < ' ' || random() < 0.1)
      out += [...Array(unit.length).keys()]
        .map((i) => `\\u${unit.charCodeAt(i).toString(16).padStart(4, '0')}`)
        .join('');
    else if (unit === '/' && random() < 0.5) out += '\\/';
    else out += unit;
  }
  return `${out}"`;
}

/** A searchset with its members in random order (`entry` sometimes absent) and the texts of its elements. */
function randomBundle(random: Random, maxEntries: number): { text: string; elements: string[] } {
  const ws = () => pick(random, WHITESPACE);
  const elements = Array.from({ length: Math.floor(random() * (maxEntries + 1)) }, () =>
    write({ fullUrl: randomString(random), resource: randomValue(random), entry: randomValue(random, 3) }, random),
  );
  const members: [string, string][] = [
    ['resourceType', '"Bundle"'],
    ['total', String(elements.length)],
    ['link', write([{ relation: 'next', url: randomString(random) }], random)],
    ['meta', write({ entry: randomValue(random, 2), tag: randomString(random) }, random)],
  ];
  if (random() < 0.9) members.push(['entry', `[${ws()}${elements.join(`${ws()},${ws()}`)}${ws()}]`]);
  else elements.length = 0;
  members.sort(() => random() - 0.5);
  const body = members.map(([k, v]) => `${ws()}${writeString(k, random)}${ws()}:${ws()}${v}${ws()}`).join(',');
  return { text: `${ws()}{${body}}${ws()}`, elements };
}

function randomCuts(random: Random, length: number): number[] {
  const count = Math.floor(random() * Math.min(length, 40));
  return [...new Set(Array.from({ length: count }, () => Math.floor(random() * length)))].sort((a, b) => a - b);
}

describe('sync: reading a searchset page as a stream', () => {
  it('reads what JSON.parse reads, whatever byte a chunk ends at (small pages, every position)', async () => {
    const random = seededRandom(7);
    const small = Array.from({ length: 25 }, () => randomBundle(random, 3)).filter((b) => b.text.length < 600);
    const pages: { text: string; elements: string[] | null }[] = [
      ...HANDWRITTEN.map((text) => ({ text, elements: null })),
      ...small,
    ];
    for (const { text, elements } of pages) {
      const bytes = Buffer.from(text);
      await expectEquivalent(text, [bytes], elements);
      await expectEquivalent(text, everyByte(bytes), elements);
      for (let at = 0; at <= bytes.length; at++) await expectEquivalent(text, cut(bytes, [at]), elements);
    }
  });

  it('reads what JSON.parse reads on larger generated pages cut at random positions', async () => {
    const random = seededRandom(42);
    for (let round = 0; round < 300; round++) {
      const { text, elements } = randomBundle(random, 30);
      const bytes = Buffer.from(text);
      await expectEquivalent(text, cut(bytes, randomCuts(random, bytes.length)), elements);
    }
  });

  it('counts an entry raw, from its first byte to its last, whitespace around it not included', async () => {
    const text = '{"entry":[ {"a" : 1} ,\n"é" ,\t-12\r\n]}';
    const { entries } = await readAll([Buffer.from(text)]);
    expect(entries).to.deep.equal([
      { kind: 'entry', value: { a: 1 }, bytes: 9 },
      { kind: 'entry', value: 'é', bytes: 4 },
      { kind: 'entry', value: -12, bytes: 3 },
    ]);
  });

  it('keeps its own copy of what it collects, so a source may reuse its buffer for the next chunk', async () => {
    const { text, elements } = randomBundle(seededRandom(3), 40);
    const bytes = Buffer.from(text);
    const reused = Buffer.alloc(97);
    async function* refilled() {
      for (let at = 0; at < bytes.length; at += reused.length) {
        const length = bytes.copy(reused, 0, at, at + reused.length);
        yield reused.subarray(0, length);
        reused.fill(0x5d); // what a reused buffer holds next has nothing to do with this chunk
      }
    }
    const page = readSearchset(refilled(), ROOMY);
    const entries: StreamedEntry[] = [];
    for await (const entry of page.entries) entries.push(entry);
    expect({ entries, rest: page.rest() }).to.deep.equal(parsedAs(text, elements));
  });

  it('skips an entry larger than maxEntryBytes, counting its bytes, and yields the others', async () => {
    const small = '{"resource":{"id":"s"}}';
    const bigObject = `{"resource":{"id":"b","data":"${'A'.repeat(3 * MiB)}","entry":[1]}}`;
    const bigString = `"${'\\"'.repeat(MiB)}"`; // one string whose every other byte looks like its end
    const text = `{"entry":[${small},${bigObject},${small},${bigString},${small}],"link":[{"relation":"self"}]}`;
    const bytes = Buffer.from(text);
    const chunks = cut(
      bytes,
      Array.from({ length: Math.floor(bytes.length / 65_537) }, (_, i) => (i + 1) * 65_537),
    );
    const { entries, rest } = await readAll(chunks, { maxEntryBytes: MiB, maxOtherBytes: 1000 });
    const entry = { kind: 'entry', value: { resource: { id: 's' } }, bytes: small.length };
    expect(entries).to.deep.equal([
      entry,
      { kind: 'oversized', bytes: bigObject.length },
      entry,
      { kind: 'oversized', bytes: bigString.length },
      entry,
    ]);
    expect(rest).to.deep.equal({ link: [{ relation: 'self' }] });
  });

  it('keeps an entry of exactly maxEntryBytes and skips one a byte larger, in one chunk or in many', async () => {
    const exact = `"${'x'.repeat(98)}"`;
    const text = `{"entry":[${exact},"${'x'.repeat(99)}"]}`;
    for (const chunks of [[Buffer.from(text)], everyByte(Buffer.from(text))]) {
      const { entries } = await readAll(chunks, { maxEntryBytes: 100, maxOtherBytes: 100 });
      expect(entries).to.deep.equal([
        { kind: 'entry', value: 'x'.repeat(98), bytes: 100 },
        { kind: 'oversized', bytes: 101 },
      ]);
    }
  });

  it('streams a 50 MiB entry past in bounded memory, read no further than the entry asked for', async () => {
    const CHUNK = 64 * 1024;
    const head = Buffer.from('{"resourceType":"Bundle","entry":[{"resource":{"content":{"data":"');
    const tail = Buffer.from('"}}},{"resource":{"id":"after"}},{"resource":{"id":"last"}}],"total":3}');
    const body = Buffer.alloc(CHUNK, 'QUJD'); // base64, as an attachment's data is
    const bodyChunks = (50 * MiB) / CHUNK;
    const pulledAt: number[] = [];
    const { source, state } = counted(
      (function* () {
        yield head;
        for (let i = 0; i < bodyChunks; i++) yield body; // generated, never held together
        yield tail;
      })(),
    );
    const page = readSearchset(source, { maxEntryBytes: MiB, maxOtherBytes: 4096 });
    const entries: StreamedEntry[] = [];
    for await (const entry of page.entries) {
      entries.push(entry);
      pulledAt.push(state.pulled);
    }
    const hugeBytes = head.length - head.indexOf('{"resource"') + 50 * MiB + tail.indexOf('},') + 1;
    expect(entries.map((e) => (e.kind === 'entry' ? e.value : e))).to.deep.equal([
      { kind: 'oversized', bytes: hugeBytes },
      { resource: { id: 'after' } },
      { resource: { id: 'last' } },
    ]);
    // Each entry was yielded as soon as the chunk holding its end arrived (the last one: the tail chunk).
    expect(pulledAt).to.deep.equal([bodyChunks + 2, bodyChunks + 2, bodyChunks + 2]);
    // What the reader held at most: the limit's worth of the huge entry before it gave up on it, and the skeleton.
    expect(page.heldPeak()).to.be.at.most(MiB + 4096);
    expect(page.rest()).to.deep.equal({ resourceType: 'Bundle', total: 3 });
  });

  it('holds a whole entry while it collects it (what heldPeak bounds is real)', async () => {
    const data = 'x'.repeat(900 * 1024);
    const text = `{"entry":[{"data":"${data}"}]}`;
    const page = readSearchset(counted(cut(Buffer.from(text), [1000, 300_000, 600_000])).source, ROOMY);
    for await (const entry of page.entries) expect(entry).to.include({ kind: 'entry' });
    expect(page.heldPeak()).to.be.at.least(data.length);
  });

  it('pulls the next chunk only when the next entry is asked for, and closes the source when the reader stops', async () => {
    const chunks = [
      Buffer.from('{"resourceType":"Bundle","entry":['),
      ...Array.from({ length: 100 }, (_, i) => Buffer.from(`${i ? ',' : ''}{"resource":{"id":"${i}"}}`)),
      Buffer.from('],"total":100}'),
    ];
    const { source, state } = counted(chunks);
    const page = readSearchset(source, ROOMY);
    expect(state.pulled).to.equal(0);
    const entries = page.entries[Symbol.asyncIterator]();
    expect((await entries.next()).value).to.deep.include({ value: { resource: { id: '0' } } });
    expect(state.pulled).to.equal(2);
    for (let i = 1; i < 50; i++) await entries.next();
    expect(state.pulled).to.equal(51);
    await entries.return!();
    expect(state).to.deep.equal({ pulled: 51, closed: true });
    expect(() => page.rest()).to.throw(/needs the entries read to their end/);
  });

  it('closes the source when the page turns out malformed', async () => {
    const { source, state } = counted([Buffer.from('{"entry":[1,'), Buffer.from('x]}'), Buffer.from(' ')]);
    const page = readSearchset(source, ROOMY);
    const read: unknown[] = [];
    const error = await (async () => {
      for await (const entry of page.entries) read.push(entry);
    })().catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MalformedBundle);
    expect(read).to.have.length(1);
    expect(state).to.deep.equal({ pulled: 2, closed: true });
  });

  const MALFORMED: [string, string][] = [
    ['', 'empty'],
    ['   ', 'only whitespace'],
    ['[]', 'an array'],
    ['"Bundle"', 'a string'],
    ['null', 'a literal'],
    ['{"entry":[1,2]', 'truncated after entry'],
    ['{"entry":[1,2', 'truncated inside entry'],
    ['{"entry":[{"a":1}', 'truncated inside an element'],
    ['{"a":"x', 'truncated in a string'],
    [String.raw`{"a":"x\"}`, 'a string whose closing quote is escaped'],
    ['{"entry":[1,2]} x', 'trailing garbage'],
    ['{}{}', 'two objects'],
    ['{"entry":{}}', 'entry an object'],
    ['{"entry":null}', 'entry null'],
    ['{"entry":"[]"}', 'entry a string'],
    ['{"entry":[],"entry":[]}', 'a second entry'],
    [String.raw`{"entry":[],"entr\u0079":[]}`, 'a second entry spelled with an escape'],
    ['{"entry":[{"a":}]}', 'a malformed element'],
    ['{"entry":[tru]}', 'a misspelled literal'],
    ['{"entry":[1,]}', 'a trailing comma in entry'],
    ['{"entry":[,1]}', 'a leading comma in entry'],
    ['{"entry":[1 2]}', 'a missing comma in entry'],
    ['{"entry":[{"a":1}}]}', 'an extra brace in entry'],
    ['{"entry":[{"a":[1}]]}', 'crossed brackets in an element'],
    ['{"entry":[{"a":"\u0001"}]}', 'a raw control character in an element string'],
    ['{"a":tru,"entry":[]}', 'a misspelled literal outside entry'],
    ['{"a" 1}', 'a missing colon'],
    ['{"a":1,}', 'a trailing comma'],
    ['{,"a":1}', 'a leading comma'],
    ['{"a":1 "b":2}', 'a missing comma'],
    ['{a:1}', 'an unquoted key'],
    [String.raw`{"a\x":1}`, 'a bad escape in a key'],
    ['{"meta":{"x":[1}]}', 'crossed brackets outside entry'],
    ['\uFEFF\uFEFF{}', 'two byte order marks'],
  ];

  for (const [text, what] of MALFORMED)
    it(`refuses a page that is not a JSON object with an array for entry: ${what}`, async () => {
      const bytes = Buffer.from(text);
      for (const chunks of [[bytes], everyByte(bytes)]) {
        const { error } = await failure(chunks);
        expect(error, JSON.stringify(text)).to.be.instanceOf(MalformedBundle);
        expect((error as Error).name).to.equal('MalformedBundle');
      }
    });

  it('refuses a cut byte order mark', async () => {
    const { error } = await failure([Buffer.from([0xef, 0xbb]), Buffer.from('{}')]);
    expect(error).to.be.instanceOf(MalformedBundle);
  });

  it('yields the entries before the point where a page turns out truncated', async () => {
    const { error, entries } = await failure(everyByte(Buffer.from('{"entry":[1,{"b":2},')));
    expect(error).to.be.instanceOf(MalformedBundle);
    expect(entries.map((e) => (e.kind === 'entry' ? e.value : e))).to.deep.equal([1, { b: 2 }]);
  });

  it('refuses a page whose members outside entry exceed maxOtherBytes, even in one chunk', async () => {
    const text = `{"entry":[{"a":"${'y'.repeat(5000)}"}],"meta":{"note":"${'x'.repeat(2000)}"}}`;
    const limits = { maxEntryBytes: MiB, maxOtherBytes: 1000 };
    for (const chunks of [[Buffer.from(text)], cut(Buffer.from(text), [100, 5200, 6000])]) {
      const { error, entries } = await failure(chunks, limits);
      expect(error)
        .to.be.instanceOf(MalformedBundle)
        .and.have.property('message')
        .match(/exceeds 1000 bytes/);
      expect(entries).to.have.length(1); // the entry itself does not count against the skeleton
    }
  });
});
