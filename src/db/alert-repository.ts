import type { Alert, AlertRepository } from '../domain/alerts/alerts';
import { ALERTS_PER_EVENT } from '../domain/alerts/alerts';
import type { Position } from '../domain/paging';
import { INCIDENT_DAYS } from '../domain/registry/registry';
import { visibleClaim } from './claim-visibility';
import type { Queryable } from './db';
import { olderThan, positionParams, positionTs } from './keyset';
import { CLAIM_JSON, claimJson } from './claim-columns';
import { RETURNED_BY } from './registry-repository';
import { isoTime } from './columns';

/**
 * Where a statement finds the claims its alerts are about (matched_claim_id), as alias c: `table`
 * holds them (the claims table, or a CTE of claims the statement itself writes, which the table
 * does not show it), `shown` joins what their API shape needs (co, and cl for CLAIM_JSON), and
 * `json` is that shape.
 */
type AlertedClaims = { table: string; shown: string; json: string };

const STORED_CLAIMS: AlertedClaims = {
  table: 'claims',
  shown: 'JOIN clients cl ON cl.id = c.client_id JOIN companies co ON co.id = c.company_id',
  json: CLAIM_JSON,
};

/**
 * An alert (alias a) as the API shows it, its other company's claim joined as c (AlertedClaims).
 * Match alerts have no from/to; status alerts have claim_id null.
 */
const alertJson = (claim: string) => `CASE a.kind
    WHEN 'match' THEN json_build_object(
      'id', a.id, 'kind', a.kind, 'claim_id', a.claim_id, 'matched_claim', ${claim},
      'matched_on', CASE WHEN a.on_plate AND a.on_client THEN '["vehicle_registration","client"]'::json
                         WHEN a.on_plate THEN '["vehicle_registration"]'::json ELSE '["client"]'::json END,
      'same_incident', a.same_incident,
      'created_at', ${isoTime('a.created_at')})
    ELSE json_build_object(
      'id', a.id, 'kind', a.kind, 'claim_id', NULL, 'matched_claim', ${claim},
      'from', a.from_status, 'to', a.to_status, 'created_at', ${isoTime('a.created_at')})
  END`;
const ALERT_JSON = alertJson(CLAIM_JSON);

/**
 * What follows the INSERT of alerts (a CTE named `made`, RETURNING every column), in the same
 * statement: the `alerts.created` webhook deliveries (each alert is also its told company's
 * look-up log entry, with no second row: registry-repository.ts logPage). Deliveries: the
 * companies with an endpoint only, their alerts numbered per company
 * and grouped by ALERTS_PER_EVENT, one event (and its body, built here in the envelope of
 * enqueueWebhookEvent) per group, one delivery per endpoint. Only alerts this statement made are
 * announced, so a run again (same claims, same import) announces nothing.
 */
const announce = (claims: AlertedClaims, perClaim = false) => {
  // An event is about one stored claim, status change or completed import: with `perClaim` (a
  // statement storing several submitted claims) the alerts about each claim go in events of their own.
  const event = (a: string) => (perClaim ? `${a}.company_id, ${a}.matched_claim_id` : `${a}.company_id`);
  return `
  hooked AS (
    SELECT m.*, (row_number() OVER (PARTITION BY ${event('m')} ORDER BY m.created_at DESC, m.id DESC) - 1) / ${ALERTS_PER_EVENT} AS batch_no
      FROM made m
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.company_id = m.company_id)
  ), events AS (
    SELECT a.company_id, gen_random_uuid() AS event_id,
           json_agg(${alertJson(claims.json)} ORDER BY a.created_at DESC, a.id DESC) AS alerts, count(*)::int AS n
      FROM hooked a
      JOIN ${claims.table} c ON c.id = a.matched_claim_id
      ${claims.shown}
     GROUP BY ${event('a')}, a.batch_no
  ), delivered AS (
    INSERT INTO webhook_deliveries (company_id, endpoint_id, event_key, event_id, event_type, body)
    SELECT e.company_id, w.id, 'alerts.created:' || e.event_id, e.event_id, 'alerts.created',
           json_build_object('id', e.event_id, 'type', 'alerts.created', 'created_at', ${isoTime('now()')},
                             'data', json_build_object('alerts', e.alerts, 'count', e.n))::text
      FROM events e JOIN webhook_endpoints w ON w.company_id = e.company_id
    ON CONFLICT (endpoint_id, event_key) DO NOTHING
  )`;
};
const MADE = `
  SELECT count(*)::int AS made FROM made`;

