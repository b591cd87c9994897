import type { AuditEvent, AuditEventInput, AuditPosition, AuditRepository } from '../domain/audit/audit';
import { newId } from '../domain/ids';
import type { Queryable } from './db';

const TS = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;
/** The keyset position: microseconds, so that two events of one second keep their order. */
const POSITION_TS = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const INSERT = `INSERT INTO audit_events
  (id, company_id, action, actor_type, actor_id, actor_name, target_type, target_id, target_name, ip, request_id)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;

/**
 * One statement per filter combination (company or all, action or not), each keeping its own
 * index range in a prepared plan. The position is compared as text cast to timestamptz and uuid,
 * so the driver never rounds it.
 */
function listQuery(byCompany: boolean, byAction: boolean): string {
  const where = [
    byCompany ? 'company_id = $1::uuid' : '$1::uuid IS NULL',
    byAction ? 'action = $2' : '$2::text IS NULL',
    '($3::text IS NULL OR (created_at, id) < ($3::text::timestamptz, $4::text::uuid))',
    '($5::text IS NULL OR created_at >= $5::text::timestamptz)',
  ];
  return `SELECT id, company_id, action, actor_type, actor_id, actor_name, target_type, target_id, target_name, ip, request_id,
      ${TS('created_at')} AS created_at, ${POSITION_TS} AS position_ts
    FROM audit_events
   WHERE ${where.join(' AND ')}
   ORDER BY created_at DESC, id DESC
   LIMIT $6`;
}
const LISTS = {
  company: listQuery(true, false),
  companyAction: listQuery(true, true),
  all: listQuery(false, false),
  allAction: listQuery(false, true),
};

type Row = {
  id: string;
  company_id: string | null;
  action: AuditEvent['action'];
  actor_type: AuditEvent['actor']['type'];
  actor_id: string | null;
  actor_name: string;
  target_type: string | null;
  target_id: string | null;
  target_name: string | null;
  ip: string | null;
  request_id: string | null;
  created_at: string;
  position_ts: string;
};

const toEvent = (r: Row): AuditEvent & { position: AuditPosition } => ({
  id: r.id,
  company_id: r.company_id,
  action: r.action,
  actor: { type: r.actor_type, id: r.actor_id, name: r.actor_name },
  target: r.target_type === null ? null : { type: r.target_type, id: r.target_id, name: r.target_name },
  ip: r.ip,
  request_id: r.request_id,
  created_at: r.created_at,
  position: { ts: r.position_ts, id: r.id },
});

/** The audit trail's table. Made on a transaction's connection, `record` writes in that transaction. */
export function createAuditRepository(db: Queryable): AuditRepository {
  return {
    async record(e: AuditEventInput): Promise<void> {
      await db.query(INSERT, [
        newId(),
        e.companyId,
        e.action,
        e.actor.type,
        e.actor.id,
        e.actor.name,
        e.target?.type ?? null,
        e.target?.id ?? null,
        e.target?.name ?? null,
        e.ip,
        e.requestId,
      ]);
    },

    async list({ companyId, action, after, since, limit }) {
      const sql = companyId === null ? (action ? LISTS.allAction : LISTS.all) : action ? LISTS.companyAction : LISTS.company;
      const rows = await db.query<Row>(sql, [companyId, action ?? null, after?.ts ?? null, after?.id ?? null, since ?? null, limit]);
      return rows.map(toEvent);
    },

    async purgeBefore(before: string, limit: number): Promise<number> {
      const rows = await db.query<{ n: number }>(
        `WITH gone AS (
           DELETE FROM audit_events WHERE id IN (
             SELECT id FROM audit_events WHERE created_at < $1::timestamptz ORDER BY created_at LIMIT $2)
           RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [before, limit],
      );
      return rows[0]!.n;
    },
  };
}
