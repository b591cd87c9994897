import { createHash } from 'node:crypto';

/**
 * The audit trail's hash chains (DECISIONS, "The audit trail cannot be rewritten"). Each event's
 * `hash` is SHA-256 over the previous event's hash in its chain (a company's, or the operator's
 * for events of no company) and the event's canonical content. The database makes it when the
 * event is inserted (the trigger of src/db/migrations/0024_audit_chain.sql, in the act's own
 * statement); this file recomputes it for `admin audit:verify`, independently of that code.
 *
 * Canonical content: these fields in this order, each as its length in UTF-8 bytes, a colon and
 * the text, or `~` when null. The previous hash is the first field (null for a chain's first
 * event).
 */

/** An event as the chain sees it: every field as stored, as text (`data` as the database renders its JSON). */
export type ChainEvent = {
  chain_seq: string;
  id: string;
  company_id: string | null;
  action: string;
  actor_type: string;
  actor_id: string | null;
  actor_name: string;
  target_type: string | null;
  target_id: string | null;
  target_name: string | null;
  ip: string | null;
  request_id: string | null;
  data: string | null;
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC. */
  created_at: string;
  hash: string;
};

/** The operator's chain (events of no company); every other chain is named by its company's id. */
export const OPERATOR_CHAIN = 'operator';

const field = (v: string | null): string => (v === null ? '~' : `${Buffer.byteLength(v, 'utf8')}:${v}`);

/** The hash an event must carry after `prev` (null: the chain's first event, or none before the purge's anchor). */
export function chainHash(prev: string | null, e: Omit<ChainEvent, 'hash'>): string {
  const content = [
    prev,
    e.chain_seq,
    e.id,
    e.company_id,
    e.action,
    e.actor_type,
    e.actor_id,
    e.actor_name,
    e.target_type,
    e.target_id,
    e.target_name,
    e.ip,
    e.request_id,
    e.data,
    e.created_at,
  ]
    .map(field)
    .join('');
  return createHash('sha256').update(content, 'utf8').digest('hex');
}

/** A chain's head: its newest event (seq, hash, id), as the database moved it at each insert. */
export type ChainHead = { chain: string; seq: string; hash: string | null; eventId: string | null };

/** Where verification of a chain starts: the newest event the retention purge removed. */
export type ChainAnchor = { seq: number; hash: string };

/** The first event of a chain that does not fit, and why. */
export type ChainBreak = {
  chain: string;
  /** The company whose chain it is; null for the operator's. */
  companyId: string | null;
  /** The event that does not fit (for a chain whose newest events are gone: the head's, no longer present). */
  eventId: string | null;
  seq: string;
  reason: string;
};

export type ChainReport = { chain: string; companyId: string | null; events: number; broken: ChainBreak | null };

/**
 * Walks one chain's events in order (seq ascending), from the anchor, against its head. The first
 * event that does not fit: a seq out of turn (an event before it removed or inserted by hand), a
 * hash that is not the one its content and the previous hash make (changed by hand), or a head
 * further than the last event (the newest events removed).
 */
export async function verifyChain(
  head: ChainHead,
  anchor: ChainAnchor | undefined,
  events: AsyncIterable<ChainEvent>,
): Promise<ChainReport> {
  const companyId = head.chain === OPERATOR_CHAIN ? null : head.chain;
  let prev: string | null = anchor?.hash ?? null;
  let expected = BigInt(anchor?.seq ?? 0) + 1n;
  let count = 0;
  const broken = (eventId: string | null, seq: string, reason: string): ChainReport => ({
    chain: head.chain,
    companyId,
    events: count,
    broken: { chain: head.chain, companyId, eventId, seq, reason },
  });
  for await (const e of events) {
    count++;
    if (BigInt(e.chain_seq) !== expected) {
      return broken(
        e.id,
        e.chain_seq,
        BigInt(e.chain_seq) > expected
          ? `event ${expected} of the chain is missing (removed outside the retention purge)`
          : `event ${e.chain_seq} should have been removed with the purge's anchor ${expected - 1n}`,
      );
    }
    if (chainHash(prev, e) !== e.hash) return broken(e.id, e.chain_seq, 'its content or its hash was changed');
    prev = e.hash;
    expected++;
  }
  const last = expected - 1n;
  if (BigInt(head.seq) !== last || head.hash !== prev) {
    return broken(
      head.eventId,
      head.seq,
      BigInt(head.seq) > last
        ? `the chain's newest events (${last + 1n} to ${head.seq}) are missing`
        : 'the chain head does not match its newest event',
    );
  }
  return { chain: head.chain, companyId, events: count, broken: null };
}