/**
 * The alerts between the claims of `fresh` themselves, of different companies, when they are a
 * batch of submissions that the claims table does not show each other: as if submitted one after
 * the other in the order of their (time-ordered) ids, the later one tells the earlier one's
 * company, if that earlier claim is dated within the window.
 */
const AMONG_FRESH = (from: string) => `
    UNION ALL
    SELECT g.company_id, 'match', g.id, f.id, g.vehicle_registration = f.vehicle_registration, g.client_id = f.client_id,
           abs(g.claim_date - f.claim_date) <= ${INCIDENT_DAYS}
      FROM fresh f
      JOIN fresh g ON g.id < f.id AND g.company_id <> f.company_id AND g.claim_date >= ${from}::date
                  AND (g.vehicle_registration = f.vehicle_registration OR g.client_id = f.client_id)`;

/**
 * The CTEs making match alerts for the claims of `fresh` (a query giving at least id, company_id,
 * client_id, vehicle_registration, claim_date; and every column of a claim when they are the alerted claims'
 * table): the candidates through the plate index and the client index, set-based, each pair once,
 * other companies' visible claims dated on or after `from` (a parameter) only. `submitted`: the
 * claims of `fresh` are submissions this statement writes (AMONG_FRESH), announced claim by claim.
 */
const matchCtes = (fresh: string, from: string, claims: AlertedClaims, submitted = false) => `
  fresh AS MATERIALIZED (${fresh}),
  candidates AS (
    SELECT f.id AS new_id, o.id AS old_id
      FROM fresh f JOIN claims o ON o.vehicle_registration = f.vehicle_registration AND o.claim_date >= ${from}::date AND o.company_id <> f.company_id
    UNION
    SELECT f.id, o.id
      FROM fresh f JOIN claims o ON o.client_id = f.client_id AND o.claim_date >= ${from}::date AND o.company_id <> f.company_id
  ), made AS (
    INSERT INTO alerts (company_id, kind, claim_id, matched_claim_id, on_plate, on_client, same_incident)
    SELECT o.company_id, 'match', o.id, f.id, o.vehicle_registration = f.vehicle_registration, o.client_id = f.client_id,
           abs(o.claim_date - f.claim_date) <= ${INCIDENT_DAYS}
      FROM candidates x
      JOIN fresh f ON f.id = x.new_id
      JOIN claims o ON o.id = x.old_id
     WHERE ${visibleClaim('o')}${submitted ? AMONG_FRESH(from) : ''}
    ON CONFLICT DO NOTHING
    RETURNING *
  ),${announce(claims, submitted)}`;

const MATCH_CLAIMS = `WITH ${matchCtes(
  'SELECT c.id, c.company_id, c.client_id, c.vehicle_registration, c.claim_date FROM claims c WHERE c.id = ANY ($1::uuid[])',
  '$2',
  STORED_CLAIMS,
)}${MADE}`;

/** An import's claims through the company's newest-first index, from the import's creation on (as its purge finds them). */
const MATCH_IMPORT = `WITH ${matchCtes(
  `SELECT c.id, c.company_id, c.client_id, c.vehicle_registration, c.claim_date
     FROM imports i JOIN claims c ON c.company_id = i.company_id AND c.created_at >= i.created_at
    WHERE i.id = $1 AND c.import_id = $1`,
  '$2',
  STORED_CLAIMS,
)}${MADE}`;

