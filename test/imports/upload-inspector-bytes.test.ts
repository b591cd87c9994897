import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { describe, expect, it } from 'vitest';

import { prng } from '../../scripts/gen-csv';
import { normalizeDocumentNumber } from '../../src/domain/claims/claim';
import { createFileInspector, fileMessages } from '../../src/domain/imports/csv-file';
import { createUtf8Check } from '../../src/domain/imports/utf8';
import { HEADER } from '../import-helpers';

/**
 * The upload inspector reads most lines as bytes (issue 56): it checks UTF-8 without decoding the
 * text, and the dates-of-birth guard reads a row's document and date from the line's bytes. These
 * give the verdicts that the strings gave: the same files are refused as not UTF-8, and a
 * document is the same document whichever reader read its rows.
 */
async function inspect(text: string) {
  const inspector = createFileInspector();
  await pipeline(Readable.from([Buffer.from(text)]), inspector, new Writable({ write: (_c, _e, cb) => cb() }));
  return inspector.result();
}

const columns = HEADER.split(',');
/** A row of the document (type, number as written) born on `dob`; `first` as written (a quoted name sends the rest of the file to csv-parse). */
const line = (type: string, number: string, dob: string, first = 'Ann') =>
  columns
    .map(
      (c) =>
        ({ first_name: first, last_name: 'Lee', date_of_birth: dob, id_type: type, id_number: number, claim_date: '2024-01-01' })[c] ??
        (c === 'vehicle_registration' ? 'ABC123' : ''),
    )
    .join(',');

/** The first chunk a fatal streaming TextDecoder refuses (chunks.length for the end), or -1: the rule before the byte check. */
function decoderVerdict(chunks: Buffer[]): number {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for (const [i, chunk] of chunks.entries()) {
    try {
      decoder.decode(chunk, { stream: true });
    } catch {
      return i;
    }
  }
  try {
    decoder.decode();
  } catch {
    return chunks.length;
  }
  return -1;
}

function checkVerdict(chunks: Buffer[]): number {
  const check = createUtf8Check();
  for (const [i, chunk] of chunks.entries()) if (!check.chunk(chunk)) return i;
  return check.end() ? -1 : chunks.length;
}

