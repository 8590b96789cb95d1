// The shared JSON Schema checks: what a failed check describes is capped, however much is wrong, and the
// yes-or-no validator stops at the first problem.
import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { acceptAjv, checkDocument, describeProblems, documentAjv, MAX_DESCRIBED_PROBLEMS } from '#core/schema.js';

const Named = Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false });
const withUnknown = (count: number) =>
  Object.fromEntries([['name', 'x'], ...Array.from({ length: count }, (_, i) => [`extra${i}`, i])]);

describe('core: schema checks', () => {
  it(`describes the first ${MAX_DESCRIBED_PROBLEMS} problems and counts the rest`, () => {
    const checked = checkDocument(Named, withUnknown(5000));
    expect(checked.ok).to.equal(false);
    if (checked.ok) return;
    expect(checked.problems).to.have.length(MAX_DESCRIBED_PROBLEMS);
    expect(checked.problems[0]).to.deep.equal({ path: 'extra0', detail: 'is not an allowed property' });
    expect(checked.omitted).to.equal(5000 - MAX_DESCRIBED_PROBLEMS);
    expect(describeProblems(checked)).to.match(/^extra0 is not an allowed property; .*; 4980 more problems$/);
    expect(describeProblems(checked).length).to.be.below(1000);
  });

  it('says nothing of omissions when every problem is described', () => {
    const checked = checkDocument(Named, { name: '', other: 1 });
    expect(checked).to.deep.include({ ok: false, omitted: 0 });
    expect(describeProblems(checked as { problems: { path: string; detail: string }[]; omitted: number })).to.not.match(
      /more problem/,
    );
  });

  it('has a yes-or-no validator that stops at the first problem, where the reporting one finds them all', () => {
    const value = withUnknown(1000);
    const all = documentAjv.compile(Named);
    const first = acceptAjv.compile(Named);
    expect(all(value)).to.equal(false);
    expect(all.errors).to.have.length(1000);
    expect(first(value)).to.equal(false);
    expect(first.errors).to.have.length(1);
    expect(first({ name: 'x' })).to.equal(true);
  });
});
