import type { BatchRecord, LookupBatchRepository, ResultLine } from '../domain/lookups/lookup-batch';
import { visibleClaim } from './claim-visibility';
import { arrayLiteral, jsonArray, isoTime } from './columns';
import type { Queryable } from './db';
import { newId } from '../domain/ids';

const COLUMNS = `b.id, b.company_id, b.token_id, b.user_id, b.purpose, b.status, b.file_name, b.object_key, b.plates, b.rows_done,
  b.distinct_plates, b.invalid_rows, b.message, ${isoTime('b.created_at')} AS created_at, ${isoTime('b.finished_at')} AS finished_at`;

type Row = Omit<BatchRecord, 'companyId' | 'tokenId' | 'userId' | 'objectKey'> & {
  company_id: string;
  token_id: string | null;
  user_id: string | null;
  object_key: string;
};
const toRecord = ({ company_id, token_id, user_id, object_key, ...b }: Row): BatchRecord => ({
  ...b,
  companyId: company_id,
  tokenId: token_id,
  userId: user_id,
  objectKey: object_key,
});

/**
 * One chunk of a batch in one statement: the distinct plates of the chunk (each with its first
 * row), their claims within the window through the plate index, each plate's figures and claim ids
 * aggregated once (a hash join: looking each plate's claims up in the chunk's found claims one by
 * one was quadratic, 4.3 s of a 5,000-plate chunk), a results line for each plate the batch has
 * not seen yet (ON CONFLICT keeps the first), a plate_search look-up entry for each of those (with
 * the claims it returned), and the batch's progress.
 */
const WRITE_CHUNK = `
  WITH q AS MATERIALIZED (
    SELECT p.plate, min(p.seq) AS seq, min(p.id::text)::uuid AS lookup_id
      FROM ROWS FROM (json_array_elements_text($2::text::json), unnest($3::text::int[]), unnest($7::text::uuid[])) AS p(plate, seq, id)
     GROUP BY p.plate
  ), found AS MATERIALIZED (
    SELECT q.plate, c.id, c.company_id, c.claim_date
      FROM q JOIN claims c ON c.vehicle_registration = q.plate AND c.claim_date >= $4::date
     WHERE ${visibleClaim('c')}
  ), per_plate AS MATERIALIZED (
    SELECT q.plate, q.seq, q.lookup_id, count(DISTINCT f.company_id) AS companies, max(f.claim_date) AS latest_claim_date,
           coalesce(array_agg(f.id) FILTER (WHERE f.id IS NOT NULL), '{}'::uuid[]) AS ids
      FROM q LEFT JOIN found f ON f.plate = q.plate
     GROUP BY q.plate, q.seq, q.lookup_id
  ), res AS (
    INSERT INTO lookup_batch_results (batch_id, vehicle_registration, seq, claims, companies, latest_claim_date)
    SELECT $1, p.plate, p.seq, cardinality(p.ids), p.companies, p.latest_claim_date
      FROM per_plate p
    ON CONFLICT (batch_id, vehicle_registration) DO NOTHING
    RETURNING vehicle_registration
  ), logged AS (
    INSERT INTO lookups (id, company_id, token_id, user_id, kind, vehicle_registration, result_count, purpose, created_at,
                         claim_ids, plate_key)
    SELECT p.lookup_id, b.company_id, b.token_id, b.user_id, 'plate_search', r.vehicle_registration,
           cardinality(p.ids), b.purpose, now(), p.ids, r.vehicle_registration
      FROM res r
      JOIN per_plate p ON p.plate = r.vehicle_registration
      CROSS JOIN lookup_batches b
     WHERE b.id = $1
    RETURNING 1
  )
  UPDATE lookup_batches
     SET rows_done = rows_done + $5, invalid_rows = invalid_rows + $6, distinct_plates = distinct_plates + (SELECT count(*) FROM res)
   WHERE id = $1`;

export function createLookupBatchRepository(db: Queryable): LookupBatchRepository {
  return {
    async insert(b) {
      await db.query(
        `INSERT INTO lookup_batches (id, company_id, token_id, user_id, purpose, file_name, object_key, plates)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [b.id, b.companyId, b.tokenId, b.userId, b.purpose, b.fileName, b.objectKey, b.plates],
      );
    },

    async findForCompany(companyId, id) {
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM lookup_batches b WHERE b.id = $1 AND b.company_id = $2`, [id, companyId]);
      return rows[0] && toRecord(rows[0]);
    },

    async start(id) {
      const rows = await db.query<Row>(
        `UPDATE lookup_batches b SET status = 'processing' WHERE b.id = $1 AND b.status IN ('queued', 'processing') RETURNING ${COLUMNS}`,
        [id],
      );
      return rows[0] && toRecord(rows[0]);
    },

    async writeChunk(batch, plates, rows, invalid, fromDate) {
      await db.query(WRITE_CHUNK, [
        batch.id,
        jsonArray(plates, (p) => p.plate),
        arrayLiteral(plates, (p) => String(p.seq)),
        fromDate,
        rows,
        invalid,
        // Time-ordered ids (newId) for the look-up entries: neighbouring pages of the log's primary key.
        arrayLiteral(plates, () => newId()),
      ]);
    },

    async finish(id, status, message) {
      await db.query(
        `UPDATE lookup_batches SET status = $2, message = $3, finished_at = now() WHERE id = $1 AND status IN ('queued', 'processing')`,
        [id, status, message],
      );
      const rows = await db.query<{ object_key: string }>('SELECT object_key FROM lookup_batches WHERE id = $1', [id]);
      return rows[0]?.object_key;
    },

    async setMessage(id, message) {
      await db.query(`UPDATE lookup_batches SET message = $2 WHERE id = $1 AND status = 'processing'`, [id, message]);
    },

    async results(batchId, afterSeq, limit) {
      return db.query<ResultLine>(
        `SELECT vehicle_registration, claims, companies, to_char(latest_claim_date, 'YYYY-MM-DD') AS latest_claim_date, seq
           FROM lookup_batch_results WHERE batch_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
        [batchId, afterSeq, limit],
      );
    },

    async resultCounts(batchId) {
      const rows = await db.query<{ found: number; not_found: number; claims: number }>(
        `SELECT count(*) FILTER (WHERE claims > 0)::int AS found, count(*) FILTER (WHERE claims = 0)::int AS not_found,
                coalesce(sum(claims), 0)::int AS claims
           FROM lookup_batch_results WHERE batch_id = $1`,
        [batchId],
      );
      const r = rows[0]!;
      return { found: r.found, notFound: r.not_found, claims: r.claims };
    },

    async listUnfinished() {
      const rows = await db.query<{ id: string }>(
        `SELECT id FROM lookup_batches WHERE status IN ('queued', 'processing') ORDER BY created_at LIMIT 1000`,
      );
      return rows.map((r) => r.id);
    },
  };
}
