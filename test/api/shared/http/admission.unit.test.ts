// WriteAdmission (api/src/shared/http/admission.ts) on its own: a fixed number of writes work at once, the rest wait
// their turn in order and are refused, having run nothing, once they have waited too long. The work here is
// held by promises the test resolves, so every outcome is decided by order, not by the machine's speed.
import { expect } from 'chai';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Registry } from 'prom-client';
import { WriteAdmission } from '../../../../api/src/shared/http/admission.js';
import { AppError } from '../../../../api/src/shared/http/errors.js';

/** Work that runs until the test lets it finish. */
function held(log: string[], name: string): { work: () => Promise<string>; finish: () => void } {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    work: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
      return name;
    },
    finish,
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('http: the admission of writes', () => {
  it('runs at most `limit` writes at once and the waiting ones in the order they came', async () => {
    const admission = new WriteAdmission({ limit: 2, maxWaitMs: 60_000 });
    const log: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => held(log, name));
    const results = [a, b, c, d].map((w) => admission.run(w!.work));
    await turn();
    expect(log).to.deep.equal(['start a', 'start b']);
    expect(admission.load).to.deep.equal({ running: 2, waiting: 2 });
    b!.finish();
    await results[1];
    await turn();
    expect(log).to.deep.equal(['start a', 'start b', 'end b', 'start c']);
    a!.finish();
    c!.finish();
    d!.finish();
    expect(await Promise.all(results)).to.deep.equal(['a', 'b', 'c', 'd']);
    expect(log.filter((line) => line.startsWith('start'))).to.deep.equal(['start a', 'start b', 'start c', 'start d']);
  });

  it('refuses a write that waited longer than maxWaitMs with 503 and Retry-After, without running it', async () => {
    const registry = new Registry();
    const admission = new WriteAdmission({ limit: 1, maxWaitMs: 20, registry });
    const log: string[] = [];
    const holder = held(log, 'holder');
    const running = admission.run(holder.work);
    const refused = await admission.run(held(log, 'late').work).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(AppError);
    expect(refused).to.include({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    expect((refused as AppError).headers).to.deep.equal({ 'Retry-After': '2' });
    expect(log).to.deep.equal(['start holder']);
    expect(await registry.getSingleMetricAsString('portico_write_admission_refused_total')).to.match(/ 1$/m);
    holder.finish();
    await running;
    expect(admission.load).to.deep.equal({ running: 0, waiting: 0 });
  });

  it('refuses at once a write whose request has no time left to wait (startBy passed), without running it', async () => {
    const admission = new WriteAdmission({ limit: 4, maxWaitMs: 60_000 });
    let ran = false;
    const refused = await admission
      .run(async () => (ran = true), { startBy: performance.now() - 1 })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).to.include({ code: 'SERVICE_UNAVAILABLE' });
    expect(ran).to.equal(false);
  });

  it('drops a waiting write whose client was answered meanwhile (abandoned), without running it, and runs the next', async () => {
    const admission = new WriteAdmission({ limit: 1, maxWaitMs: 60_000 });
    const log: string[] = [];
    const holder = held(log, 'holder');
    const running = admission.run(holder.work);
    let answered = false;
    const dropped = admission.run(held(log, 'dropped').work, { abandoned: () => answered }).then(
      () => undefined,
      (error: unknown) => error,
    );
    const next = admission.run(async () => 'next');
    answered = true;
    holder.finish();
    await running;
    expect(await dropped).to.include({ code: 'SERVICE_UNAVAILABLE' });
    expect(await next).to.equal('next');
    expect(log).to.deep.equal(['start holder', 'end holder']);
  });

  it('frees the slot of a write that fails, and passes its error on as it is', async () => {
    const admission = new WriteAdmission({ limit: 1, maxWaitMs: 60_000 });
    const failure = new Error('the write failed');
    const failed = admission.run(async () => Promise.reject(failure));
    expect(
      await failed.then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).to.equal(failure);
    expect(await admission.run(async () => 'next')).to.equal('next');
  });

  it('runs a waiting write in its own request’s context, not in the context of the write that freed the slot', async () => {
    const admission = new WriteAdmission({ limit: 1, maxWaitMs: 60_000 });
    const request = new AsyncLocalStorage<string>();
    const log: string[] = [];
    const first = held(log, 'first');
    const running = request.run('request 1', () => admission.run(first.work));
    const second = request.run('request 2', () => admission.run(async () => request.getStore()));
    await turn();
    first.finish();
    await running;
    expect(await second).to.equal('request 2');
  });
});
