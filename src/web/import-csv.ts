import type { Readable } from 'node:stream';

import { stringify } from 'csv-stringify';

import { neutraliseCell } from '../domain/imports/failed-rows-file';
import type { RowError } from '../domain/imports/ports';

export { failedRowsFile, neutraliseCell } from '../domain/imports/failed-rows-file';

/** One line per message: row, column, message, in row order. */
export function errorLines(errors: RowError[]): { row: number; column: string; message: string }[] {
  return errors.flatMap((e) =>
    Object.entries(e.messages).flatMap(([column, list]) => list.map((message) => ({ row: e.row, column, message }))),
  );
}

/** The failed rows of an import as CSV (what is kept of them: row number, column, message). */
export function failedRowsCsv(errors: RowError[]): Readable {
  const out = stringify({ header: true, columns: ['row', 'column', 'message'], bom: true });
  for (const line of errorLines(errors)) out.write([String(line.row), neutraliseCell(line.column), neutraliseCell(line.message)]);
  out.end();
  return out;
}
