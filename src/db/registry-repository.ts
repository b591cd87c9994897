import type { Claim } from '../domain/claims/claim';
import type {
  ClaimLookup,
  Lookup,
  Match,
  MatchFacts,
  Network,
  Position,
  RegistryRepository,
  SubjectRecord,
} from '../domain/registry/registry';
import { INCIDENT_DAYS } from '../domain/registry/registry';
import { CLAIM_JSON, documentTypesJson } from './claim-columns';
import { visibleClaim } from './claim-visibility';
import { arrayLiteral, jsonArray, isoTime } from './columns';
import type { Db } from './db';
import { olderThan, positionParams, positionTs } from './keyset';

/**
 * An alert as its told company's look-up log entry (alias l): kind `alert`, naming the claim it
 * tells of, found once. The log has no second row for it: a company's log is its look-ups and its
 * alerts. The columns are the log's (LOG_COLUMNS) but the plate, which the entry takes from the
 * claim (a claim's plate never changes).
 */
const ALERT_ENTRIES = `SELECT a.id, a.company_id, NULL::uuid AS token_id, NULL::uuid AS user_id, NULL::text AS purpose, 'alert'::text AS kind,
         a.matched_claim_id AS claim_id, 1 AS result_count, a.created_at, ARRAY[a.matched_claim_id] AS claim_ids
    FROM alerts a`;

const LOG_COLUMNS =
  'l.id, l.company_id, l.token_id, l.user_id, l.purpose, l.kind, l.vehicle_registration, l.claim_id, l.result_count, l.created_at, l.claim_ids';

/**
 * At most `limit` entries of the look-up log meeting `where` (on alias l, any of LOG_COLUMNS but
 * the plate), newest first: the look-ups and the alerts each through their own newest-first index,
 * then merged.
 */
export const logPage = (where: string, limit: string) => `
  (SELECT ${LOG_COLUMNS} FROM lookups l WHERE ${where} ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit})
  UNION ALL
  (SELECT ${LOG_COLUMNS.replace('l.vehicle_registration', 'c.vehicle_registration')}
     FROM (SELECT * FROM (${ALERT_ENTRIES}) l WHERE ${where} ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit}) l
     LEFT JOIN claims c ON c.id = l.claim_id)
  ORDER BY created_at DESC, id DESC LIMIT ${limit}`;

/**
 * The look-ups that returned claim `claim` (an alias with id, vehicle_registration, client_id),
 * newest first, at most `limit`, those meeting `where` (on alias l): their id, company_id, kind
 * and created_at. Every search that can have returned a claim shares its plate or its person:
 * each of the two indexes gives its candidates newest first (a look-up found through both is
 * taken from the first), and the look-up's claim_ids decide exactly. The alerts that told of the
 * claim are found by it.
 */
export const RETURNED_BY = (claim: string, where: string, limit: string) => `
  (SELECT l.id, l.company_id, l.kind, l.created_at FROM lookups l
    WHERE l.plate_key = ${claim}.vehicle_registration AND ${claim}.id = ANY (l.claim_ids) AND ${where}
    ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit})
  UNION ALL
  (SELECT l.id, l.company_id, l.kind, l.created_at FROM lookups l
    WHERE l.client_key = ${claim}.client_id AND l.plate_key IS DISTINCT FROM ${claim}.vehicle_registration
      AND ${claim}.id = ANY (l.claim_ids) AND ${where}
    ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit})
  UNION ALL
  (SELECT l.id, l.company_id, l.kind, l.created_at FROM (${ALERT_ENTRIES}) l
    WHERE l.claim_id = ${claim}.id AND ${where}
    ORDER BY l.created_at DESC, l.id DESC LIMIT ${limit})`;

/** The parsed claim itself gets its matched_on (no copy of it). */
const withMatchedOn = (m: { claim: Claim; on_plate: boolean; on_client: boolean }): Match =>
  Object.assign(m.claim, {
    matched_on: [...(m.on_plate ? (['vehicle_registration'] as const) : []), ...(m.on_client ? (['client'] as const) : [])],
  });

/** The order of a network's edges (alias e of its CTE edges): the claim itself first, then newest first. */
const EDGE_ORDER = 'e.own DESC, e.claim_date DESC, e.created_at DESC, e.id DESC';

