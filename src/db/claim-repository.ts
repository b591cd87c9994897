import type { Claim, ClaimStatus, DocumentType } from '../domain/claims/claim';
import type {
  ClaimRepository,
  LoggedPlateSearch,
  NewClaimRow,
  StatusChange,
  StatusUpdate,
  StoredClaim,
} from '../domain/claims/claim-repository';
import type { DocumentRef, IdentityPlan, KnownDocument } from '../domain/clients/identity';
import { RetryableConflict } from '../domain/errors';
import { matchNewClaimsCtes } from './alert-repository';
import { visibleClaim } from './claim-visibility';
import { CLAIM_COLUMNS, claimOfRow, type ClaimColumns } from './claim-columns';
import { arrayLiteral, jsonArray, isoTime } from './columns';
import type { PageRequest } from '../domain/paging';
import { pgErrorCode, type Queryable } from './db';
import { olderThan, positionParams, positionTs } from './keyset';

const CREATED_AT = isoTime('c.created_at');

/**
 * The answer's columns (claim-columns.ts), never internal ones; with `internal`, also the owner and
 * the paging position (CLAIM_SELECT), which a cross-company search neither needs nor returns
 * (PUBLIC_CLAIM_SELECT); `extra`: columns a statement adds for its own use (claimOfRow drops them).
 */
const claimSelect = (internal: boolean, extra = '') => `
  SELECT ${CLAIM_COLUMNS}${internal ? `, ${positionTs('c.created_at')} AS position_ts, c.company_id` : ''}${extra ? `, ${extra}` : ''}
    FROM claims c
    JOIN clients cl ON cl.id = c.client_id
    JOIN companies co ON co.id = c.company_id`;
const CLAIM_SELECT = claimSelect(true);
const PUBLIC_CLAIM_SELECT = claimSelect(false);

/** A row of CLAIM_SELECT: also the owner and what paging needs. */
type ClaimRow = ClaimColumns & { position_ts: string; company_id: string };

function toClaim(r: ClaimRow): StoredClaim {
  const claim = claimOfRow(r) as StoredClaim;
  claim.companyId = r.company_id;
  claim.position = { ts: r.position_ts, id: r.id };
  return claim;
}

/**
 * New clients, new documents and the claims in one statement, one text parameter per column
 * (columns.ts): array literals for ids, dates, amounts and codes, JSON arrays for the free texts
 * (names, plates).
 */
const insertResolvedCtes = (returning: string) => `WITH new_clients AS (
           INSERT INTO clients (id, first_name, last_name, date_of_birth)
           SELECT * FROM ROWS FROM (unnest($1::text::uuid[]), json_array_elements_text($2::text::json),
                                    json_array_elements_text($3::text::json), unnest($4::text::date[]))
         ), new_documents AS (
           INSERT INTO identity_documents (doc_type, number_hash, client_id)
           SELECT * FROM unnest($5::text::text[], $6::text::text[], $7::text::uuid[]) AS t(doc_type, number_hash, client_id)
            ORDER BY doc_type, number_hash
         ), new_claims AS (
           INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, currency, is_at_fault,
                               vehicle_registration, source, status, import_id)
           SELECT id, company_id, client_id, claim_date, claim_type, amount, 'EUR', is_at_fault,
                  vehicle_registration, source, status, import_id
             FROM ROWS FROM (unnest($8::text::uuid[]), unnest($9::text::uuid[]), unnest($10::text::uuid[]),
                             unnest($11::text::date[]), unnest($12::text::text[]), unnest($13::text::numeric[]),
                             unnest($14::text::boolean[]), json_array_elements_text($15::text::json),
                             unnest($16::text::text[]), unnest($17::text::text[]), unnest($18::text::uuid[]))
                  AS t(id, company_id, client_id, claim_date, claim_type, amount, is_at_fault, vehicle_registration, source,
                       status, import_id)
           RETURNING ${returning}
         )`;