describe('the upload inspector reading bytes', () => {
  it('refuses as not UTF-8 exactly the chunks a strict UTF-8 decoder refuses, wherever the chunks are cut', () => {
    const hex = (s: string) => Buffer.from(s.replace(/ /gu, ''), 'hex');
    const cases = [
      hex('61 c4 97 62'), // ė
      hex('e2 82 ac'), // €
      hex('f0 9f 98 80 0a'), // an emoji
      hex('f4 8f bf bf'), // U+10FFFF
      hex('f4 90 80 80'), // past U+10FFFF
      hex('ed 9f bf'), // U+D7FF
      hex('ed a0 80'), // a surrogate
      hex('e0 a0 80'), // U+0800
      hex('e0 80 80'), // overlong
      hex('f0 90 80 80'), // U+10000
      hex('f0 80 80 80'), // overlong
      hex('c0 80'),
      hex('c1 bf'),
      hex('c2 80'),
      hex('f5 80 80 80'),
      hex('ff'),
      hex('80'),
      hex('61 e2 82'), // cut off at the end
      hex('e2 41'),
      hex('e2 82 41'),
      hex('ef bb bf 61'), // a BOM
      hex('61 62 63 c4'),
    ];
    for (const bytes of cases) {
      for (let i = 0; i <= bytes.length; i++) {
        for (let j = i; j <= bytes.length; j++) {
          const chunks = [bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)];
          expect([bytes.toString('hex'), i, j, checkVerdict(chunks)]).toEqual([bytes.toString('hex'), i, j, decoderVerdict(chunks)]);
        }
      }
    }
    // Random text of ASCII, valid characters and stray bytes, cut at random.
    const random = prng(56);
    const pieces = ['a', '\n', 'ė', '€', '😀', '\u{10ffff}'].map((s) => Buffer.from(s));
    const stray = [0x80, 0xbf, 0xc0, 0xc2, 0xe0, 0xed, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x90];
    for (let n = 0; n < 3000; n++) {
      const parts: Buffer[] = [];
      const length = 1 + Math.floor(random() * 12);
      for (let k = 0; k < length; k++) {
        parts.push(
          random() < 0.9 ? pieces[Math.floor(random() * pieces.length)]! : Buffer.from([stray[Math.floor(random() * stray.length)]!]),
        );
      }
      const bytes = Buffer.concat(parts);
      const chunks: Buffer[] = [];
      for (let at = 0; at < bytes.length;) {
        const size = 1 + Math.floor(random() * 5);
        chunks.push(bytes.subarray(at, at + size));
        at += size;
      }
      expect([bytes.toString('hex'), checkVerdict(chunks)]).toEqual([bytes.toString('hex'), decoderVerdict(chunks)]);
    }
  });

  it('counts the dates of a document as the same document however its number and type are written, whichever reader reads the rows', async () => {
    const numbers = [
      'LT-12345678',
      'lt-12345678',
      '12345678',
      ' 1234 5678 ',
      'LT - 1234\t5678',
      'LTU-12345678',
      'LTUX-12345678',
      'L-12345678',
      '1-12345678',
      'AB-',
      'ab-c',
      'C',
      'Straße-1',
      'STRASSE-1',
      'ß1',
      'SS1',
      '1234\u00a05678',
    ];
    const types = ['passport', ' passport\t', 'Passport'];
    const same = (a: [string, string], b: [string, string]) =>
      normalizeDocumentNumber(a[1]) !== '' &&
      a[0].trim() === b[0].trim() &&
      normalizeDocumentNumber(a[1]) === normalizeDocumentNumber(b[1]);
    const documents: [string, string][] = [
      ...numbers.map((n): [string, string] => ['passport', n]),
      ...types.map((t): [string, string] => [t, '12345678']),
    ];
    for (const a of documents) {
      for (const b of documents) {
        const three = [line(a[0], a[1], '1980-01-01'), line(a[0], a[1], ' 1981-01-01'), line(a[0], a[1], '1982-1-1')];
        const files = {
          // Every row read by the line reader, as bytes.
          lines: [...three, line(b[0], b[1], '1983-01-01')],
          // The last row read by csv-parse, as strings.
          mixed: [...three, line('passport', 'Q1', '1990-01-01', '"Lee, Ann"'), line(b[0], b[1], '1983-01-01')],
          // Every row read by csv-parse.
          parser: [line('passport', 'Q1', '1990-01-01', '"Lee, Ann"'), ...three, line(b[0], b[1], '1983-01-01')],
        };
        for (const [reader, rows] of Object.entries(files)) {
          const verdict = await inspect([HEADER, ...rows].join('\n')).then(
            () => 'accepted',
            (err: Error) => err.message,
          );
          const row = rows.length + 1;
          expect([a, b, reader, verdict]).toEqual([a, b, reader, same(a, b) ? fileMessages.datesOfBirth(row) : 'accepted']);
        }
      }
    }
  }, 60_000);

  it('takes a date written with spaces around it as the same date', async () => {
    const rows = ['1980-01-01', ' 1980-01-01', '1980-01-01\t', '1981-01-01', '1982-01-01'].map((dob) => line('passport', 'P1', dob));
    await expect(inspect([HEADER, ...rows].join('\n'))).resolves.toMatchObject({ dataRows: 5 });
    await expect(inspect([HEADER, ...rows, line('passport', 'P1', '1983-01-01')].join('\n'))).rejects.toThrow(fileMessages.datesOfBirth(7));
  });

  it('finds the same document across the two readers past the documents it follows in memory', async () => {
    // 60,000 other documents first: the dates are found by the partitions at the end of the file.
    const others = Array.from({ length: 60_000 }, (_, i) => line('passport', `P${i}`, '1980-01-01'));
    const rows = [
      ...others,
      line('passport', 'LT-1234 5678', '1970-01-01'),
      line(' passport', '12345678', '1971-01-01'),
      line('passport', 'lt-12345678', '1972-01-01'),
      line('passport', 'Q1', '1990-01-01', '"Lee, Ann"'),
      line('passport', '1234\u00a05678', '1973-01-01'),
    ];
    await expect(inspect([HEADER, ...rows].join('\n'))).rejects.toThrow(fileMessages.datesOfBirth(60_006));
    await expect(inspect([HEADER, ...rows.slice(0, -1)].join('\n'))).resolves.toMatchObject({ dataRows: 60_004 });
  }, 60_000);
});
