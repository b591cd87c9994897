import type { Readable } from 'node:stream';

import { stringify } from 'csv-stringify';

import type { RowError } from '../db/import-repository';

/**
 * A spreadsheet treats a cell that starts with = + - @ (or a tab or carriage return) as a
 * formula; a leading single quote makes it plain text (OWASP "CSV injection").
 */
export function neutraliseCell(value: string): string {
  return /^[=+\-@\t\r]/u.test(value) ? `'${value}` : value;
}

/** One line per message: row, column, message, in row order. */
export function errorLines(errors: RowError[]): { row: number; column: string; message: string }[] {
  return errors.flatMap((e) => Object.entries(e.messages).flatMap(([column, list]) => list.map((message) => ({ row: e.row, column, message }))));
}

/** The failed rows of an import as CSV (what is kept of them: row number, column, message). */
export function failedRowsCsv(errors: RowError[]): Readable {
  const out = stringify({ header: true, columns: ['row', 'column', 'message'], bom: true });
  for (const line of errorLines(errors)) out.write([String(line.row), neutraliseCell(line.column), neutraliseCell(line.message)]);
  out.end();
  return out;
}
