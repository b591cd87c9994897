import type { Queryable } from './db';

export const IMPORT_STATUSES = ['queued', 'processing', 'completed', 'failed'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];
export type ImportFailure = 'invalid_file' | 'error';
export type RowError = { row: number; messages: Record<string, string[]> };

export type ImportRecord = {
  id: string;
  companyId: string;
  status: ImportStatus;
  fileName: string;
  objectKey: string;
  sizeBytes: number;
  rowsTotal: number;
  rowsDone: number;
  imported: number | null;
  failed: number | null;
  errors: RowError[] | null;
  message: string | null;
  failure: ImportFailure | null;
  attempts: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  cursor: { ts: string; id: string };
};

/**
 * What a finished import writes. The row errors come already serialised, one JSON text per row:
 * a large file may have many failed rows, and strings take half the memory of objects.
 */
export type ImportSummary = { imported: number; failed: number; errorsJson: string[]; rowsTotal: number };

const TS = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;

/** The list leaves the (possibly large) errors out; `withErrors` adds them. */
const columns = (withErrors: boolean) => `
  id, company_id, status, file_name, object_key, size_bytes::float8 AS size_bytes, rows_total, rows_done,
  imported, failed, ${withErrors ? 'errors::text' : 'NULL::text'} AS errors, message, failure, attempts,
  ${TS('created_at')} AS created_at, ${TS('started_at')} AS started_at, ${TS('finished_at')} AS finished_at,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_ts`;

type Row = {
  id: string;
  company_id: string;
  status: ImportStatus;
  file_name: string;
  object_key: string;
  size_bytes: number;
  rows_total: number;
  rows_done: number;
  imported: number | null;
  failed: number | null;
  errors: string | null;
  message: string | null;
  failure: ImportFailure | null;
  attempts: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  cursor_ts: string;
};

function toRecord(r: Row): ImportRecord {
  return {
    id: r.id,
    companyId: r.company_id,
    status: r.status,
    fileName: r.file_name,
    objectKey: r.object_key,
    sizeBytes: Number(r.size_bytes),
    rowsTotal: r.rows_total,
    rowsDone: r.rows_done,
    imported: r.imported,
    failed: r.failed,
    // jsonb travels as text: both drivers then hand back the same string, parsed once here.
    errors: r.errors === null ? null : (JSON.parse(r.errors) as RowError[]),
    message: r.message,
    failure: r.failure,
    attempts: r.attempts,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    cursor: { ts: r.cursor_ts, id: r.id },
  };
}

/** Deterministic 64-bit key for the per-import advisory lock (two halves of the uuid's first 16 hex digits). */
const lockKey = (importId: string): [number, number] => {
  const hex = importId.replace(/-/gu, '');
  return [parseInt(hex.slice(0, 8), 16) | 0, parseInt(hex.slice(8, 16), 16) | 0];
};

