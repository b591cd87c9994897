import type { FastifyInstance } from 'fastify';

import { AUDIT_ACTIONS } from '../../domain/audit/audit';
import { auditOrigin } from '../../audit-origin';
import { auditCsv } from '../audit-export';
import { companyUser } from '../context';
import { text, type FormBody } from '../forms';
import { renderPage } from '../render';
import { webActor } from '../sign-in-flow';

/** Settings › Audit log (admins): the company's audit events, newest first, and their CSV export. */
export async function auditRoutes(app: FastifyInstance) {
  const { audit } = app.deps;

  app.get('/settings/audit', { config: { access: 'admin' } }, async (request, reply) => {
    const q = request.query as FormBody;
    const action = text(q, 'action', 64);
    const cursor = text(q, 'cursor', 200);
    const page = await audit.list(companyUser(request).companyId, { action, cursor: cursor || undefined, limit: 50 });
    const filter: Record<string, string> = action ? { action } : {};
    const next = page.meta.next_cursor ? new URLSearchParams({ ...filter, cursor: page.meta.next_cursor }) : null;
    return renderPage(reply, 'audit', {
      title: 'Audit log',
      events: page.data,
      actions: AUDIT_ACTIONS,
      action,
      formAction: '/settings/audit',
      exportUrl: `/settings/audit/export.csv${action ? `?${new URLSearchParams(filter).toString()}` : ''}`,
      nextUrl: next ? `/settings/audit?${next.toString()}` : null,
      isFirstPage: !cursor,
      operator: false,
    });
  });

  app.get('/settings/audit/export.csv', { config: { access: 'admin' } }, async (request, reply) => {
    const action = text(request.query as FormBody, 'action', 64);
    const { companyId } = companyUser(request);
    const events = audit.exportEvents(companyId, { action });
    await audit.recordDownload({
      what: 'audit CSV',
      companyId,
      of: { type: 'audit_events', id: null },
      by: { actor: webActor(request) },
      origin: auditOrigin(request),
      details: { action: action || null },
    });
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="audit-${app.deps.today()}.csv"`)
      .send(auditCsv(events));
  });
}
