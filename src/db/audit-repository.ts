import type { AuditEvent, AuditEventInput, AuditPosition, AuditRepository } from '../domain/audit/audit';
import { newId } from '../domain/ids';
import { isoTime } from './columns';
import type { Queryable } from './db';
import { olderThan, positionParams, positionTs } from './keyset';

const COLUMNS = 11;
/** One INSERT of `n` events (one statement, whatever their number). */
const insertOf = (n: number) => `INSERT INTO audit_events
  (id, company_id, action, actor_type, actor_id, actor_name, target_type, target_id, target_name, ip, request_id)
  VALUES ${Array.from({ length: n }, (_, i) => `(${Array.from({ length: COLUMNS }, (_c, j) => `$${i * COLUMNS + j + 1}`).join(', ')})`).join(', ')}`;
const INSERT = insertOf(1);

/**
 * One statement per filter combination (company or all, action or not), each keeping its own
 * index range in a prepared plan; the keyset comparison is the lists' one (keyset.ts).
 */
function listQuery(byCompany: boolean, byAction: boolean): string {
  const where = [
    byCompany ? 'e.company_id = $1::uuid' : '$1::uuid IS NULL',
    byAction ? 'e.action = $2' : '$2::text IS NULL',
    olderThan('e', '$3', '$4'),
    '($5::text IS NULL OR e.created_at >= $5::text::timestamptz)',
  ];
  return `SELECT e.id, e.company_id, e.action, e.actor_type, e.actor_id, e.actor_name, e.target_type, e.target_id, e.target_name,
      e.ip, e.request_id,
      ${isoTime('e.created_at')} AS created_at, ${positionTs('e.created_at')} AS position_ts
    FROM audit_events e
   WHERE ${where.join(' AND ')}
   ORDER BY e.created_at DESC, e.id DESC
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
    async record(events: AuditEventInput | readonly AuditEventInput[]): Promise<void> {
      const list = Array.isArray(events) ? (events as readonly AuditEventInput[]) : [events as AuditEventInput];
      if (list.length === 0) return;
      const params = list.flatMap((e) => [
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
      await db.query(list.length === 1 ? INSERT : insertOf(list.length), params);
    },

    async list({ companyId, action, after, since, limit }) {
      const sql = companyId === null ? (action ? LISTS.allAction : LISTS.all) : action ? LISTS.companyAction : LISTS.company;
      const rows = await db.query<Row>(sql, [companyId, action ?? null, ...positionParams(after), since ?? null, limit]);
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
