import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { stringify } from 'csv-stringify';

import type { ClaimListRow } from '../domain/dashboard/dashboard-repository';
import { OPTIONAL_COLUMNS, REQUIRED_COLUMNS } from '../domain/imports/csv-file';
import { neutraliseCell } from './import-csv';

/** The import's columns, in its order: the file can be uploaded again once id_number is filled in. */
export const EXPORT_COLUMNS = [...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS] as const;

/** A claim as a row of the import's columns. A document number is never given back: id_number stays empty. */
function exportRow(r: ClaimListRow): string[] {
  const cells: Record<(typeof EXPORT_COLUMNS)[number], string> = {
    first_name: r.first_name,
    last_name: r.last_name,
    date_of_birth: r.date_of_birth,
    id_type: r.id_type ?? '',
    id_number: '',
    claim_date: r.claim_date,
    vehicle_registration: r.vehicle_registration,
    claim_type: r.claim_type ?? '',
    amount: r.amount ?? '',
    currency: r.currency,
    is_at_fault: r.is_at_fault === null ? '' : String(r.is_at_fault),
    status: r.status,
  };
  // Names are the only free text; a spreadsheet must not run one as a formula.
  return EXPORT_COLUMNS.map((c) => (c === 'first_name' || c === 'last_name' ? neutraliseCell(cells[c]) : cells[c]));
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
