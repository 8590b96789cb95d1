// When brands are checked: each at a fixed place in the interval (spread evenly over the fixture catalog's
// brands: testkit/real-brands.ts), one interval apart, and never-checked or overdue brands ramped in over
// the catch-up window.
import { expect } from 'chai';
import { loadAllRealBrands } from '../../../testkit/real-brands.js';
import { confirmDue, nextDue, phaseOf } from '../../../operator/src/health/schedule.js';

const HOUR = 3_600_000;

describe('operator: endpoint check schedule', function () {
  this.timeout(60_000);
  let ids: string[];
  before(async () => {
    ids = (await loadAllRealBrands()).brands.map((b) => b.id);
  });

  it('spreads the fixture catalog evenly over the interval: every 10-minute slot of 6 hours within 15% of its share', () => {
    expect(ids.length).to.be.above(25_000);
    const slots = new Array(36).fill(0) as number[];
    for (const id of ids) slots[Math.floor(phaseOf('default/default', id) * 36)]!++;
    const share = ids.length / 36;
    for (const [i, count] of slots.entries()) expect(count, `slot ${i}`).to.be.within(share * 0.85, share * 1.15);
    // The busiest second of a 6-hour sweep: about 1.4 checks a second on average, a handful at most.
    const seconds = new Map<number, number>();
    for (const id of ids) {
      const second = Math.floor(phaseOf('default/default', id) * 6 * 3600);
      seconds.set(second, (seconds.get(second) ?? 0) + 1);
    }
    expect(Math.max(...seconds.values())).to.be.at.most(10);
  });

  it('keeps a brand at the same place across restarts, and places the same brand differently in another catalog', () => {
    const id = ids[0]!;
    expect(phaseOf('default/default', id)).to.equal(phaseOf('default/default', id));
    expect(phaseOf('default/default', id)).to.not.equal(phaseOf('other/catalog', id));
  });

  it('checks a brand one interval after a check on time, and at its next place after a late one', () => {
    const phase = 0.25;
    const interval = 6 * HOUR;
    const place = 1000 * interval + phase * interval; // a phase point
    expect(nextDue({ phase, intervalMs: interval, catchUpMs: 15 * 60_000, checkedAt: place, now: place })).to.equal(
      place + interval,
    );
    // Checked 2 h late (the host was throttled): the next phase point at least half an interval later.
    expect(
      nextDue({
        phase,
        intervalMs: interval,
        catchUpMs: 15 * 60_000,
        checkedAt: place + 2 * HOUR,
        now: place + 2 * HOUR,
      }),
    ).to.equal(place + interval);
    expect(
      nextDue({
        phase,
        intervalMs: interval,
        catchUpMs: 15 * 60_000,
        checkedAt: place + 4 * HOUR,
        now: place + 4 * HOUR,
      }),
    ).to.equal(place + 2 * interval);
  });

  it('ramps never-checked and overdue brands in over the catch-up window, spread by their place', () => {
    const now = Date.UTC(2026, 0, 1);
    const due = ids.map(
      (id) =>
        nextDue({
          phase: phaseOf('default/default', id),
          intervalMs: 6 * HOUR,
          catchUpMs: 15 * 60_000,
          checkedAt: null,
          now,
        }) - now,
    );
    expect(Math.min(...due)).to.be.at.least(0);
    expect(Math.max(...due)).to.be.below(15 * 60_000);
    const perMinute = new Array(15).fill(0) as number[];
    for (const ms of due) perMinute[Math.floor(ms / 60_000)]!++;
    for (const count of perMinute) expect(count).to.be.within((ids.length / 15) * 0.9, (ids.length / 15) * 1.1);
    // Back after 12 hours away: overdue, so within the catch-up window, not all at once.
    const away = nextDue({ phase: 0.5, intervalMs: 6 * HOUR, catchUpMs: 15 * 60_000, checkedAt: now - 12 * HOUR, now });
    expect(away - now).to.equal(7.5 * 60_000);
  });

  it('confirms a DOWN a minute or so later, jittered', () => {
    expect(confirmDue(0, 60_000, 0)).to.equal(60_000);
    expect(confirmDue(0.99, 60_000, 0)).to.be.within(89_000, 90_000);
  });
});
