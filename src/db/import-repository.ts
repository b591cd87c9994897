import { jsonArray } from './columns';
import type {
  HistoryEntry,
  ImportFailure,
  ImportRecord,
  ImportRepositoryPort,
  ImportStatus,
  RowError,
  TransitionPatch,
} from '../domain/imports/ports';
import type { PageRequest } from '../domain/paging';
import { pgErrorCode, type Queryable } from './db';
import { olderThan, positionParams, positionTs } from './keyset';
import { isoTime } from './columns';

export { IMPORT_STATUSES } from '../domain/imports/ports';
export type { ImportFailure, ImportRecord, ImportStatus, RowError } from '../domain/imports/ports';

/** A history entry's time: milliseconds, so that quick successive changes keep their order. */
const NOW_MS = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The rows committed so far by a processing import's chunks, as its ledger has them. */
const LEDGER_ROWS = `coalesce((SELECT sum(l.rows_done)::int FROM import_chunks l WHERE l.import_id = imports.id), 0)`;
/**
 * A processing import's progress is added up from its ledger when read: its chunks commit side by
 * side and do not write the imports row (they would wait for each other's locks). `%` stands for it.
 */
const PROGRESS = (stored: string, live: string) =>
  `CASE WHEN status = 'processing' THEN ${live.replace('%', LEDGER_ROWS)} ELSE ${stored} END`;

/** The list leaves the (possibly large) errors out; `withErrors` adds them. */
const columns = (withErrors: boolean) => `
  id, company_id, status, file_name, object_key, size_bytes::float8 AS size_bytes,
  ${PROGRESS('rows_total', 'GREATEST(rows_total, %)')} AS rows_total, ${PROGRESS('rows_done', '%')} AS rows_done,
  imported, failed, ${withErrors ? 'errors::text' : 'NULL::text'} AS errors, message, failure, attempts,
  history::text AS history, cancel_requested_at IS NOT NULL AS cancel_requested, columns,
  ${isoTime('created_at')} AS created_at, ${isoTime('started_at')} AS started_at, ${isoTime('finished_at')} AS finished_at,
  ${positionTs('created_at')} AS position_ts`;

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
  history: string;
  cancel_requested: boolean;
  columns: string[] | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  position_ts: string;
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
    history: JSON.parse(r.history) as HistoryEntry[],
    cancelRequested: r.cancel_requested,
    columns: r.columns,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    position: { ts: r.position_ts, id: r.id },
  };
}

/**
 * Whether an import's claims are more than a tenth of those the claims table's statistics counted
 * (PostgreSQL's own autovacuum rule: 50 rows and 10%; reltuples is -1 before the first count).
 */
const STATISTICS_STALE = `
  SELECT coalesce((SELECT sum(l.imported) FROM import_chunks l WHERE l.import_id = $1), 0) > 50 + 0.1 * greatest(c.reltuples, 0) AS stale
    FROM pg_class c WHERE c.oid = 'claims'::regclass`;

/**
 * `embedded`: the database is PGlite, which runs no autovacuum, so that the planner's statistics
 * are only what the import repository brings up to date (refreshStatistics).
 */
