import { validationError } from '../errors';
import { pageOf, pageRequest, type Position } from '../paging';
import type { Principal } from '../principal';
import {
  actorOf,
  isAuditAction,
  SYSTEM_ACTOR,
  type AuditAction,
  type AuditActor,
  type AuditEvent,
  type AuditEventInput,
  type AuditOrigin,
  type AuditRepository,
} from './audit';
import { verifyChain, type ChainEvent, type ChainReport } from './audit-chain';

/** An event as GET /api/v1/audit-events shows it (the company is the caller's). */
export type PublicAuditEvent = Omit<AuditEvent, 'company_id' | 'data'>;
const publicEvent = ({ company_id: _c, data: _d, ...e }: AuditEvent): PublicAuditEvent => e;

/** Rows read at a time by the exports (CSV, JSONL): never the whole trail in memory. */
const EXPORT_PAGE = 1000;

/** The downloads of personal data (DECISIONS, "The audit trail cannot be rewritten"), as `data.exported` names them. */
export type ExportedData = 'claims CSV' | 'audit CSV' | 'failed rows' | 'batch results' | 'subject export';

/** What a download was of: its kind, and the import, batch or subject it belongs to. */
export type Download = {
  what: ExportedData;
  /** The company whose data it is; null: the operator's (a subject export). */
  companyId: string | null;
  /** The import, batch, claims list or subject (its type and id). */
  of: { type: string; id: string | null };
  /** Who downloads: a principal of the API or the dashboard (actor from it), or an actor given. */
  by: { principal: Principal } | { actor: AuditActor };
  origin: AuditOrigin;
  /** Besides (a claims list's filters, an audit CSV's action): never a document number or a secret. */
  details?: Record<string, string | number | boolean | null>;
};

export type AuditServiceDeps = {
  audit: Pick<AuditRepository, 'record' | 'list' | 'purgeBefore' | 'chainHeads' | 'chainEvents' | 'purgeAnchors'>;
  /** AUDIT_RETENTION_DAYS. */
  retentionDays: number;
  now?: () => number;
};

export function createAuditService({ audit, retentionDays, now = Date.now }: AuditServiceDeps) {
  function actionOf(raw: string | undefined): AuditAction | undefined {
    if (raw === undefined || raw === '') return undefined;
    if (!isAuditAction(raw)) throw validationError({ action: ['The action is not one the audit trail records.'] });
    return raw;
  }

  /**
   * One page, newest first: a company's events, or (companyId null) every company's and the
   * operator's own. Paged like the claims list: `next_cursor` until the last page.
   */
  async function list(companyId: string | null, opts: { action?: string | undefined; cursor?: string | undefined; limit: number }) {
    const action = actionOf(opts.action);
    const { after, limit } = pageRequest(opts);
    const rows = await audit.list({ companyId, action, after, limit });
    return pageOf(rows, opts.limit, ({ position: _p, ...e }): AuditEvent => e);
  }

  /** The company's events for GET /api/v1/audit-events. */
  async function listForCompany(companyId: string, opts: { action?: string | undefined; cursor?: string | undefined; limit: number }) {
    const page = await list(companyId, opts);
    return { data: page.data.map(publicEvent), meta: page.meta };
  }

  /** Every event (newest first) of a company, or of all (null), since an instant: read a page at a time. */
  async function* exportEvents(companyId: string | null, opts: { since?: string | undefined; action?: string | undefined } = {}) {
    const action = actionOf(opts.action);
    let after: Position | undefined;
    for (;;) {
      const rows = await audit.list({ companyId, action, after, since: opts.since, limit: EXPORT_PAGE });
      for (const { position: _p, ...e } of rows) yield e;
      if (rows.length < EXPORT_PAGE) return;
      after = rows.at(-1)!.position;
    }
  }

  /**
   * Retention: events older than AUDIT_RETENTION_DAYS go, a batch at a time, through the
   * database's one purge function (each batch that removed any records itself, with the chains'
   * anchors). The count removed and the cut-off.
   */
  async function purge(actor: AuditActor = SYSTEM_ACTOR, batchSize = 1000): Promise<{ events: number; before: string }> {
    const before = new Date(now() - retentionDays * 86_400_000).toISOString();
    let events = 0;
    for (;;) {
      const n = await audit.purgeBefore(before, batchSize, actor);
      events += n;
      if (n < batchSize) break;
    }
    return { events, before };
  }

  /**
   * Records an act that has no transaction of its own to share (a sign-in, a change in Bull
   * Board's queue): one statement, committed before the act is answered. An act that writes to
   * the database records its event in its own transaction instead (`recordAudit(tx, event)`).
   */
  const record = (event: AuditEventInput): Promise<void> => audit.record(event);

  /**
   * Checks every chain (or the company's), a page at a time: each event's seq follows the one
   * before, its hash is the one its content and the previous hash make, and the chain's head is
   * its newest event; chains start at the newest audit purge's anchors. A report per chain, with
   * the first event that does not fit.
   */
  async function verify(companyId?: string): Promise<ChainReport[]> {
    const [heads, anchors] = await Promise.all([audit.chainHeads(companyId), audit.purgeAnchors()]);
    const reports: ChainReport[] = [];
    for (const head of heads) {
      const anchor = anchors[head.chain];
      reports.push(await verifyChain(head, anchor, chainEvents(head.chain, String(anchor?.seq ?? 0))));
    }
    return reports;
  }

  async function* chainEvents(chain: string, afterSeq: string): AsyncGenerator<ChainEvent> {
    let after = afterSeq;
    for (;;) {
      const rows = await audit.chainEvents(chain, after, EXPORT_PAGE);
      yield* rows;
      if (rows.length < EXPORT_PAGE) return;
      after = rows.at(-1)!.chain_seq;
    }
  }

  /**
   * A download of personal data, recorded before its first byte is sent: one statement committed
   * on its own (the download changes nothing to be recorded with), so the event is durable when
   * this returns, and a download whose event cannot be written is not sent.
   */
  async function recordDownload(d: Download): Promise<void> {
    await audit.record({
      companyId: d.companyId,
      action: 'data.exported',
      actor: 'actor' in d.by ? d.by.actor : actorOf(d.by.principal),
      target: { type: d.of.type, id: d.of.id, name: d.what },
      ip: d.origin.ip,
      requestId: d.origin.requestId,
      data: { what: d.what, ...d.details },
    });
  }

  return { list, listForCompany, exportEvents, purge, verify, recordDownload, record };
}
export type AuditService = ReturnType<typeof createAuditService>;
