import type { FastifyInstance } from 'fastify';

import { alertPage, listAlertsQuery } from '../schemas/alerts';
import { commonErrors } from '../schemas/common';

const security = [{ bearerAuth: [] }];

/** Alerts: what the registry told the caller's company without being asked. */
export async function alertRoutes(app: FastifyInstance) {
  app.get(
    '/alerts',
    {
      config: { access: { scope: 'alerts:read' } },
      schema: {
        operationId: 'listAlerts',
        summary: "Your company's alerts (matches of your claims, status changes of claims you looked at), newest first",
        description:
          'A match alert is made when another company stores a claim (API, dashboard, or a completed import) that a plate or ' +
          'person search for it would find among your claims (same plate or same client, within the search window); one per ' +
          'pair of claims. A status-change alert is made when the owner changes the status of a claim that your look-ups or ' +
          'alerts returned in the last 90 days. Each alert is also an `alert` entry of your look-up log, and is announced by the ' +
          '`alerts.created` webhook event. Cursor-paged like the claims list; `claim_id` keeps the alerts of one of your claims.',
        tags: ['registry'],
        security,
        querystring: listAlertsQuery,
        response: { 200: alertPage, ...commonErrors },
      },
    },
    async (request) => app.deps.alerts.list(request.principal, request.query as { claim_id?: string; cursor?: string; limit: number }),
  );
}