/** The kinds of look-up asked about one claim: found in the log through that claim's plate and person too. */
const ABOUT_A_CLAIM = `('matches', 'incident', 'network')`;

export function createRegistryRepository(db: Db): RegistryRepository {
  return {
    async matches(claimId, companyId, fromDate, timeZone) {
      // One read-only statement: the claim (the caller's own), the matches through two index scans
      // (plate, client) and the indicator counts. The look-up is logged by the caller.
      const rows = await db.query<{
        claim_date: string;
        person_claims: number;
        plate_companies: number;
        client_since: string;
        duplicate_companies: number;
        network_persons: number;
        network_plates: number;
        matches: { claim: Claim; on_plate: boolean; on_client: boolean }[];
      }>(
        `WITH target AS (
           SELECT c.id, c.client_id, c.vehicle_registration, c.claim_date
             FROM claims c
            WHERE c.id = $1 AND c.company_id = $2 AND ${visibleClaim('c')}
         ), candidates AS (
           SELECT c.id FROM target t JOIN claims c ON c.vehicle_registration = t.vehicle_registration AND c.claim_date >= $3::date
           UNION
           SELECT c.id FROM target t JOIN claims c ON c.client_id = t.client_id AND c.claim_date >= $3::date
         ), found AS (
           SELECT c.id, c.claim_date, c.created_at, c.company_id, c.client_id, c.vehicle_registration, ${CLAIM_JSON} AS claim,
                  c.vehicle_registration = t.vehicle_registration AS on_plate, c.client_id = t.client_id AS on_client
             FROM candidates x
             JOIN claims c ON c.id = x.id
             CROSS JOIN target t
             JOIN clients cl ON cl.id = c.client_id
             JOIN companies co ON co.id = c.company_id
            WHERE c.id <> t.id AND ${visibleClaim('c')}
         )
         SELECT to_char(t.claim_date, 'YYYY-MM-DD') AS claim_date,
                (SELECT count(*) FROM claims c
                  WHERE c.client_id = t.client_id
                    AND c.claim_date BETWEEN (t.claim_date - interval '24 months')::date AND t.claim_date
                    AND ${visibleClaim('c')})::int AS person_claims,
                (SELECT count(DISTINCT c.company_id) FROM claims c
                  WHERE c.vehicle_registration = t.vehicle_registration
                    AND c.claim_date BETWEEN (t.claim_date - interval '12 months')::date AND t.claim_date
                    AND ${visibleClaim('c')})::int AS plate_companies,
                (SELECT to_char((cl.created_at AT TIME ZONE $4)::date, 'YYYY-MM-DD') FROM clients cl WHERE cl.id = t.client_id) AS client_since,
                -- duplicate_claim: another company's claim of the same person on the same plate, one incident with this one.
                (SELECT count(DISTINCT f.company_id) FROM found f
                  WHERE f.on_plate AND f.on_client AND f.company_id <> $2 AND abs(f.claim_date - t.claim_date) <= ${INCIDENT_DAYS})::int
                  AS duplicate_companies,
                -- network: the persons and plates of the matches (the claims sharing its plate or person) and its own.
                (SELECT count(*) FROM (SELECT f.client_id FROM found f UNION SELECT t.client_id) x)::int AS network_persons,
                (SELECT count(*) FROM (SELECT f.vehicle_registration FROM found f UNION SELECT t.vehicle_registration) x)::int AS network_plates,
                (SELECT coalesce(json_agg(json_build_object('claim', f.claim, 'on_plate', f.on_plate, 'on_client', f.on_client)
                                          ORDER BY f.claim_date DESC, f.created_at DESC, f.id DESC), '[]'::json)
                   FROM found f) AS matches
           FROM target t`,
        [claimId, companyId, fromDate, timeZone],
      );
      const r = rows[0];
      if (!r) return undefined;
      const facts: MatchFacts = {
        claimDate: r.claim_date,
        personClaims: r.person_claims,
        plateCompanies: r.plate_companies,
        clientSince: r.client_since,
        duplicateCompanies: r.duplicate_companies,
        networkPersons: r.network_persons,
        networkPlates: r.network_plates,
        matches: r.matches.map(withMatchedOn),
      };
      return facts;
    },

    async incident(claimId, companyId, fromDate) {
      // The caller's claim, and the other companies' visible claims within the window dated at most
      // INCIDENT_DAYS from it on its plate or its person: two ranges of the plate index (plate,
      // date) and of the client index. No row: not the caller's claim.
      const rows = await db.query<{ companies: number; claims: { claim: Claim; on_plate: boolean; on_client: boolean }[] }>(
        `WITH target AS (
           SELECT c.id, c.company_id, c.client_id, c.vehicle_registration, c.claim_date
             FROM claims c
            WHERE c.id = $1 AND c.company_id = $2 AND ${visibleClaim('c')}
         ), candidates AS (
           SELECT c.id FROM target t
             JOIN claims c ON c.vehicle_registration = t.vehicle_registration
                          AND c.claim_date BETWEEN t.claim_date - ${INCIDENT_DAYS} AND t.claim_date + ${INCIDENT_DAYS}
           UNION
           SELECT c.id FROM target t
             JOIN claims c ON c.client_id = t.client_id
                          AND c.claim_date BETWEEN t.claim_date - ${INCIDENT_DAYS} AND t.claim_date + ${INCIDENT_DAYS}
         ), found AS (
           SELECT c.id, c.claim_date, c.created_at, c.company_id, ${CLAIM_JSON} AS claim,
                  c.vehicle_registration = t.vehicle_registration AS on_plate, c.client_id = t.client_id AS on_client
             FROM candidates x
             JOIN claims c ON c.id = x.id
             CROSS JOIN target t
             JOIN clients cl ON cl.id = c.client_id
             JOIN companies co ON co.id = c.company_id
            WHERE c.company_id <> t.company_id AND c.claim_date >= $3::date AND ${visibleClaim('c')}
         )
         SELECT (SELECT 1 + count(DISTINCT f.company_id) FROM found f)::int AS companies,
                (SELECT coalesce(json_agg(json_build_object('claim', f.claim, 'on_plate', f.on_plate, 'on_client', f.on_client)
                                          ORDER BY f.claim_date, f.created_at, f.id), '[]'::json)
                   FROM found f) AS claims
           FROM target t`,
        [claimId, companyId, fromDate],
      );
      const r = rows[0];
      if (!r) return undefined;
      return { claims: r.claims.map(withMatchedOn), companies: r.companies };
    },

    async network(claimId, companyId, fromDate, maxEdges) {
      // Two steps from the caller's claim: its plate and person (step one), then the persons and
      // plates of every visible claim within the window on that plate or of that person (step two),
      // through one range of the plate index and one of the client index: those claims are the
      // edges of the graph, and their ends its nodes. The client branch leaves out the claims on
      // the claim's plate (the plate branch has them), so no claim is read twice and nothing has
      // to be deduplicated; the claim itself comes through the plate branch, or on its own when it
      // is dated before the window. The counts are taken over all of them (each DISTINCT its own
      // hash); at most maxEdges edges are returned (the claim itself first, then newest first), as
      // three arrays rather than JSON objects built by the database.
      const rows = await db.query<{
        persons: number;
        plates: number;
        claims: number;
        companies: number;
        edge_ids: string[] | null;
        edge_plates: string[] | null;
        edge_clients: string[] | null;
      }>(
        `WITH target AS (
           SELECT c.id, c.company_id, c.client_id, c.vehicle_registration, c.claim_date, c.created_at
             FROM claims c
            WHERE c.id = $1 AND c.company_id = $2 AND ${visibleClaim('c')}
         ), reached AS MATERIALIZED (
           SELECT c.id, c.company_id, c.client_id, c.vehicle_registration, c.claim_date, c.created_at
             FROM target t JOIN claims c ON c.vehicle_registration = t.vehicle_registration AND c.claim_date >= $3::date
            WHERE ${visibleClaim('c')}
           UNION ALL
           SELECT c.id, c.company_id, c.client_id, c.vehicle_registration, c.claim_date, c.created_at
             FROM target t JOIN claims c ON c.client_id = t.client_id AND c.claim_date >= $3::date
                                        AND c.vehicle_registration <> t.vehicle_registration
            WHERE ${visibleClaim('c')}
           UNION ALL
           SELECT * FROM target WHERE claim_date < $3::date
         ), edges AS (
           SELECT r.id, r.vehicle_registration, r.client_id, r.id = $1 AS own, r.claim_date, r.created_at FROM reached r
            ORDER BY own DESC, r.claim_date DESC, r.created_at DESC, r.id DESC
            LIMIT $4
         )
         SELECT (SELECT count(*) FROM (SELECT DISTINCT client_id FROM reached) x)::int AS persons,
                (SELECT count(*) FROM (SELECT DISTINCT vehicle_registration FROM reached) x)::int AS plates,
                (SELECT count(*) FROM reached)::int AS claims,
                (SELECT count(*) FROM (SELECT DISTINCT company_id FROM reached) x)::int AS companies,
                (SELECT array_agg(e.id::text ORDER BY ${EDGE_ORDER}) FROM edges e) AS edge_ids,
                (SELECT array_agg(e.vehicle_registration ORDER BY ${EDGE_ORDER}) FROM edges e) AS edge_plates,
                (SELECT array_agg(e.client_id::text ORDER BY ${EDGE_ORDER}) FROM edges e) AS edge_clients
           FROM target`,
        [claimId, companyId, fromDate, maxEdges],
      );
      const r = rows[0];
      if (!r) return undefined;
      const ids = r.edge_ids ?? [];
      const plates = r.edge_plates ?? [];
      const clients = r.edge_clients ?? [];
      const edges: Network['edges'] = new Array<Network['edges'][number]>(ids.length);
      for (let i = 0; i < ids.length; i++) edges[i] = { claim_id: ids[i]!, vehicle_registration: plates[i]!, client_id: clients[i]! };
      return { persons: r.persons, plates: r.plates, claims: r.claims, companies: r.companies, edges };
    },

    async searchByPerson(documents, dateOfBirth, fromDate) {
      // The same statement runs whatever the documents resolve to: an unknown document, another
      // date of birth and documents of two persons all find no person and no claim.
      const rows = await db.query<{ person_id: string | null; claims: Claim[]; mismatch: string[] }>(
        `WITH docs AS (
           SELECT DISTINCT d.client_id
             FROM unnest($1::text[], $2::text[]) AS q(doc_type, number_hash)
             JOIN identity_documents d ON d.doc_type = q.doc_type AND d.number_hash = q.number_hash
         ), person AS (
           SELECT cl.id FROM clients cl
            WHERE cl.id = (SELECT client_id FROM docs LIMIT 1)
              AND (SELECT count(*) FROM docs) = 1
              AND cl.date_of_birth = $3::date
         ), found AS (
           SELECT c.id, c.claim_date, c.created_at, ${CLAIM_JSON} AS claim
             FROM person p
             JOIN claims c ON c.client_id = p.id
             JOIN clients cl ON cl.id = c.client_id
             JOIN companies co ON co.id = c.company_id
            WHERE c.claim_date >= $4::date AND ${visibleClaim('c')}
         )
         SELECT (SELECT id FROM person) AS person_id,
                (SELECT coalesce(json_agg(claim ORDER BY claim_date DESC, created_at DESC, id DESC), '[]'::json) FROM found) AS claims,
                -- Found documents that did not resolve to the person: an identity check (a mismatch).
                CASE WHEN EXISTS (SELECT 1 FROM person) THEN '{}'::text[]
                     ELSE (SELECT coalesce(array_agg(client_id::text), '{}'::text[]) FROM docs) END AS mismatch`,
        [documents.map((d) => d.type), documents.map((d) => d.hash), dateOfBirth, fromDate],
      );
      const r = rows[0]!;
      return { personId: r.person_id, claims: r.claims, mismatch: r.mismatch };
    },

    async appendLookups(entries) {
      // One statement for the whole batch, committed (and flushed to disk) before it returns: the
      // look-ups it records are answered only then. A company deleted meanwhile takes its entries
      // with it (as ON DELETE CASCADE would have).
      await db.query(
        // One parameter per column (columns.ts): cheaper for the database to read than a JSON
        // object per entry (docs/decisions.md). Each entry's claim ids are an array literal.
        `WITH entry AS (
           SELECT * FROM ROWS FROM (
                  unnest($1::text::uuid[]), unnest($2::text::uuid[]), unnest($3::text::uuid[]), unnest($4::text::uuid[]),
                  json_array_elements_text($5::text::json), unnest($6::text::text[]), json_array_elements_text($7::text::json),
                  unnest($8::text::uuid[]), unnest($9::text::uuid[]), unnest($10::text::bigint[]),
                  json_array_elements_text($11::text::json), unnest($12::text::int[]))
             AS t(id, company_id, token_id, user_id, purpose, kind, vehicle_registration, client_id, claim_id, at, claim_ids, result_count)
            WHERE EXISTS (SELECT 1 FROM companies co WHERE co.id = t.company_id)
         )
         INSERT INTO lookups (id, company_id, token_id, user_id, purpose, kind, vehicle_registration, client_id, claim_id,
                              result_count, created_at, claim_ids, plate_key, client_key)
         SELECT e.id, e.company_id, e.token_id, e.user_id, e.purpose, e.kind, e.vehicle_registration, e.client_id, e.claim_id,
                coalesce(e.result_count, cardinality(e.claim_ids::uuid[])), to_timestamp(e.at / 1000.0), e.claim_ids::uuid[],
                CASE WHEN e.kind IN ${ABOUT_A_CLAIM} THEN asked.vehicle_registration ELSE e.vehicle_registration END,
                CASE WHEN e.kind IN ${ABOUT_A_CLAIM} THEN asked.client_id ELSE e.client_id END
           FROM entry e
           LEFT JOIN claims asked ON e.kind IN ${ABOUT_A_CLAIM} AND asked.id = e.claim_id`,
        [
          arrayLiteral(entries, (e) => e.id),
          arrayLiteral(entries, (e) => e.companyId),
          arrayLiteral(entries, (e) => e.tokenId),
          arrayLiteral(entries, (e) => e.userId),
          jsonArray(entries, (e) => e.purpose),
          arrayLiteral(entries, (e) => e.kind),
          jsonArray(entries, (e) => e.vehicleRegistration),
          arrayLiteral(entries, (e) => e.clientId),
          arrayLiteral(entries, (e) => e.claimId),
          arrayLiteral(entries, (e) => String(e.at)),
          jsonArray(entries, (e) => arrayLiteral(e.claimIds, (claimId) => claimId)),
          arrayLiteral(entries, (e) => (e.resultCount === null || e.resultCount === undefined ? null : String(e.resultCount))),
        ],
      );
    },

    async listLookups(companyId, { after: at, limit, since }) {
      const rows = await db.query<Lookup & { position_ts: string }>(
        `SELECT l.id, l.kind, l.vehicle_registration, l.claim_id, l.result_count, l.purpose,
                ${isoTime('l.created_at')} AS created_at, ${positionTs('l.created_at')} AS position_ts
           FROM (${logPage(`l.company_id = $1 AND l.created_at >= $5::timestamptz AND ${olderThan('l', '$2', '$3')}`, '$4')}) l
          ORDER BY l.created_at DESC, l.id DESC`,
        [companyId, ...positionParams(at), limit, since],
      );
      return rows.map((l) => ({
        id: l.id,
        kind: l.kind,
        vehicle_registration: l.vehicle_registration,
        claim_id: l.claim_id,
        result_count: l.result_count,
        purpose: l.purpose,
        created_at: l.created_at,
        position: { ts: l.position_ts, id: l.id },
      }));
    },

    async claimLookups(claimId, companyId, { after: at, limit, since }) {
      // One row with nulls when the claim is the caller's and nobody looked; no row when it is not theirs.
      const rows = await db.query<{
        company_name: string | null;
        kind: ClaimLookup['kind'] | null;
        created_at: string | null;
        position_ts: string | null;
        lookup_id: string | null;
      }>(
        `WITH own AS (
           SELECT c.id, c.vehicle_registration, c.client_id FROM claims c WHERE c.id = $1 AND c.company_id = $2 AND ${visibleClaim('c')}
         )
         SELECT x.company_name, x.kind, x.created_at, x.position_ts, x.lookup_id
           FROM own
           LEFT JOIN LATERAL (
             SELECT co.name AS company_name, l.kind, ${isoTime('l.created_at')} AS created_at,
                    ${positionTs('l.created_at')} AS position_ts, l.id AS lookup_id
               FROM (${RETURNED_BY('own', `l.created_at >= $6::timestamptz AND ${olderThan('l', '$3', '$4')}`, '$5')}) l
               JOIN companies co ON co.id = l.company_id
              ORDER BY l.created_at DESC, l.id DESC
              LIMIT $5
           ) x ON true`,
        [claimId, companyId, ...positionParams(at), limit, since],
      );
      if (rows.length === 0) return undefined;
      return rows
        .filter((r) => r.lookup_id !== null)
        .map((r) => ({
          company_name: r.company_name!,
          kind: r.kind!,
          created_at: r.created_at!,
          position: { ts: r.position_ts!, id: r.lookup_id! } satisfies Position,
        }));
    },

    async purgeClaimsBatch(claimsBefore, batchSize) {
      return db.transaction(async (tx) => {
        const deleted = await tx.query<{ claims: number; lookups: number; alerts: number; client_ids: string[] | null }>(
          `WITH batch AS (
             SELECT id, client_id FROM claims WHERE claim_date < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED
           ), ids AS (
             SELECT array_agg(id) AS ids FROM batch
           ), asked AS (
             -- The matches look-ups of these claims.
             DELETE FROM lookups l USING batch b WHERE l.claim_id = b.id RETURNING l.id
           ), alerted AS (
             -- Their alerts (each its told company's look-up entry): those telling of them, and those
             -- told to their companies about others.
             DELETE FROM alerts WHERE id IN (SELECT a.id FROM batch b JOIN alerts a ON a.matched_claim_id = b.id
                                             UNION ALL
                                             SELECT a.id FROM batch b JOIN alerts a ON a.claim_id = b.id)
             RETURNING 1
           ), unlinked AS (
             -- The other look-ups that returned them no longer name them (found by their plate or person).
             UPDATE lookups l
                SET claim_ids = ARRAY(SELECT x FROM unnest(l.claim_ids) AS x WHERE x <> ALL (ids.ids))
               FROM ids
              WHERE l.id IN (SELECT l2.id FROM batch b JOIN claims c ON c.id = b.id
                               JOIN lookups l2 ON (l2.plate_key = c.vehicle_registration OR l2.client_key = c.client_id)
                                              AND c.id = ANY (l2.claim_ids)
                              WHERE l2.claim_id IS NULL OR l2.claim_id <> ALL (ids.ids))
             RETURNING 1
           ), gone AS (
             DELETE FROM claims c USING batch b WHERE c.id = b.id RETURNING c.client_id
           )
           SELECT (SELECT count(*) FROM gone)::int AS claims,
                  (SELECT count(*) FROM asked)::int AS lookups,
                  (SELECT count(*) FROM alerted)::int AS alerts,
                  (SELECT array_agg(DISTINCT client_id) FROM gone)::text[] AS client_ids`,
          [claimsBefore, batchSize],
        );
        const d = deleted[0]!;
        let clients = 0;
        if (d.client_ids && d.client_ids.length > 0) {
          // Clients this batch left with no claim go, and their documents with them (ON DELETE CASCADE).
          const gone = await tx.query<{ n: number }>(
            `WITH gone AS (
               DELETE FROM clients cl
                WHERE cl.id = ANY($1::uuid[]) AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.client_id = cl.id)
               RETURNING 1
             )
             SELECT count(*)::int AS n FROM gone`,
            [d.client_ids],
          );
          clients = gone[0]!.n;
        }
        return { claims: d.claims, clients, lookups: d.lookups, alerts: d.alerts };
      });
    },

    async purgeLookupsBatch(before, batchSize) {
      return db.transaction(async (tx) => {
        const rows = await tx.query<{ n: number }>(
          `WITH batch AS (
             SELECT id FROM lookups WHERE created_at < $1::timestamptz ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
           ), gone AS (
             DELETE FROM lookups l USING batch b WHERE l.id = b.id RETURNING 1
           )
           SELECT count(*)::int AS n FROM gone`,
          [before, batchSize],
        );
        return rows[0]!.n;
      });
    },

    async purgeDeliveryBodiesBatch(before, batchSize) {
      return db.transaction(async (tx) => {
        const rows = await tx.query<{ n: number }>(
          `WITH batch AS (
             SELECT id FROM webhook_deliveries
              WHERE body IS NOT NULL AND status <> 'pending' AND finished_at < $1::timestamptz
              ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED
           ), gone AS (
             UPDATE webhook_deliveries d SET body = NULL, body_deleted_at = now() FROM batch b WHERE d.id = b.id RETURNING 1
           )
           SELECT count(*)::int AS n FROM gone`,
          [before, batchSize],
        );
        return rows[0]!.n;
      });
    },

    async claimDailyRun() {
      const rows = await db.query<{ key: string }>(
        `UPDATE app_meta SET value = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
          WHERE key = 'retention_last_run' AND value::timestamptz < now() - interval '23 hours'
          RETURNING key`,
      );
      return rows.length > 0;
    },

    async subject(documents, dateOfBirth, since) {
      const people = await db.query<SubjectRecord['person']>(
        `WITH docs AS (
           SELECT DISTINCT d.client_id
             FROM unnest($1::text[], $2::text[]) AS q(doc_type, number_hash)
             JOIN identity_documents d ON d.doc_type = q.doc_type AND d.number_hash = q.number_hash
         )
         SELECT cl.id, cl.first_name, cl.last_name, to_char(cl.date_of_birth, 'YYYY-MM-DD') AS date_of_birth,
                ${isoTime('cl.created_at')} AS created_at,
                ${documentTypesJson('cl.id')} AS id_documents
           FROM clients cl
          WHERE cl.id = (SELECT client_id FROM docs LIMIT 1) AND (SELECT count(*) FROM docs) = 1 AND cl.date_of_birth = $3::date`,
        [documents.map((d) => d.type), documents.map((d) => d.hash), dateOfBirth],
      );
      const person = people[0];
      if (!person) return undefined;
      const claims = await db.query<{ claim: Claim }>(
        `SELECT ${CLAIM_JSON} AS claim
           FROM claims c JOIN clients cl ON cl.id = c.client_id JOIN companies co ON co.id = c.company_id
          WHERE c.client_id = $1 AND ${visibleClaim('c')}
          ORDER BY c.claim_date DESC, c.created_at DESC, c.id DESC`,
        [person.id],
      );
      const lookups = await db.query<SubjectRecord['lookups'][number] & { sort_at: string; sort_id: string; claim_sort: string | null }>(
        `SELECT co.name AS company_name, l.kind, c.id AS claim_id, ${isoTime('l.created_at')} AS created_at,
                l.created_at AS sort_at, l.id AS sort_id, c.id AS claim_sort
           FROM claims c
           CROSS JOIN LATERAL (${RETURNED_BY('c', 'l.created_at >= $2::timestamptz', 'ALL')}) l
           JOIN companies co ON co.id = l.company_id
          WHERE c.client_id = $1
         UNION ALL
         -- The identity checks that told a company of one of the person's documents.
         SELECT co.name, l.kind, NULL::uuid, ${isoTime('l.created_at')}, l.created_at AS sort_at, l.id AS sort_id, NULL::uuid
           FROM lookups l JOIN companies co ON co.id = l.company_id
          WHERE l.kind = 'identity_check' AND l.client_key = $1 AND l.created_at >= $2::timestamptz
         UNION ALL
         SELECT co.name, l.kind, NULL::uuid, ${isoTime('l.created_at')}, l.created_at, l.id, NULL::uuid
           FROM lookups l JOIN companies co ON co.id = l.company_id
          WHERE l.kind = 'identity_check' AND l.other_client_key = $1 AND l.created_at >= $2::timestamptz
          ORDER BY sort_at DESC, sort_id DESC, claim_sort`,
        [person.id, since],
      );
      // The deliveries whose body (kept WEBHOOK_RETENTION_DAYS after it was sent or given up)
      // names the person: an alert's claim carries its client. A bounded table (the retention).
      const deliveries = await db.query<SubjectRecord['deliveries'][number]>(
        `SELECT co.name AS company_name, d.event_type, d.status, ${isoTime('d.created_at')} AS created_at,
                ${isoTime('d.finished_at')} AS finished_at
           FROM webhook_deliveries d JOIN companies co ON co.id = d.company_id
          WHERE d.body IS NOT NULL AND strpos(d.body, $1::text) > 0
          ORDER BY d.created_at DESC, d.id DESC`,
        [person.id],
      );
      return {
        person,
        claims: claims.map((r) => r.claim),
        lookups: lookups.map(({ sort_at: _a, sort_id: _i, claim_sort: _c, ...l }) => l),
        deliveries,
      };
    },
  };
}
