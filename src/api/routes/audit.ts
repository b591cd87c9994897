import type { FastifyInstance } from 'fastify';

import { auditEventPage, listAuditEventsQuery } from '../schemas/audit';
import { commonErrors } from '../schemas/common';

/** The company's audit trail: every administrative act, who did it, to what, from where. */
export async function auditRoutes(app: FastifyInstance) {
  app.get(
    '/audit-events',
    {
      config: { access: { scope: 'logs:read' } },
      schema: {
        operationId: 'listAuditEvents',
        summary: "Your company's audit events (tokens, webhooks, people, sign-ins, settings, imports cancelled), newest first",
        description:
          'Every administrative act of your company is recorded in the same transaction as the act. Cursor-paged like the ' +
          "claims list; `action` keeps one action. An act of the operator's command line has the actor " +
          '`{"type": "operator", "id": null, "name": "command line"}` and null `ip` and `request_id`. No event holds a token ' +
          'value, a password, a second-factor secret or a document number.',
        tags: ['audit'],
        security: [{ bearerAuth: [] }],
        querystring: listAuditEventsQuery,
        response: { 200: auditEventPage, ...commonErrors },
      },
    },
    async (request) =>
      app.deps.audit.listForCompany(request.principal.companyId, request.query as { action?: string; cursor?: string; limit: number }),
  );
}
