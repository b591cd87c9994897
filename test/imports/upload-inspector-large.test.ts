import fs from 'node:fs';
import os from 'node:os';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { describe, expect, it } from 'vitest';

import { createFileInspector, fileMessages } from '../../src/domain/imports/csv-file';
import { HEADER } from '../import-helpers';

/**
 * The upload inspector on files past what it follows in memory (issue 56): the dates-of-birth
 * guard spills to a temporary file past 50,000 documents and still finds the first row giving a
 * document a fourth date, and the line reader hands over to csv-parse at the first quoted line
 * with row numbers that go on counting.
 */
async function inspect(text: string, chunk = 64 * 1024) {
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += chunk) parts.push(bytes.subarray(at, at + chunk));
  const inspector = createFileInspector();
  await pipeline(Readable.from(parts), inspector, new Writable({ write: (_c, _e, cb) => cb() }));
  return inspector.result();
}

const columns = HEADER.split(',');
/** A valid row of document `n`, born on `dob`. */
const line = (n: number, dob = '1980-01-01', first = 'Ann') =>
  columns
    .map(
      (c) =>
        ({ first_name: first, last_name: 'Lee', date_of_birth: dob, id_type: 'passport', id_number: `P${n}`, claim_date: '2024-01-01' })[
          c
        ] ?? (c === 'vehicle_registration' ? 'ABC123' : ''),
    )
    .join(',');
/** `n` rows, each with its own document. */
const distinct = (n: number) => Array.from({ length: n }, (_, i) => line(i));
const spillFiles = () => fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('claims-dob-'));

describe('the upload inspector on large files', () => {
  it('finds a fourth date of birth given after 300,000 documents, naming its row, and leaves no temporary file', async () => {
    const before = spillFiles();
    // Document P7 (row 9) gets its second, third and fourth dates far down the file.
    const rows = [...distinct(300_000), line(7, '1981-01-01'), line(7, '1982-01-01'), line(7, '1983-01-01'), line(8)];
    await expect(inspect([HEADER, ...rows].join('\n'))).rejects.toThrow(fileMessages.datesOfBirth(300_004));
    expect(spillFiles()).toEqual(before);
  }, 120_000);

  it('takes the same file with three dates for that document, counting every row', async () => {
    const rows = [...distinct(300_000), line(7, '1981-01-01'), line(7, '1982-01-01'), line(8)];
    expect((await inspect([HEADER, ...rows].join('\r\n'), 7777)).dataRows).toBe(300_003);
  }, 120_000);

  it('reads on through csv-parse from the first quoted line, with the rows numbered as before', async () => {
    const rows = [line(1), '', line(2, '1980-01-01', '"Lee, Ann"'), line(3), line(4, '1980-01-01', '"never closed'), line(5)];
    await expect(inspect([HEADER, ...rows].join('\n'), 5)).rejects.toThrow(fileMessages.unclosedQuote(6));
    const ok = [
      line(1),
      '',
      line(2, '1980-01-01', '"Lee, Ann"'),
      line(3),
      line(3, '1990-01-01'),
      line(3, '1991-01-01'),
      line(3, '1992-01-01'),
    ];
    await expect(inspect([HEADER, ...ok].join('\n'), 5)).rejects.toThrow(fileMessages.datesOfBirth(8));
  });
});
