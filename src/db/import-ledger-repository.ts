import type { ChunkEntry, LedgerPort } from '../domain/imports/ports';
import type { Queryable } from './db';

/**
 * The import ledger: one row per committed chunk, written in the chunk's own transaction (so a
 * chunk and its entry commit together or not at all).
 */
export function createImportLedgerRepository(db: Queryable) {
  return {
    async last(importId: string) {
      const rows = await db.query<{ chunk_no: number; rows_done: number }>(
        `SELECT max(chunk_no) AS chunk_no, sum(rows_done)::int AS rows_done FROM import_chunks WHERE import_id = $1 HAVING count(*) > 0`,
        [importId],
      );
      const r = rows[0];
      return r && { chunkNo: r.chunk_no, rowsDone: r.rows_done };
    },

    async append(e: ChunkEntry, progress: { rowsDone: number; columns: string[] | null }): Promise<void> {
      await db.query(
        `WITH entry AS (
           INSERT INTO import_chunks (import_id, chunk_no, first_row, last_row, rows_done, imported, failed, errors, failed_rows)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9::text::jsonb)
         )
         UPDATE imports SET rows_done = $10, rows_total = GREATEST(rows_total, $10), columns = coalesce(columns, $11::text[])
          WHERE id = $1 AND status = 'processing'`,
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
          progress.rowsDone,
          progress.columns,
        ],
      );
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