const INSERT_RESOLVED_CTES = insertResolvedCtes('created_at');
const INSERT_RESOLVED = `${INSERT_RESOLVED_CTES}
         SELECT (SELECT ${CREATED_AT} FROM new_claims c LIMIT 1) AS created_at`;
/**
 * The same, and what the foreign keys would have checked row by row, in one pass: how many of the
 * persons ($19) and companies ($20) the rows refer to do not exist. $19 leaves out the statement's
 * new persons, which its other parts cannot see. One key probe each (LIMIT 1 keeps the planner,
 * short of statistics on a growing table, from hashing the whole table instead).
 */
const INSERT_RESOLVED_CHECKED = `${INSERT_RESOLVED_CTES}
         SELECT (SELECT ${CREATED_AT} FROM new_claims c LIMIT 1) AS created_at,
                (SELECT count(*) FROM unnest($19::text::uuid[]) AS r(id)
                   LEFT JOIN LATERAL (SELECT 1 AS found FROM clients cl WHERE cl.id = r.id LIMIT 1) AS x ON true
                  WHERE x.found IS NULL)::int
              + (SELECT count(*) FROM unnest($20::text::uuid[]) AS r(id)
                   LEFT JOIN LATERAL (SELECT 1 AS found FROM companies co WHERE co.id = r.id LIMIT 1) AS x ON true
                  WHERE x.found IS NULL)::int AS missing`;

/**
 * The same for claims submitted one at a time, with the match alerts they make (and their
 * webhook deliveries): one statement, so that an alert exists exactly when its
 * claim does, at the cost of the write alone in round trips. $19 the window's first day, $20 each
 * claim's client in the API's shape keyed by the claim's id.
 */
const INSERT_RESOLVED_ALERTED = `${insertResolvedCtes('*')},${matchNewClaimsCtes('$19', '$20')}
         SELECT (SELECT ${CREATED_AT} FROM new_claims c LIMIT 1) AS created_at`;

const SEARCH_BY_PLATE = `${PUBLIC_CLAIM_SELECT}
   WHERE c.vehicle_registration = $1 AND c.claim_date >= $2::date AND ${visibleClaim('c')}
   ORDER BY c.claim_date DESC, c.created_at DESC, c.id DESC`;

/**
 * Several plate searches and their look-up log entries in one statement, so in one transaction:
 * each search's claims (`n` is its place in the batch) and, for each, the entry naming them, as
 * the look-up journal writes it (registry-repository.ts appendLookups). Its columns are one
 * parameter each (columns.ts).
 */
const SEARCH_BY_PLATE_LOGGED = `
  WITH q AS (
    SELECT * FROM ROWS FROM (
           json_array_elements_text($1::text::json), unnest($2::text::date[]), unnest($3::text::uuid[]), unnest($4::text::uuid[]),
           unnest($5::text::uuid[]), unnest($6::text::uuid[]), json_array_elements_text($7::text::json), unnest($8::text::bigint[]))
      WITH ORDINALITY AS t(plate, from_date, id, company_id, token_id, user_id, purpose, at, n)
  ), found AS MATERIALIZED (${claimSelect(false, 'q.n, c.created_at AS created_ts')}
      JOIN q ON q.plate = c.vehicle_registration
     WHERE c.claim_date >= q.from_date AND ${visibleClaim('c')}
  ), logged AS (
    INSERT INTO lookups (id, company_id, token_id, user_id, purpose, kind, vehicle_registration, result_count, created_at, claim_ids, plate_key)
    SELECT q.id, q.company_id, q.token_id, q.user_id, q.purpose, 'plate_search', q.plate,
           coalesce(cardinality(f.ids), 0), to_timestamp(q.at / 1000.0), coalesce(f.ids, '{}'), q.plate
      FROM q
      LEFT JOIN (SELECT n, array_agg(id) AS ids FROM found GROUP BY n) f ON f.n = q.n
     -- A company deleted meanwhile takes its entries with it (as appendLookups does).
     WHERE EXISTS (SELECT 1 FROM companies co WHERE co.id = q.company_id)
  )
  SELECT * FROM found ORDER BY n, claim_date DESC, created_ts DESC, id DESC`;