export function createImportRepository(db: Queryable) {
  return {
    async insert(row: { id: string; companyId: string; fileName: string; objectKey: string; sizeBytes: number; rowsTotal: number }): Promise<void> {
      await db.query(
        `INSERT INTO imports (id, company_id, file_name, object_key, size_bytes, rows_total)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [row.id, row.companyId, row.fileName, row.objectKey, row.sizeBytes, row.rowsTotal],
      );
    },

    /** Internal (workers): any company's import. */
    async findById(id: string): Promise<ImportRecord | undefined> {
      const rows = await db.query<Row>(`SELECT ${columns(true)} FROM imports WHERE id = $1`, [id]);
      return rows[0] && toRecord(rows[0]);
    },

    async findForCompany(companyId: string, id: string): Promise<ImportRecord | undefined> {
      const rows = await db.query<Row>(`SELECT ${columns(true)} FROM imports WHERE id = $1 AND company_id = $2`, [id, companyId]);
      return rows[0] && toRecord(rows[0]);
    },

    async listByCompany(companyId: string, opts: { after?: { ts: string; id: string } | undefined; limit: number }): Promise<ImportRecord[]> {
      const rows = await db.query<Row>(
        `SELECT ${columns(false)} FROM imports
          WHERE company_id = $1
            AND ($2::timestamptz IS NULL OR (imports.created_at, imports.id) < ($2::timestamptz, $3::uuid))
          ORDER BY imports.created_at DESC, imports.id DESC
          LIMIT $4`,
        [companyId, opts.after?.ts ?? null, opts.after?.id ?? null, opts.limit],
      );
      return rows.map(toRecord);
    },

    /** Imports a crash may have left behind (in-process mode picks them up again at start). */
    async listUnfinishedIds(): Promise<string[]> {
      const rows = await db.query<{ id: string }>(
        `SELECT id FROM imports WHERE status IN ('queued', 'processing') ORDER BY imports.created_at LIMIT 1000`,
      );
      return rows.map((r) => r.id);
    },

    async markProcessing(id: string): Promise<void> {
      await db.query(
        `UPDATE imports SET status = 'processing', started_at = now(), rows_done = 0, attempts = attempts + 1
          WHERE id = $1 AND status IN ('queued', 'processing')`,
        [id],
      );
    },

    async setProgress(id: string, rowsDone: number, rowsTotal: number): Promise<void> {
      await db.query(
        `UPDATE imports SET rows_done = $2, rows_total = GREATEST(rows_total, $3) WHERE id = $1 AND status = 'processing'`,
        [id, rowsDone, rowsTotal],
      );
    },

    /**
     * Serialises work on one import across processes for the rest of the transaction; false when
     * another transaction holds it (a job redelivered while its first run is still going).
     */
    async tryLock(id: string): Promise<boolean> {
      const [a, b] = lockKey(id);
      const rows = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::int, $2::int) AS locked', [a, b]);
      return rows[0]!.locked === true;
    },

    /**
     * Writes the summary; false when the import is already completed (then the caller must roll
     * its transaction back, so the claims are never stored twice).
     */
    async complete(id: string, summary: ImportSummary): Promise<boolean> {
      const rows = await db.query<{ id: string }>(
        `UPDATE imports
            SET status = 'completed', imported = $2, failed = $3, errors = $4::text::jsonb, rows_total = $5, rows_done = $5,
                message = NULL, failure = NULL, finished_at = now()
          WHERE id = $1 AND status <> 'completed'
          RETURNING id`,
        [id, summary.imported, summary.failed, `[${summary.errorsJson.join(',')}]`, summary.rowsTotal],
      );
      return rows.length === 1;
    },

    async fail(id: string, failure: ImportFailure, message: string): Promise<void> {
      await db.query(
        `UPDATE imports SET status = 'failed', failure = $2, message = $3, finished_at = now()
          WHERE id = $1 AND status <> 'completed'`,
        [id, failure, message],
      );
    },

    async delete(id: string): Promise<void> {
      await db.query('DELETE FROM imports WHERE id = $1', [id]);
    },

    async countClaims(id: string): Promise<number> {
      const rows = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE import_id = $1', [id]);
      return rows[0]!.n;
    },
  };
}
export type ImportRepository = ReturnType<typeof createImportRepository>;

export type IdempotencyRecord = { requestHash: string; statusCode: number | null; response: unknown };

/**
 * Idempotency keys. `claim` inserts the key as "in progress" or reports what is stored; the
 * primary key makes two concurrent first requests race on the insert, and only one wins.
 */
export function createIdempotencyRepository(db: Queryable) {
  const repo = {
    /**
     * Takes the key for a new request: inserted, or an expired (older than `ttlHours`) or
     * abandoned (in progress for longer than `staleMinutes`) entry replaced. Otherwise returns the stored entry.
     */
    async claim(
      companyId: string,
      key: string,
      requestHash: string,
      opts: { ttlHours: number; staleMinutes: number },
    ): Promise<{ claimed: true } | { claimed: false; record: IdempotencyRecord }> {
      const taken = await db.query<{ key: string }>(
        `INSERT INTO idempotency_keys AS k (company_id, key, request_hash) VALUES ($1, $2, $3)
         ON CONFLICT (company_id, key) DO UPDATE
            SET request_hash = EXCLUDED.request_hash, status_code = NULL, response = NULL, created_at = now()
          WHERE k.created_at < now() - make_interval(hours => $4::int)
             OR (k.status_code IS NULL AND k.created_at < now() - make_interval(mins => $5::int))
         RETURNING k.key`,
        [companyId, key, requestHash, opts.ttlHours, opts.staleMinutes],
      );
      if (taken.length === 1) return { claimed: true };
      const rows = await db.query<{ request_hash: string; status_code: number | null; response: string | null }>(
        'SELECT request_hash, status_code, response::text AS response FROM idempotency_keys WHERE company_id = $1 AND key = $2',
        [companyId, key],
      );
      const row = rows[0];
      // Deleted in between (the first request failed with a 5xx): let the caller try again.
      if (!row) return repo.claim(companyId, key, requestHash, opts);
      return {
        claimed: false,
        record: {
          requestHash: row.request_hash,
          statusCode: row.status_code,
          response: row.response === null ? null : JSON.parse(row.response),
        },
      };
    },

    async complete(companyId: string, key: string, statusCode: number, response: unknown): Promise<void> {
      await db.query(
        'UPDATE idempotency_keys SET status_code = $3, response = $4::text::jsonb WHERE company_id = $1 AND key = $2 AND status_code IS NULL',
        [companyId, key, statusCode, JSON.stringify(response)],
      );
    },

    async release(companyId: string, key: string): Promise<void> {
      await db.query('DELETE FROM idempotency_keys WHERE company_id = $1 AND key = $2 AND status_code IS NULL', [companyId, key]);
    },

    /** Drops entries older than the replay window. */
    async purgeExpired(ttlHours: number): Promise<number> {
      const rows = await db.query<{ n: number }>(
        `WITH gone AS (DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1::int) RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [ttlHours],
      );
      return rows[0]!.n;
    },
  };
  return repo;
}
export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;
