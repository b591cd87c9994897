import type { ChunkEntry, LedgerPort } from '../domain/imports/ports';
import { arrayLiteral } from './columns';
import type { Queryable } from './db';

/**
 * The import ledger: one row per committed chunk, written in the chunk's own transaction (so a
 * chunk and its entry commit together or not at all).
 */
/** A chunk's created persons (`ids`) noted (import_id $1, chunk_no $2), if any; a chunk run again adds to its note. */
const notePersons = (ids: string) => `INSERT INTO import_persons (import_id, chunk_no, client_ids)
  SELECT $1::uuid, $2::int, ${ids}::text::uuid[] WHERE cardinality(${ids}::text::uuid[]) > 0
  ON CONFLICT (import_id, chunk_no) DO UPDATE SET client_ids = import_persons.client_ids || EXCLUDED.client_ids`;

export function createImportLedgerRepository(db: Queryable) {
  return {
    async committed(importId: string) {
      const rows = await db.query<{ chunk_no: number; first_row: number; last_row: number; rows_done: number }>(
        `SELECT chunk_no, first_row, last_row, rows_done FROM import_chunks WHERE import_id = $1`,
        [importId],
      );
      return rows.map((r) => ({ chunkNo: r.chunk_no, firstRow: r.first_row, lastRow: r.last_row, rowsDone: r.rows_done }));
    },

    /**
     * The import's progress is not written here: chunks commit side by side, and an update of the
     * imports row would make them wait for each other (reads add the ledger up instead).
     */
    async append(e: ChunkEntry): Promise<boolean> {
      // The persons the chunk created, when it created them in this transaction, in the same statement.
      const rows = await db.query(
        `WITH noted AS (${notePersons('$10')})
         INSERT INTO import_chunks (import_id, chunk_no, first_row, last_row, rows_done, imported, failed, errors, failed_rows)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9::text::jsonb)
         ON CONFLICT (import_id, chunk_no) DO NOTHING
         RETURNING 1`,
        [
          e.importId,
          e.chunkNo,
          e.firstRow,
          e.lastRow,
          e.rowsDone,
          e.imported,
          e.failed,
          `[${e.errorsJson.join(',')}]`,
          `[${e.failedRowsJson.join(',')}]`,
          arrayLiteral(e.createdPersons ?? [], (id) => id),
        ],
      );
      return rows.length === 1;
    },

    /**
     * Notes the persons a chunk created (in the transaction that created them), so that a failed
     * or cancelled import can remove those it left without a claim. A chunk run again adds to its
     * note.
     */
    async notePersons(importId: string, chunkNo: number, clientIds: string[]): Promise<void> {
      if (clientIds.length === 0) return;
      await db.query(notePersons('$3'), [importId, chunkNo, arrayLiteral(clientIds, (id) => id)]);
    },

    async failedRows(importId: string, afterRow: number, limit: number) {
      const rows = await db.query<{ row: number; cells: string; messages: string }>(
        `SELECT (f.value->>'row')::int AS row, (f.value->'cells')::text AS cells, coalesce((e.value->'messages')::text, '{}') AS messages
           FROM import_chunks l
           CROSS JOIN LATERAL jsonb_array_elements(l.failed_rows) AS f
           LEFT JOIN LATERAL (
             SELECT x.value FROM jsonb_array_elements(l.errors) AS x WHERE (x.value->>'row')::int = (f.value->>'row')::int LIMIT 1
           ) AS e ON true
          WHERE l.import_id = $1 AND l.last_row > $2 AND (f.value->>'row')::int > $2
          ORDER BY (f.value->>'row')::int
          LIMIT $3`,
        [importId, afterRow, limit],
      );
      return rows.map((r) => ({
        row: r.row,
        cells: JSON.parse(r.cells) as string[],
        messages: JSON.parse(r.messages) as Record<string, string[]>,
      }));
    },
  } satisfies LedgerPort;
}
export type ImportLedgerRepository = ReturnType<typeof createImportLedgerRepository>;