/** The persons (other than the new ones) and the companies a write refers to, each once. */
function referencesOf(
  plan: Pick<IdentityPlan, 'newClients' | 'newDocuments'>,
  claims: NewClaimRow[],
): { clients: string[]; companies: string[] } {
  const fresh = new Set(plan.newClients.map((c) => c.id));
  const clients = new Set<string>();
  const companies = new Set<string>();
  for (const d of plan.newDocuments) if (!fresh.has(d.clientId)) clients.add(d.clientId);
  for (const c of claims) {
    if (!fresh.has(c.clientId)) clients.add(c.clientId);
    companies.add(c.companyId);
  }
  return { clients: [...clients], companies: [...companies] };
}

/**
 * The stored documents among the wanted ones ($1 types, $2 hashes), each with its person; with
 * their document types, a subquery per document found (a sixth of an import chunk's look-up on
 * PGlite: imports leave it out).
 */
const findDocuments = (documentTypes: boolean) => `
  SELECT d.doc_type, d.number_hash, d.client_id, cl.first_name, cl.last_name, cl.date_of_birth${
    documentTypes
      ? `,
         ARRAY(SELECT DISTINCT d2.doc_type FROM identity_documents d2 WHERE d2.client_id = d.client_id ORDER BY d2.doc_type)::text[] AS document_types`
      : ''
  }
    FROM unnest($1::text[], $2::text[]) AS q(doc_type, number_hash)
    -- One primary-key probe per wanted document (LIMIT 1 keeps this a nested loop): with a
    -- plain join the planner hashes the whole documents table for a chunk of 5,000.
    CROSS JOIN LATERAL (
      SELECT d.doc_type, d.number_hash, d.client_id FROM identity_documents d
       WHERE d.doc_type = q.doc_type AND d.number_hash = q.number_hash LIMIT 1
    ) AS d
    JOIN clients cl ON cl.id = d.client_id`;
const FIND_DOCUMENTS_WITH_TYPES = findDocuments(true);
const FIND_DOCUMENTS = findDocuments(false);

/**
 * `soleSession`: the database has one session (embedded PGlite), and this repository runs inside
 * one of its transactions. Nothing else runs between that transaction's statements, so a person or
 * company that exists when a statement runs exists when the transaction commits: what PostgreSQL's
 * foreign-key triggers check, one row at a time (a third of an import chunk's write), the write
 * checks itself in one pass (insertResolved). With several sessions (PostgreSQL) the triggers
 * also lock what they find against a concurrent delete: they stay.
 */
export type ClaimRepositoryOptions = { soleSession?: boolean };

