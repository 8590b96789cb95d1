// What an endpoint check reads from the two documents: a CapabilityStatement's resourceType and fhirVersion
// from its first bytes only, and whether a SMART configuration is one.
import { expect } from 'chai';
import {
  isSmartConfiguration,
  readCapabilityStatement,
  topLevelStrings,
} from '../../../operator/src/health/documents.js';
import { CAPABILITY_STATEMENT, SMART_CONFIGURATION } from '../../../testkit/fhir-stub.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

/** `text` for a reader that indexes it and slices it, counting the characters read. */
function countingText(text: string): { text: string; reads: () => number } {
  let reads = 0;
  const wrapper = new Proxy(Object.create(null) as object, {
    get(_target, property) {
      if (property === 'length') return text.length;
      if (typeof property === 'string' && /^[0-9]+$/.test(property)) {
        reads++;
        return text[Number(property)];
      }
      if (property === 'slice') {
        return (start?: number, end?: number) => {
          const part = text.slice(start, end);
          reads += part.length;
          return part;
        };
      }
      throw new Error(`the scanner reads the text with ${String(property)}: count it here too`);
    },
  });
  return { text: wrapper as unknown as string, reads: () => reads };
}

describe('operator: endpoint health documents', () => {
  it('reads resourceType and fhirVersion of a CapabilityStatement (and DSTU2 Conformance)', () => {
    expect(readCapabilityStatement(bytes(CAPABILITY_STATEMENT))).to.deep.equal({
      capabilityStatement: true,
      fhirVersion: '4.0.1',
    });
    expect(readCapabilityStatement(bytes('{"resourceType":"Conformance","fhirVersion":"1.0.2"}'))).to.deep.equal({
      capabilityStatement: true,
      fhirVersion: '1.0.2',
    });
    expect(readCapabilityStatement(bytes('\uFEFF {\n "resourceType" : "CapabilityStatement"}'))).to.deep.equal({
      capabilityStatement: true,
      fhirVersion: null,
    });
  });

  it('reads the two members from the first bytes of a large statement, skipping nested objects, arrays and escapes', () => {
    const large = `{"resourceType":"CapabilityStatement","id":"x\\"}{","text":{"div":"<div>fhirVersion \\"9.9\\"</div>","fhirVersion":"8.8.8"},"contact":[{"a":[1,2,{"b":"]"}]}],"experimental":false,"count":12.5e3,"fhirVersion":"4.0.1","rest":[${'{"mode":"server"},'.repeat(10_000)}{}]}`;
    const cut = bytes(large).subarray(0, 64 * 1024); // what the probe keeps
    expect(readCapabilityStatement(cut)).to.deep.equal({ capabilityStatement: true, fhirVersion: '4.0.1' });
  });

  it('refuses other resources, HTML, arrays, and versions that are not versions', () => {
    expect(
      readCapabilityStatement(bytes('{"resourceType":"OperationOutcome","issue":[]}')).capabilityStatement,
    ).to.equal(false);
    expect(
      readCapabilityStatement(bytes('<!doctype html><html><body>Sign in</body></html>')).capabilityStatement,
    ).to.equal(false);
    expect(readCapabilityStatement(bytes('[{"resourceType":"CapabilityStatement"}]')).capabilityStatement).to.equal(
      false,
    );
    expect(readCapabilityStatement(bytes('{"resourceType":{"x":"CapabilityStatement"}}')).capabilityStatement).to.equal(
      false,
    );
    expect(
      readCapabilityStatement(bytes('{"resourceType":"CapabilityStatement","fhirVersion":"<script>"}')),
    ).to.deep.equal({ capabilityStatement: true, fhirVersion: null });
    expect(readCapabilityStatement(bytes('')).capabilityStatement).to.equal(false);
  });

  it('scans in one linear pass: a megabyte of nesting costs about one read per character', () => {
    // Counted, not timed: the scanner reads the text through a wrapper that counts the characters it reads, so
    // the pass stays linear whatever the machine's load (a quadratic one would read about n²/2 of them).
    const deep = `{"a":${'['.repeat(500_000)}${']'.repeat(500_000)},"resourceType":"CapabilityStatement"}`;
    const counted = countingText(deep);
    expect(topLevelStrings(counted.text, ['resourceType'])?.get('resourceType')).to.equal('CapabilityStatement');
    expect(counted.reads()).to.be.within(deep.length, 3 * deep.length);
    const unterminated = `{"resourceType":"${'x'.repeat(200_000)}`;
    const cut = countingText(unterminated);
    expect(topLevelStrings(cut.text, ['resourceType'])?.size).to.equal(0);
    expect(cut.reads()).to.be.at.most(3 * unterminated.length);
  });

  it('takes a SMART configuration that names its token or authorization endpoint, nothing else', () => {
    expect(isSmartConfiguration(bytes(SMART_CONFIGURATION))).to.equal(true);
    expect(isSmartConfiguration(bytes('{"token_endpoint":"https://a.example/token"}'))).to.equal(true);
    for (const text of [
      '{}',
      '[]',
      '{"error":"not_found"}',
      '<html></html>',
      '{"token_endpoint":42}',
      'null',
      '{"token_endpoint":"x"',
    ]) {
      expect(isSmartConfiguration(bytes(text)), text).to.equal(false);
    }
  });
});
