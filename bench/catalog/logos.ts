// Benchmark of logo pre-rendering: distinct 1024 × 1024 PNG logos through the operator's storeLogos (data:
// URL decode, sniffing, hashing, existence checks, sharp rendering into 4 sizes × 2 formats, stores) with the
// default concurrency. Three stages, interleaved over rounds (medians reported), so drift on a shared machine
// hits each alike: storeLogos into in-memory object storage (the rendering pipeline: the target), into file
// object storage in a temporary directory (adds the driver's durable writes: two fsync'd files per object),
// and the renderer alone; then a re-run over stored logos (everything reused, nothing rendered).
// `node dist/bench/catalog/logos.js` (BENCH_LOGOS=<n> per round, BENCH_ROUNDS=<n>).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { LOGO_SIZES } from '#core/catalog/model.js';
import { FileObjectStorage, type ObjectStorage, type StoredObject } from '#core/object-storage/index.js';
import {
  renderArtwork,
  renderCounters,
  storeLogos,
  type LogoRequest,
  type LogoResults,
} from '../../operator/src/pipeline/logos.js';

const TARGET_PER_SECOND = 30;
const LOGOS = Number(process.env.BENCH_LOGOS ?? 80);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARM_UP = 8;

/** Object storage in memory: the rendering pipeline without a storage backend's cost. */
class MemoryStorage implements ObjectStorage {
  private readonly objects = new Map<string, StoredObject>();
  async put(key: string, body: Buffer, contentType: string) {
    this.objects.set(key, { body, contentType });
  }
  async get(key: string) {
    return this.objects.get(key) ?? null;
  }
  async exists(key: string) {
    return this.objects.has(key);
  }
  async delete(key: string) {
    this.objects.delete(key);
  }
  publicUrl(key: string) {
    return key;
  }
}

/** A logo-like 1024² PNG: gradient disc, rounded plate, lettering; each one different (no reuse). */
async function logo(i: number): Promise<Buffer> {
  const hue = (i * 47) % 360;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1024" height="1024">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${hue},70%,45%)"/><stop offset="1" stop-color="hsl(${(hue + 60) % 360},70%,35%)"/></linearGradient></defs>
    <circle cx="512" cy="512" r="${420 + (i % 60)}" fill="url(#g)"/><rect x="262" y="330" width="500" height="364" rx="64" fill="#fff" opacity="0.85"/>
    <text x="512" y="580" font-family="sans-serif" font-size="190" font-weight="bold" text-anchor="middle" fill="hsl(${hue},60%,25%)">H${i}</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; cpuSeconds: number; value: T }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - started) / 1000, cpuSeconds: (used.user + used.system) / 1e6, value };
}

type Timing = { seconds: number; cpuSeconds: number };
const median = (runs: Timing[]) => [...runs].sort((a, b) => b.seconds - a.seconds)[Math.floor(runs.length / 2)]!;

export async function runLogoBench() {
  const cores = os.availableParallelism();
  const inputs = await Promise.all(Array.from({ length: LOGOS + WARM_UP }, (_, i) => logo(i)));
  const requests = inputs.map((bytes, i): LogoRequest => ({
    brandId: `b${i}`,
    logoUrl: `data:image/png;base64,${bytes.toString('base64')}`,
    portalUrl: null,
    fhirBaseUrl: `https://fhir${i}.example.org`,
  }));
  const measured = requests.slice(0, LOGOS);
  const dirs: string[] = [];
  const fileStorage = async () => {
    dirs.push(await mkdtemp(path.join(os.tmpdir(), 'portico-bench-logos-')));
    return new FileObjectStorage(dirs[dirs.length - 1]!);
  };
  const checked = async (storage: ObjectStorage) => {
    const result = await storeLogos(storage, measured);
    if (result.failed > 0 || result.artworks.rendered !== LOGOS)
      throw new Error(`rendering failed: ${result.errors.join('; ')}`);
    return result;
  };
  try {
    await storeLogos(new MemoryStorage(), requests.slice(LOGOS)); // warm-up: other logos
    const stages: Record<'memory' | 'file' | 'alone', Timing[]> = { memory: [], file: [], alone: [] };
    let lastFile: ObjectStorage | undefined;
    let pipelines = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const before = renderCounters.pipelines;
      stages.memory.push(await timed(() => checked(new MemoryStorage())));
      pipelines = renderCounters.pipelines - before;
      lastFile = await fileStorage();
      const storage = lastFile;
      stages.file.push(await timed(() => checked(storage)));
      let next = 0;
      stages.alone.push(
        await timed(() =>
          Promise.all(
            Array.from({ length: cores }, async () => {
              while (next < LOGOS) await renderArtwork(inputs[next++]!, 'png', LOGO_SIZES);
            }),
          ),
        ),
      );
    }
    const again: Timing & { value: LogoResults } = await timed(() => storeLogos(lastFile!, measured));
    const bytes = inputs.slice(0, LOGOS).reduce((sum, b) => sum + b.length, 0);
    const row = (stage: string, t: Timing, target = '', verdict = '') => ({
      stage,
      'logos/s': round(LOGOS / t.seconds),
      'CPU ms/logo': round((t.cpuSeconds * 1000) / LOGOS),
      'cores busy': round(t.cpuSeconds / t.seconds, 2),
      target,
      verdict,
    });
    const memory = median(stages.memory);
    const memoryRate = LOGOS / memory.seconds;
    return {
      cores,
      loadAverage: os.loadavg()[0]!,
      /** What the cores give when the process has them to itself: rendering is CPU-bound. */
      ceiling: (cores * LOGOS) / memory.cpuSeconds,
      sharpConcurrency: sharp.concurrency(),
      inputKb: round(bytes / LOGOS / 1024),
      sharpCallsPerLogo: round(pipelines / LOGOS),
      rows: [
        row(
          'storeLogos → memory storage (rendering pipeline)',
          memory,
          `≥ ${TARGET_PER_SECOND}/s`,
          memoryRate >= TARGET_PER_SECOND ? 'met' : 'MISSED',
        ),
        row("storeLogos → file storage (+ fsync'd writes)", median(stages.file)),
        row('renderArtwork alone', median(stages.alone)),
        row(
          're-run over stored logos (all reused)',
          again,
          'renders 0',
          again.value.artworks.rendered === 0 ? 'met' : 'MISSED',
        ),
      ],
    };
  } finally {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await runLogoBench();
  console.log(
    `logo rendering: ${LOGOS} distinct 1024×1024 PNG logos (${result.inputKb} KB each) → ${LOGO_SIZES.length} sizes × PNG + WebP; median of ${ROUNDS} interleaved rounds`,
  );
  console.log(
    `node ${process.version}, ${result.cores} cores (default concurrency ${result.cores}), sharp concurrency ${result.sharpConcurrency}, ${result.sharpCallsPerLogo} sharp pipelines per logo`,
  );
  console.table(result.rows);
  console.log(
    `CPU-bound ceiling on ${result.cores} idle cores: ${round(result.ceiling)} logos/s (cores / CPU seconds per logo); 1-minute load average at the end: ${round(result.loadAverage, 2)}`,
  );
  if (result.loadAverage > result.cores)
    console.log(
      `the machine was busy (load ${round(result.loadAverage, 1)} on ${result.cores} cores): logos/s is what this process got, not what the cores give`,
    );
}
