import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { stringify } from 'csv-stringify';

/**
 * A spreadsheet treats a cell that starts with = + - @ (or a tab or carriage return) as a
 * formula; a leading single quote makes it plain text (OWASP "CSV injection").
 */
export function neutraliseCell(value: string): string {
  return /^[=+\-@\t\r]/u.test(value) ? `'${value}` : value;
}

/** A cell of the caller's own data given back: only what would run as a formula is neutralised (a negative amount stays as it was). */
const dataCell = (value: string) => (/^[=+@\t\r]/u.test(value) ? `'${value}` : value);

/**
 * The failed rows' file: the uploaded columns in their order (id_number empty), then `row` and
 * `errors`, streamed as the rows are read. Delete the last two columns, fix the rows, upload again.
 */
export function failedRowsFile(header: string[], rows: AsyncIterable<string[]>): Readable {
  const out = stringify({ bom: true });
  out.write(header);
  const n = header.length;
  pipeline(
    Readable.from(
      (async function* () {
        for await (const r of rows) yield r.map((c, i) => (i >= n - 2 ? neutraliseCell(c) : dataCell(c)));
      })(),
    ),
    out,
  ).catch((err: unknown) => out.destroy(err as Error));
  return out;
}
