import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { stringify } from 'csv-stringify';

import type { ClaimListRow } from '../domain/dashboard/dashboard-repository';
import { OPTIONAL_COLUMNS, REQUIRED_COLUMNS } from '../domain/imports/csv-file';
import { neutraliseCell } from './import-csv';

/** The import's columns, in its order: the file can be uploaded again once id_number is filled in. */
export const EXPORT_COLUMNS = [...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS] as const;

/**
 * A claim as a row of the import's columns: each column is the list row's field of its name (the
 * answer's, claim-schema.ts), so a column the import gains is a compile error here until the row
 * carries it. A document number is never given back: id_number stays empty.
 */
function exportRow(r: ClaimListRow): string[] {
  return EXPORT_COLUMNS.map((c) => {
    if (c === 'id_number') return '';
    const value = r[c];
    const cell = value === null ? '' : String(value);
    // Names are the only free text; a spreadsheet must not run one as a formula.
    return c === 'first_name' || c === 'last_name' ? neutraliseCell(cell) : cell;
  });
}

/** The CSV file, written as each batch of rows arrives from the database. */
export function claimsCsv(batches: AsyncIterable<ClaimListRow[]>): Readable {
  const out = stringify({ bom: true });
  out.write([...EXPORT_COLUMNS]);
  pipeline(
    Readable.from(
      (async function* () {
        for await (const batch of batches) for (const r of batch) yield exportRow(r);
      })(),
    ),
    out,
  ).catch((err: unknown) => out.destroy(err as Error));
  return out;
}