export function createClaimRepository(db: Queryable, { soleSession = false }: ClaimRepositoryOptions = {}): ClaimRepository {
  return {
    async findDocuments(refs: DocumentRef[], { documentTypes = true } = {}): Promise<KnownDocument[]> {
      if (refs.length === 0) return [];
      const rows = await db.query<{
        doc_type: DocumentType;
        number_hash: string;
        client_id: string;
        first_name: string;
        last_name: string;
        date_of_birth: string;
        document_types?: DocumentType[];
      }>(documentTypes ? FIND_DOCUMENTS_WITH_TYPES : FIND_DOCUMENTS, [refs.map((r) => r.type), refs.map((r) => r.hash)], {
        genericPlan: true,
      });
      return rows.map((r) => ({
        type: r.doc_type,
        hash: r.number_hash,
        clientId: r.client_id,
        client: { firstName: r.first_name, lastName: r.last_name, dateOfBirth: r.date_of_birth, documentTypes: r.document_types },
      }));
    },

    /**
     * Writes new clients, new documents and the claims in one statement, which is atomic on its
     * own. A document another transaction created since the look-up violates the documents'
     * unique key, a person removed since (retention) a foreign key: the statement writes nothing
     * and RetryableConflict is thrown (look up again).
     * All claims of one statement share created_at (the transaction time).
     *
     * With `soleSession` (see ClaimRepositoryOptions) the statement runs without PostgreSQL's
     * per-row foreign-key triggers, and answers itself how many of the persons and companies it
     * refers to are missing, set-based: a missing one is the same RetryableConflict, and the
     * caller's transaction rolls the statement back. With `matchAlerts` the triggers stay: that
     * statement is for claims submitted one by one, outside any transaction.
     */
    async insertResolved(
      plan: Pick<IdentityPlan, 'newClients' | 'newDocuments'>,
      claims: NewClaimRow[],
      matchAlerts?: { fromDate: string; clients: Record<string, Claim['client']> },
    ): Promise<{ createdAt: string | null }> {
      const params = [
        arrayLiteral(plan.newClients, (c) => c.id),
        jsonArray(plan.newClients, (c) => c.firstName),
        jsonArray(plan.newClients, (c) => c.lastName),
        arrayLiteral(plan.newClients, (c) => c.dateOfBirth),
        arrayLiteral(plan.newDocuments, (d) => d.type),
        arrayLiteral(plan.newDocuments, (d) => d.hash),
        arrayLiteral(plan.newDocuments, (d) => d.clientId),
        arrayLiteral(claims, (c) => c.id),
        arrayLiteral(claims, (c) => c.companyId),
        arrayLiteral(claims, (c) => c.clientId),
        arrayLiteral(claims, (c) => c.input.claim_date),
        arrayLiteral(claims, (c) => c.input.claim_type),
        arrayLiteral(claims, (c) => c.input.amount),
        arrayLiteral(claims, (c) => (c.input.is_at_fault === null ? null : c.input.is_at_fault ? 't' : 'f')),
        jsonArray(claims, (c) => c.input.vehicle_registration),
        arrayLiteral(claims, (c) => c.source),
        arrayLiteral(claims, (c) => c.input.status),
        arrayLiteral(claims, (c) => c.importId),
      ];
      const conflict = (err: unknown): never => {
        const code = pgErrorCode(err);
        if (code === '23505') throw new RetryableConflict('identity document created concurrently');
        // A person found by the look-up was removed since (retention): look up again.
        if (code === '23503') throw new RetryableConflict('person removed concurrently');
        if (code === '40P01') throw new RetryableConflict('deadlock');
        throw err;
      };
      if (matchAlerts) {
        const rows = await db
          .query<{ created_at: string | null }>(
            INSERT_RESOLVED_ALERTED,
            [...params, matchAlerts.fromDate, JSON.stringify(matchAlerts.clients)],
            { genericPlan: true },
          )
          .catch(conflict);
        return { createdAt: rows[0]!.created_at };
      }
      if (!soleSession) {
        const rows = await db.query<{ created_at: string | null }>(INSERT_RESOLVED, params).catch(conflict);
        return { createdAt: rows[0]!.created_at };
      }
      // Sent together, in order: the triggers off, the write, the triggers on again (for the
      // rest of the transaction). After a failed write the last one fails too: the write's
      // error is the one to see.
      const off = db.query(`SET LOCAL session_replication_role = replica`);
      const refs = referencesOf(plan, claims);
      const written = db.query<{ created_at: string | null; missing: number }>(INSERT_RESOLVED_CHECKED, [
        ...params,
        arrayLiteral(refs.clients, (id) => id),
        arrayLiteral(refs.companies, (id) => id),
      ]);
      const on = db.query(`SET LOCAL session_replication_role = origin`);
      written.catch(() => {});
      on.catch(() => {});
      await off;
      const rows = await written.catch(conflict);
      await on;
      if (rows[0]!.missing > 0) throw new RetryableConflict('person removed concurrently');
      return { createdAt: rows[0]!.created_at };
    },

    async findById(companyId: string, id: string): Promise<StoredClaim | undefined> {
      const rows = await db.query<ClaimRow>(`${CLAIM_SELECT} WHERE c.company_id = $1 AND c.id = $2 AND ${visibleClaim('c')}`, [
        companyId,
        id,
      ]);
      return rows[0] && toClaim(rows[0]);
    },

    async listByCompany(companyId: string, opts: { status?: ClaimStatus | undefined } & PageRequest): Promise<StoredClaim[]> {
      const rows = await db.query<ClaimRow>(
        `${CLAIM_SELECT}
          WHERE c.company_id = $1
            AND ${visibleClaim('c')}
            AND ($2::text IS NULL OR c.status = $2)
            AND ${olderThan('c', '$3', '$4')}
          ORDER BY c.created_at DESC, c.id DESC
          LIMIT $5`,
        [companyId, opts.status ?? null, ...positionParams(opts.after), opts.limit],
      );
      return rows.map(toClaim);
    },

    /** A read-only statement: the caller notes the look-up in the look-up log. */
    async searchByPlate(plate: string, fromDate: string): Promise<Claim[]> {
      return (await db.query<ClaimColumns>(SEARCH_BY_PLATE, [plate, fromDate])).map(claimOfRow);
    },

    async searchByPlateLogged(searches: readonly LoggedPlateSearch[]): Promise<Claim[][]> {
      const rows = await db.query<ClaimColumns & { n: string }>(SEARCH_BY_PLATE_LOGGED, [
        jsonArray(searches, (s) => s.plate),
        arrayLiteral(searches, (s) => s.fromDate),
        arrayLiteral(searches, (s) => s.entry.id),
        arrayLiteral(searches, (s) => s.entry.companyId),
        arrayLiteral(searches, (s) => s.entry.tokenId),
        arrayLiteral(searches, (s) => s.entry.userId),
        jsonArray(searches, (s) => s.entry.purpose),
        arrayLiteral(searches, (s) => String(s.entry.at)),
      ]);
      const found: Claim[][] = searches.map(() => []);
      for (const r of rows) found[Number(r.n) - 1]!.push(claimOfRow(r));
      return found;
    },

    /**
     * Sets the status of a claim of the given company and records the change, in one statement.
     * Reads and writes only that company's claim; of another company's claim it learns only that
     * it exists (the contract answers 403 there). A same-status update changes and records nothing.
     */
    async updateStatus(companyId: string, id: string, status: ClaimStatus, actor): Promise<StatusUpdate> {
      const rows = await db.query<{ own: boolean; status: ClaimStatus | null }>(
        `WITH current AS (
           SELECT c.id, c.status FROM claims c WHERE c.company_id = $1 AND c.id = $2 AND ${visibleClaim('c')} FOR UPDATE OF c
         ), changed AS (
           UPDATE claims SET status = $3, updated_at = now()
             FROM current
            WHERE claims.company_id = $1 AND claims.id = current.id AND current.status <> $3
           RETURNING claims.id
         ), recorded AS (
           INSERT INTO claim_status_changes (claim_id, from_status, to_status, changed_by_token_id, changed_by_user_id)
           SELECT current.id, current.status, $3, $4::uuid, $5::uuid FROM current JOIN changed ON changed.id = current.id
         )
         SELECT true AS own, status FROM current
         UNION ALL
         SELECT false, NULL FROM claims c
          WHERE c.id = $2 AND c.company_id <> $1 AND ${visibleClaim('c')} AND NOT EXISTS (SELECT 1 FROM current)`,
        [companyId, id, status, actor.tokenId, actor.userId],
      );
      const row = rows[0];
      if (!row) return { found: 'none' };
      return row.own ? { found: 'own', previous: row.status! } : { found: 'other' };
    },

    async statusHistory(companyId: string, id: string): Promise<StatusChange[]> {
      return db.query<StatusChange>(
        `SELECT s.from_status, s.to_status, s.changed_by_token_id, s.changed_by_user_id
           FROM claim_status_changes s JOIN claims c ON c.id = s.claim_id
          WHERE c.company_id = $1 AND s.claim_id = $2
          ORDER BY s.id`,
        [companyId, id],
      );
    },
  };
}
