import type { AuditActor, AuditEvent, AuditEventInput, AuditPosition, AuditRepository } from '../domain/audit/audit';
import { OPERATOR_CHAIN, type ChainAnchor, type ChainEvent, type ChainHead } from '../domain/audit/audit-chain';
import { newId } from '../domain/ids';
import { isoTime } from './columns';
import type { Queryable } from './db';
import { olderThan, positionParams, positionTs } from './keyset';

const COLUMNS = 12;
/**
 * One INSERT of `n` events (one statement, whatever their number). The table's trigger chains each
 * event to its chain's head within this statement (seq, hash; 0024_audit_chain.sql).
 */
const insertOf = (n: number) => `INSERT INTO audit_events
  (id, company_id, action, actor_type, actor_id, actor_name, target_type, target_id, target_name, ip, request_id, data)
  VALUES ${Array.from({ length: n }, (_, i) => `(${Array.from({ length: COLUMNS }, (_c, j) => `$${i * COLUMNS + j + 1}${j === COLUMNS - 1 ? '::text::jsonb' : ''}`).join(', ')})`).join(', ')}`;
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
      e.ip, e.request_id, e.data,
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
  data: Record<string, unknown> | null;
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
  data: r.data,
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
        e.data === undefined ? null : JSON.stringify(e.data),
      ]);
      await db.query(list.length === 1 ? INSERT : insertOf(list.length), params);
    },

    async list({ companyId, action, after, since, limit }) {
      const sql = companyId === null ? (action ? LISTS.allAction : LISTS.all) : action ? LISTS.companyAction : LISTS.company;
      const rows = await db.query<Row>(sql, [companyId, action ?? null, ...positionParams(after), since ?? null, limit]);
      return rows.map(toEvent);
    },

    async purgeBefore(before: string, limit: number, actor: AuditActor): Promise<number> {
      // The database's one purge function: the only DELETE its triggers let through.
      const rows = await db.query<{ n: number }>('SELECT audit_events_purge($1::timestamptz, $2::int, $3::uuid, $4, $5, $6) AS n', [
        before,
        limit,
        newId(),
        actor.type,
        actor.id,
        actor.name,
      ]);
      return rows[0]!.n;
    },

    async chainHeads(companyId?: string | null): Promise<ChainHead[]> {
      const rows = await db.query<{ chain: string; seq: string; hash: string | null; event_id: string | null }>(
        `SELECT chain, seq::text AS seq, hash, event_id FROM audit_chains
          WHERE $1::boolean OR chain = $2 ORDER BY chain = 'operator' DESC, chain`,
        [companyId === undefined, companyId === undefined ? null : (companyId ?? OPERATOR_CHAIN)],
      );
      return rows.map((r) => ({ chain: r.chain, seq: r.seq, hash: r.hash, eventId: r.event_id }));
    },

    async chainEvents(chain: string, afterSeq: string, limit: number): Promise<ChainEvent[]> {
      // Every field as text, as the database's chain function reads it (created_at in UTC, microseconds);
      // ordered by the column, not by its text alias.
      return db.query<ChainEvent>(
        `SELECT chain_seq::text AS chain_seq, id::text AS id, company_id::text AS company_id, action, actor_type, actor_id, actor_name,
                target_type, target_id, target_name, ip, request_id, data::text AS data,
                to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at, hash
           FROM audit_events
          WHERE ${chain === OPERATOR_CHAIN ? 'company_id IS NULL AND $1::text IS NOT NULL' : 'company_id = $1::uuid'}
            AND chain_seq > $2::bigint
          ORDER BY audit_events.chain_seq
          LIMIT $3`,
        [chain, afterSeq, limit],
      );
    },

    async purgeAnchors(): Promise<Record<string, ChainAnchor>> {
      // The newest purge of the trail itself (the operator's chain, target audit_events).
      const rows = await db.query<{ chains: Record<string, ChainAnchor> | null }>(
        `SELECT data -> 'chains' AS chains FROM audit_events
          WHERE company_id IS NULL AND action = 'data.purged' AND target_type = 'audit_events'
          ORDER BY chain_seq DESC LIMIT 1`,
      );
      return rows[0]?.chains ?? {};
    },
  };
}
