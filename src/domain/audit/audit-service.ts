import { validationError } from '../errors';
import { pageOf, pageRequest, type Position } from '../paging';
import { isAuditAction, type AuditAction, type AuditEvent, type AuditEventInput, type AuditRepository } from './audit';

/** An event as GET /api/v1/audit-events shows it (the company is the caller's). */
export type PublicAuditEvent = Omit<AuditEvent, 'company_id'>;
const publicEvent = ({ company_id: _c, ...e }: AuditEvent): PublicAuditEvent => e;

/** Rows read at a time by the exports (CSV, JSONL): never the whole trail in memory. */
const EXPORT_PAGE = 1000;

export type AuditServiceDeps = {
  audit: Pick<AuditRepository, 'list' | 'purgeBefore' | 'record'>;
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

  /** Retention: events older than AUDIT_RETENTION_DAYS go, a batch at a time. The count removed and the cut-off. */
  async function purge(batchSize = 1000): Promise<{ events: number; before: string }> {
    const before = new Date(now() - retentionDays * 86_400_000).toISOString();
    let events = 0;
    for (;;) {
      const n = await audit.purgeBefore(before, batchSize);
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

  return { list, listForCompany, exportEvents, purge, record };
}
export type AuditService = ReturnType<typeof createAuditService>;
