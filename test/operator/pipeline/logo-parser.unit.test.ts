// The artwork parser's worker threads: untrusted bytes are parsed off the event loop, a parse that overruns
// its deadline is stopped and counted as `parse-timeout` while the event loop keeps running, the pool recovers
// with a fresh worker, and closing it leaves no thread behind. A stand-in worker (stalling-parse-worker.ts)
// busy-loops on demand, as catastrophic backtracking did; nothing here measures time.
import { expect } from 'chai';
import nock from 'nock';
import {
  closeSharedArtworkParser,
  sharedArtworkParser,
  storeLogos,
  WorkerArtworkParser,
  type LogoRequest,
} from '../../../operator/src/pipeline/logos.js';
import { LogoError } from '../../../operator/src/pipeline/logos/errors.js';
import type { ParsePoolOptions } from '../../../operator/src/pipeline/logos/parse-pool.js';
import { ico, png, tempStorage } from './logo-fixtures.js';

const STALLING_WORKER = new URL('./stalling-parse-worker.js', import.meta.url);
const SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>',
);
const dataUrl = (bytes: Buffer | string) => `data:text/plain;base64,${Buffer.from(bytes).toString('base64')}`;
let serial = 0;
const request = (logoUrl?: string, extra: Partial<LogoRequest> = {}): LogoRequest => ({
  brandId: `parsed${++serial}`,
  portalUrl: null,
  fhirBaseUrl: 'https://fhir.example.org/r4',
  ...(logoUrl !== undefined && { logoUrl }),
  ...extra,
});

/** Counts timer ticks while `work` runs: a blocked event loop would give one at most. */
async function ticksDuring<T>(work: Promise<T>): Promise<{ ticks: number; outcome: PromiseSettledResult<T> }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  try {
    const [outcome] = await Promise.allSettled([work]);
    return { ticks, outcome: outcome };
  } finally {
    clearInterval(timer);
  }
}

describe('operator: artwork parsing off the event loop', () => {
  const parsers: WorkerArtworkParser[] = [];
  const parser = (options: ParsePoolOptions = {}) => {
    const made = new WorkerArtworkParser({ workerUrl: STALLING_WORKER, ...options });
    parsers.push(made);
    return made;
  };
  afterEach(async () => {
    nock.cleanAll();
    await Promise.all(parsers.splice(0).map((p) => p.close()));
  });

  it('stops a parse that overruns its deadline with parse-timeout while the event loop keeps ticking, then parses the next in a fresh worker', async () => {
    const stalling = parser({ size: 1, deadlineMs: 300 });
    const { ticks, outcome } = await ticksDuring(stalling.sniff(Buffer.from('stall, as a pathological pattern would')));
    expect(outcome.status).to.equal('rejected');
    const error = (outcome as PromiseRejectedResult).reason as LogoError;
    expect(error).to.be.instanceOf(LogoError);
    expect(error.reason).to.equal('parse-timeout');
    expect(ticks).to.be.greaterThan(3);
    expect(stalling.pool.counters).to.include({ timedOut: 1 });
    expect(await stalling.sniff(SVG)).to.equal('svg');
    expect(stalling.pool.counters).to.include({ started: 2 });
    expect(stalling.pool.workers).to.equal(1);
  });

  it('queues tasks beyond its size and runs them in order on reused workers', async () => {
    const pool = parser({ size: 2 });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2
          ? pool.sniff(SVG)
          : pool.iconLinks(Buffer.from(`<link rel=icon href=/${i}.png>`), new URL('https://a.example/')),
      ),
    );
    expect(results.filter((r) => r === 'svg')).to.have.length(6);
    expect(results[4]).to.deep.equal([{ url: 'https://a.example/4.png', size: 0 }]);
    expect(pool.pool.counters.started).to.be.at.most(2);
  });

  it('answers a worker that dies with parse-failed, and refuses what it cannot parse with the parser’s own reason', async () => {
    const pool = parser({ size: 1 });
    const crashed = await pool.sniff(Buffer.from('crash now')).catch((error: unknown) => error);
    expect(crashed).to.be.instanceOf(LogoError).and.to.include({ reason: 'parse-failed' });
    const refused = await pool.sniff(Buffer.from('<html></html>')).catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(LogoError).and.to.include({ reason: 'unsupported-type' });
    const image = await pool.largestIcon(ico([{ png: await png(32) }]));
    expect(image).to.include({ kind: 'png', width: 32, height: 32 });
    expect(Buffer.isBuffer(image.kind === 'png' && image.bytes)).to.equal(true);
  });

  it('ends every worker on close, rejecting what was still waiting or running', async () => {
    const pool = parser({ size: 1, deadlineMs: 60_000 });
    const outcomes = Promise.allSettled([pool.sniff(Buffer.from('stall until closed')), pool.sniff(SVG)]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pool.pool.workers).to.equal(1);
    await pool.close();
    expect(pool.pool.workers).to.equal(0);
    for (const outcome of await outcomes) expect(outcome.status).to.equal('rejected');
    expect(await pool.sniff(SVG).catch((error: Error) => error.message)).to.match(/closed/);
  });

  it('counts logos and favicons whose parse overran as parse-timeout, like any other logo failure, and renders the rest', async () => {
    const { storage, remove } = await tempStorage();
    const settings = {
      parser: parser({ size: 1, deadlineMs: 300 }),
      limits: { maxBytes: 64 * 1024, timeoutMs: 2000, maxRedirects: 0 },
      sizes: [64] as const,
    };
    try {
      const logos = await storeLogos(
        storage,
        [request(dataUrl('stall in a data: URL')), request(dataUrl(SVG))],
        settings,
      );
      expect(logos).to.deep.include({ rendered: 1, failed: 1, reasons: { 'parse-timeout': 1 } });
      nock('https://stalling.example.org')
        .get('/')
        .reply(200, '<link rel=icon href=/icon.svg>')
        .get('/favicon.ico')
        .reply(404)
        .get('/icon.svg')
        .reply(200, 'stall in the linked icon');
      const site = { portalUrl: 'https://stalling.example.org/', fhirBaseUrl: 'https://stalling.example.org/r4' };
      const favicons = await storeLogos(storage, [request(undefined, site)], { ...settings, faviconFallback: true });
      expect(favicons).to.deep.include({ fallback: 0, failed: 0, reasons: { 'favicon:parse-timeout': 1 } });
      expect(nock.isDone()).to.equal(true);
    } finally {
      await remove();
    }
  });

  it('shares one pool in the process until it is closed', async () => {
    const shared = sharedArtworkParser() as WorkerArtworkParser;
    expect(sharedArtworkParser()).to.equal(shared);
    expect(await shared.sniff(SVG)).to.equal('svg');
    await closeSharedArtworkParser();
    expect(shared.pool.workers).to.equal(0);
    expect(sharedArtworkParser()).not.to.equal(shared);
    await closeSharedArtworkParser();
  });
});