/**
 * The CTEs making match alerts for the claims a statement is writing (one or a batch of
 * submissions), among themselves too, to follow its CTE `new_claims` (an INSERT into claims
 * RETURNING *), which the claims table does not show the rest of the statement: their persons
 * come from `clients`, a parameter holding a JSON object of each claim's client in the API's shape
 * keyed by the claim's id, and the window's first day from `from`. The statement then selects
 * `made` to count them.
 */
export const matchNewClaimsCtes = (from: string, clients: string) =>
  matchCtes(
    'SELECT * FROM new_claims',
    from,
    {
      table: 'fresh',
      shown: 'JOIN companies co ON co.id = c.company_id',
      json: claimJson(`(${clients}::text::json -> c.id::text)`),
    },
    true,
  );

/**
 * The companies whose look-ups (alerts included: each is a look-up entry) returned the claim in
 * the last $4 days, found as the claim's own look-ups are (RETURNED_BY), the owner left out: one
 * status alert each.
 */
const STATUS_CHANGED = `
  WITH changed AS MATERIALIZED (
    SELECT c.id, c.company_id, c.vehicle_registration, c.client_id FROM claims c WHERE c.id = $1
  ), told AS (
    SELECT DISTINCT l.company_id FROM changed x
     CROSS JOIN LATERAL (${RETURNED_BY('x', 'l.created_at >= now() - make_interval(days => $4::int)', 'ALL')}) l
  ), made AS (
    INSERT INTO alerts (company_id, kind, claim_id, matched_claim_id, from_status, to_status)
    SELECT t.company_id, 'status_changed', NULL, x.id, $2, $3
      FROM told t CROSS JOIN changed x
     WHERE t.company_id <> x.company_id
    RETURNING *
  ),${announce(STORED_CLAIMS)}${MADE}`;

/** A company's alerts newest first ($1 company, $3/$4 the position after which, $5 how many; $2 a claim, or unused). */
const list = (forClaim: boolean) => `
  SELECT ${ALERT_JSON} AS alert, ${positionTs('a.created_at')} AS position_ts, a.id
    FROM alerts a
    JOIN claims c ON c.id = a.matched_claim_id
    JOIN clients cl ON cl.id = c.client_id
    JOIN companies co ON co.id = c.company_id
   WHERE a.company_id = $1 AND ${forClaim ? 'a.claim_id = $2::uuid' : '$2::uuid IS NULL'}
     AND ${olderThan('a', '$3', '$4')}
   ORDER BY a.created_at DESC, a.id DESC
   LIMIT $5`;
const LIST = list(false);
const LIST_FOR_CLAIM = list(true);

export function createAlertRepository(db: Queryable): AlertRepository {
  return {
    async matchClaims(claimIds, fromDate) {
      if (claimIds.length === 0) return 0;
      return (await db.query<{ made: number }>(MATCH_CLAIMS, [claimIds, fromDate]))[0]!.made;
    },

    async matchImport(importId, fromDate) {
      return (await db.query<{ made: number }>(MATCH_IMPORT, [importId, fromDate]))[0]!.made;
    },

    async statusChanged(claimId, from, to, days) {
      return (await db.query<{ made: number }>(STATUS_CHANGED, [claimId, from, to, days]))[0]!.made;
    },

    async list(companyId, { claimId, after, limit }) {
      // Two statements rather than one with an optional filter: each keeps its own index range
      // (alerts_company_created_idx, or alerts_claim_idx for one claim) in a prepared plan.
      const rows = await db.query<{ alert: Alert; position_ts: string; id: string }>(claimId === undefined ? LIST : LIST_FOR_CLAIM, [
        companyId,
        claimId ?? null,
        ...positionParams(after),
        limit,
      ]);
      return rows.map((r) => Object.assign(r.alert, { position: { ts: r.position_ts, id: r.id } satisfies Position }));
    },

    async countSince(companyId, since) {
      const rows = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM alerts WHERE company_id = $1 AND created_at >= $2::timestamptz',
        [companyId, since],
      );
      return rows[0]!.n;
    },
  };
}
