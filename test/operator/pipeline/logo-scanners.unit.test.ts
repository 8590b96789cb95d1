// The artwork parsers' scans: hostile pages and SVG documents that made the former regular expressions
// backtrack for minutes cost work in proportion to their size (counted in characters examined, never timed),
// and on generated inputs the scans find exactly what the expressions found.
import { expect } from 'chai';
import { largestIconImage } from '../../../operator/src/pipeline/logos/ico.js';
import { iconLinks } from '../../../operator/src/pipeline/logos/icon-links.js';
import { scanCounters } from '../../../operator/src/pipeline/logos/scan.js';
import { LogoError, sniffImageType } from '../../../operator/src/pipeline/logos/sniff.js';
import { inertSvg, looksLikeSvg } from '../../../operator/src/pipeline/logos/svg.js';
import {
  formerIconLinks,
  formerInertSvgText,
  formerIsSvgText,
  generatedPages,
  generatedSvgs,
} from './former-patterns.js';

const KiB = 1024;
const PAGE = new URL('https://portal.example.org/app/');
const repeat = (unit: string, length: number) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

/** Characters the scans examined for `work`. */
function steps(work: () => unknown): number {
  const before = scanCounters.steps;
  work();
  return scanCounters.steps - before;
}

/** The work at `size` and at four times `size`: four times as much, give or take, and a few characters' worth per
 * character. */
function expectLinear(
  label: string,
  input: (size: number) => string,
  parse: (text: string) => unknown,
  size: number,
): void {
  const small = steps(() => parse(input(size)));
  const large = steps(() => parse(input(4 * size)));
  expect(small, label).to.be.greaterThan(0);
  expect(large / small, `${label}: ${small} → ${large} steps`).to.be.within(3, 5);
  expect(large / (4 * size), `${label}: steps per character`).to.be.below(12);
}

const quiet = (parse: (bytes: Buffer) => unknown) => (text: string) => {
  try {
    return parse(Buffer.from(text));
  } catch (error) {
    if (!(error instanceof LogoError)) throw error;
    return undefined;
  }
};

describe('operator: artwork parsing in linear time', () => {
  describe('icon links of a home page', () => {
    const hostile: Record<string, (size: number) => string> = {
      'unclosed comments': (n) => repeat('<!--', n),
      'link tags without an end': (n) => repeat('<link ', n),
      'unclosed attribute quotes': (n) => `<link ${repeat(`a="b=' `, n)}>`,
      'a base tag of hrefs': (n) => `<base ${repeat('href=', n)}`,
      'base tags without an end': (n) => repeat('<base href=', n),
      'comments inside link tags': (n) => repeat('<link rel=icon <!-- href=', n),
    };
    for (const [label, input] of Object.entries(hostile)) {
      it(`reads 512 KiB of ${label} in work proportional to its size`, () => {
        expectLinear(label, input, (text) => iconLinks(text, PAGE), 128 * KiB);
        expect(iconLinks(input(512 * KiB), PAGE)).to.deep.equal([]);
      });
    }

    it('finds exactly the links the former regular expressions found, on 5000 generated pages', () => {
      const pages = generatedPages(11, 5000);
      for (const page of pages) expect(iconLinks(page, PAGE), page).to.deep.equal(formerIconLinks(page, PAGE));
      // The comparison means something: a fair share of the pages link icons, some through a <base>.
      expect(pages.filter((page) => iconLinks(page, PAGE).length > 0).length).to.be.greaterThan(1000);
      expect(
        pages.filter((page) =>
          iconLinks(page, PAGE).some(
            (link) => link.url.startsWith('https://portal.example.org/') && !link.url.startsWith(PAGE.href),
          ),
        ).length,
      ).to.be.greaterThan(50);
    });
  });

  describe('the SVG check and the inert copy', () => {
    // Each with what the check makes of it at 2 MiB, the logo size limit.
    const hostile: Record<string, [(size: number) => string, 'svg' | 'refused']> = {
      'repeated </svg><!--': [(n) => `<svg>${repeat('</svg><!--', n)}`, 'refused'],
      'self-closing roots without an end': [(n) => `<svg ${repeat('<svg ', n)}`, 'refused'],
      'unclosed comments in the prolog': [(n) => `${repeat('<!-- a --> ', n)}<!--`, 'refused'],
      'white space before HTML': [(n) => `${' '.repeat(n)}<html>`, 'refused'],
      'nested url( without a parenthesis': [(n) => `<svg>${repeat('url(', n)}</svg>`, 'svg'],
      'href values without their quote': [(n) => `<svg>${repeat(`href='href="`, n)}</svg>`, 'svg'],
    };
    for (const [label, [input, verdict]] of Object.entries(hostile)) {
      it(`checks and neutralises 2 MiB of ${label} in work proportional to its size`, () => {
        expectLinear(label, input, quiet(inertSvg), 512 * KiB);
        expect(quiet(sniffImageType)(input(2048 * KiB)) ?? 'refused').to.equal(verdict);
      });
    }

    it('accepts and neutralises exactly what the former regular expressions did, on 5000 generated documents', () => {
      const documents = generatedSvgs(7, 5000);
      let accepted = 0;
      for (const text of documents) {
        const svg = looksLikeSvg(Buffer.from(text));
        expect(svg, text).to.equal(formerIsSvgText(text));
        if (!svg) continue;
        accepted++;
        expect(inertSvg(Buffer.from(text)).toString('utf8'), text).to.equal(formerInertSvgText(text));
      }
      expect(accepted).to.be.within(500, 4500); // both verdicts are well represented
    });

    it('still refuses what is not a standalone SVG document', () => {
      for (const text of ['<svg><rect/></svg><script/>', '<svg <!-- -->/>x', '<!-- <svg> -->', '<svg></svg><!--']) {
        expect(() => sniffImageType(Buffer.from(text)), text).to.throw(LogoError, /not a PNG/);
      }
      for (const text of [
        '<svg/>',
        '\n<svg viewBox="0 0 1 1"/>\n',
        '<?xml version="1.0"?><!DOCTYPE svg><svg></svg> <!-- end --> ',
      ]) {
        expect(sniffImageType(Buffer.from(text)), text).to.equal('svg');
      }
    });
  });

  describe('icon files', () => {
    it('refuses an icon whose 65535 entries all point at one BMP that fails at its last pixel, after a few attempts', () => {
      const [width, height] = [1024, 1024];
      const stride = width / 8;
      const dib = Buffer.alloc(40 + 4 + stride * height);
      dib.writeUInt32LE(40, 0);
      dib.writeInt32LE(width, 4);
      dib.writeInt32LE(2 * height, 8);
      dib.writeUInt16LE(1, 12);
      dib.writeUInt16LE(1, 14); // 1 bit per pixel, a palette of one colour: index 1 is out of range
      dib.writeUInt32LE(1, 32);
      dib[44 + stride - 1] = 1; // the last pixel decoded (rows are stored bottom-up)
      const count = 65535;
      const directory = Buffer.alloc(6 + 16 * count);
      directory.writeUInt16LE(1, 2);
      directory.writeUInt16LE(count, 4);
      for (let i = 0; i < count; i++) {
        directory.writeUInt16LE(1, 6 + 16 * i + 6);
        directory.writeUInt32LE(dib.length, 6 + 16 * i + 8);
        directory.writeUInt32LE(directory.length, 6 + 16 * i + 12);
      }
      const icon = Buffer.concat([directory, dib]);
      expect(sniffImageType(icon)).to.equal('ico');
      expect(() => largestIconImage(icon)).to.throw(LogoError, /palette index out of range/);
    });
  });
});