export function createImportRepository(db: Queryable, { embedded = false }: { embedded?: boolean } = {}) {
  const repo = {
    async insert(row: {
      id: string;
      companyId: string;
      fileName: string;
      objectKey: string;
      sizeBytes: number;
      rowsTotal: number;
      sha256?: string | undefined;
    }): Promise<void> {
      await db.query(
        `INSERT INTO imports (id, company_id, file_name, object_key, size_bytes, rows_total, sha256, history)
         VALUES ($1, $2, $3, $4, $5, $6, $7, jsonb_build_array(jsonb_build_object('status', 'queued', 'at', ${NOW_MS})))`,
        [row.id, row.companyId, row.fileName, row.objectKey, row.sizeBytes, row.rowsTotal, row.sha256 ?? null],
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

    async listByCompany(companyId: string, opts: PageRequest): Promise<ImportRecord[]> {
      const rows = await db.query<Row>(
        `SELECT ${columns(false)} FROM imports
          WHERE company_id = $1
            AND ${olderThan('imports', '$2', '$3')}
          ORDER BY imports.created_at DESC, imports.id DESC
          LIMIT $4`,
        [companyId, ...positionParams(opts.after), opts.limit],
      );
      return rows.map(toRecord);
    },

    /** Imports a crash may have left behind (in-process mode picks them up again at start). */
    async listUnfinished(): Promise<{ id: string; companyId: string }[]> {
      const rows = await db.query<{ id: string; company_id: string }>(
        `SELECT id, company_id FROM imports WHERE status IN ('queued', 'processing') ORDER BY imports.created_at LIMIT 1000`,
      );
      return rows.map((r) => ({ id: r.id, companyId: r.company_id }));
    },

    /** Through imports_unfinished_idx: the unfinished imports are few, whatever a company's history. */
    async countUnfinished(companyId: string): Promise<number> {
      const rows = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM imports WHERE status IN ('queued', 'processing') AND company_id = $1`,
        [companyId],
      );
      return rows[0]!.n;
    },

    async lock(id: string) {
      const rows = await db.query<{
        status: ImportStatus;
        cancel_requested: boolean;
        company_id: string;
        last_chunk: number | null;
        ledger_rows: number | null;
      }>(
        `SELECT i.status, i.cancel_requested_at IS NOT NULL AS cancel_requested, i.company_id, l.last_chunk, l.ledger_rows
           FROM imports i
           CROSS JOIN LATERAL (
             SELECT max(c.chunk_no) AS last_chunk, sum(c.rows_done)::int AS ledger_rows FROM import_chunks c WHERE c.import_id = i.id
           ) AS l
          WHERE i.id = $1
            FOR NO KEY UPDATE OF i`,
        [id],
      );
      const r = rows[0];
      return (
        r && {
          status: r.status,
          cancelRequested: r.cancel_requested,
          companyId: r.company_id,
          ledger: r.last_chunk === null ? undefined : { chunkNo: r.last_chunk, rowsDone: r.ledger_rows ?? 0 },
        }
      );
    },

    async transition(
      id: string,
      from: readonly ImportStatus[],
      to: ImportStatus,
      patch: TransitionPatch,
    ): Promise<ImportRecord | undefined> {
      const sets = [
        'status = $3',
        `history = history || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('status', $3::text, 'at', ${NOW_MS}, 'attempt', ${
          patch.startAttempt ? 'attempts + 1' : 'NULL::int'
        })))`,
      ];
      const params: unknown[] = [id, from, to];
      if (patch.startAttempt) {
        sets.push(
          'attempts = attempts + 1',
          'started_at = coalesce(started_at, now())',
          'rows_done = coalesce((SELECT sum(l.rows_done)::int FROM import_chunks l WHERE l.import_id = imports.id), 0)',
        );
      }
      if (patch.summaryFromLedger) {
        sets.push(
          `imported = coalesce((SELECT sum(l.imported)::int FROM import_chunks l WHERE l.import_id = imports.id), 0)`,
          `failed = coalesce((SELECT sum(l.failed)::int FROM import_chunks l WHERE l.import_id = imports.id), 0)`,
          `rows_done = coalesce((SELECT sum(l.rows_done)::int FROM import_chunks l WHERE l.import_id = imports.id), 0)`,
          `rows_total = coalesce((SELECT sum(l.rows_done)::int FROM import_chunks l WHERE l.import_id = imports.id), 0)`,
          `errors = coalesce((SELECT jsonb_agg(e.value ORDER BY l.chunk_no, e.ordinality)
                                FROM import_chunks l, jsonb_array_elements(l.errors) WITH ORDINALITY AS e
                               WHERE l.import_id = imports.id), '[]'::jsonb)`,
        );
      }
      // Progress as it stood when the import stopped (its chunks do not write it: see PROGRESS).
      if (to === 'failed' || to === 'cancelled') sets.push(`rows_done = ${LEDGER_ROWS}`);
      if (patch.message !== undefined) sets.push(`message = $${params.push(patch.message)}`);
      if (patch.failure !== undefined) sets.push(`failure = $${params.push(patch.failure)}`);
      if (to === 'completed' || to === 'failed' || to === 'cancelled') sets.push('finished_at = now()');
      const rows = await db.query<{ id: string }>(
        `UPDATE imports SET ${sets.join(', ')} WHERE id = $1 AND status = ANY($2::text[]) RETURNING id`,
        params,
      );
      return rows.length === 1 ? repo.findById(id) : undefined;
    },

    async lockShared(id: string) {
      // set_config(…, true) is SET LOCAL, in the lock's statement: see ImportRepositoryPort.lockShared.
      const rows = await db.query<{ status: ImportStatus; cancel_requested: boolean }>(
        `SELECT status, cancel_requested_at IS NOT NULL AS cancel_requested, set_config('synchronous_commit', 'off', true)
           FROM imports WHERE id = $1 FOR KEY SHARE`,
        [id],
      );
      const r = rows[0];
      return r && { status: r.status, cancelRequested: r.cancel_requested };
    },

    async setColumns(id: string, cols: string[]): Promise<void> {
      await db.query('UPDATE imports SET columns = coalesce(columns, $2::text[]) WHERE id = $1', [id, cols]);
    },

    async setMessage(id: string, message: string | null): Promise<void> {
      await db.query(`UPDATE imports SET message = $2 WHERE id = $1 AND status = 'processing'`, [id, message]);
    },

    async endedObjects(objects: { key: string; kind: 'import' | 'batch'; id: string; modified: Date }[], orphanBefore: Date) {
      // One statement for a page of stored files: a file goes when its import or batch has ended,
      // or when it has none and is older than orphanBefore (ids and kinds from the keys).
      const rows = await db.query<{ key: string }>(
        `SELECT o.key
           FROM (SELECT key, kind, id::uuid, modified::timestamptz
                   FROM ROWS FROM (json_array_elements_text($1::text::json), json_array_elements_text($2::text::json),
                                   json_array_elements_text($3::text::json), json_array_elements_text($4::text::json))
                        AS t(key, kind, id, modified)) AS o
           LEFT JOIN imports i ON o.kind = 'import' AND i.id = o.id
           LEFT JOIN lookup_batches b ON o.kind = 'batch' AND b.id = o.id
          WHERE CASE
                  WHEN i.id IS NOT NULL THEN i.status NOT IN ('queued', 'processing') AND i.object_key = o.key
                  WHEN b.id IS NOT NULL THEN b.status NOT IN ('queued', 'processing') AND b.object_key = o.key
                  ELSE o.modified < $5
                END`,
        [
          jsonArray(objects, (o) => o.key),
          jsonArray(objects, (o) => o.kind),
          jsonArray(objects, (o) => o.id),
          jsonArray(objects, (o) => o.modified.toISOString()),
          orphanBefore.toISOString(),
        ],
      );
      return rows.map((r) => r.key);
    },

    async requestCancel(id: string): Promise<void> {
      await db.query(
        `UPDATE imports SET cancel_requested_at = coalesce(cancel_requested_at, now()) WHERE id = $1 AND status = 'processing'`,
        [id],
      );
    },

    async delete(id: string): Promise<void> {
      await db.query('DELETE FROM imports WHERE id = $1', [id]);
    },

    async listToPurge(limit: number): Promise<{ id: string; companyId: string }[]> {
      const rows = await db.query<{ id: string; company_id: string }>(
        `SELECT id, company_id FROM imports WHERE status IN ('failed', 'cancelled') AND claims_purged_at IS NULL
          ORDER BY finished_at LIMIT $1`,
        [limit],
      );
      return rows.map((r) => ({ id: r.id, companyId: r.company_id }));
    },

    /**
     * An import's claims were all created after the import itself: they are found through the
     * company's claims by creation time (claims_company_created_idx), with no index of their own.
     */
    async purgeClaims(id: string, companyId: string, batch: number): Promise<number> {
      const rows = await db.query<{ n: number }>(
        `WITH gone AS (
           DELETE FROM claims WHERE id IN (
             SELECT c.id FROM imports i
               JOIN claims c ON c.company_id = i.company_id AND c.created_at >= i.created_at
              WHERE i.id = $1 AND c.company_id = $2 AND c.import_id = $1
              LIMIT $3
           ) RETURNING 1
         ) SELECT count(*)::int AS n FROM gone`,
        [id, companyId, batch],
      );
      return rows[0]!.n;
    },

    /**
     * Removes the persons the import created that have no claim (its own claims are purged
     * first), their documents with them, and its notes of them; how many persons went. A claim
     * written meanwhile on one of them by a submission keeps it: the delete then loses on the
     * claims' foreign key and runs again, seeing that claim.
     */
    async purgePersons(id: string): Promise<number> {
      for (let attempt = 1; ; attempt++) {
        try {
          const rows = await db.query<{ n: number }>(
            `WITH created AS (
               SELECT DISTINCT unnest(client_ids) AS id FROM import_persons WHERE import_id = $1
             ), gone AS (
               DELETE FROM clients cl USING created
                WHERE cl.id = created.id AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.client_id = cl.id)
               RETURNING 1
             ), noted AS (
               DELETE FROM import_persons WHERE import_id = $1
             )
             SELECT count(*)::int AS n FROM gone`,
            [id],
          );
          return rows[0]!.n;
        } catch (err) {
          if (pgErrorCode(err) !== '23503' || attempt >= 5) throw err;
        }
      }
    },

    /** Forgets which persons a completed import created (they all have its claims). */
    async forgetPersons(id: string): Promise<void> {
      await db.query('DELETE FROM import_persons WHERE import_id = $1', [id]);
    },

    async markPurged(id: string): Promise<void> {
      await db.query('UPDATE imports SET claims_purged_at = now() WHERE id = $1', [id]);
    },

    async refreshStatistics(id: string): Promise<boolean> {
      if (!embedded) return false;
      if (!(await db.query<{ stale: boolean }>(STATISTICS_STALE, [id]))[0]?.stale) return false;
      // The statistics planning every search (by plate, client, company) and the import's match alerts.
      await db.query('ANALYZE claims');
      return true;
    },

    async countClaims(id: string): Promise<number> {
      const rows = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE import_id = $1', [id]);
      return rows[0]!.n;
    },
  } satisfies ImportRepositoryPort & Record<string, unknown>;
  return repo;
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
