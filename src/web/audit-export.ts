import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { stringify } from 'csv-stringify';

import type { AuditEvent } from '../domain/audit/audit';
import { neutraliseCell } from './import-csv';

export const AUDIT_CSV_COLUMNS = [
  'created_at',
  'action',
  'actor_type',
  'actor_id',
  'actor_name',
  'target_type',
  'target_id',
  'target_name',
  'ip',
  'request_id',
] as const;

/** The audit log as CSV, written as events arrive from the database. Free text cannot run as a formula. */
export function auditCsv(events: AsyncIterable<AuditEvent>): Readable {
  const out = stringify({ bom: true });
  out.write([...AUDIT_CSV_COLUMNS]);
  pipeline(
    Readable.from(
      (async function* () {
        for await (const e of events) {
          yield [
            e.created_at,
            e.action,
            e.actor.type,
            e.actor.id ?? '',
            neutraliseCell(e.actor.name),
            e.target?.type ?? '',
            e.target?.id ?? '',
            neutraliseCell(e.target?.name ?? ''),
            e.ip ?? '',
            e.request_id ?? '',
          ];
        }
      })(),
    ),
    out,
  ).catch((err: unknown) => out.destroy(err as Error));
  return out;
}
