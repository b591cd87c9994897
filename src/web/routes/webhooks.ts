import type { FastifyInstance } from 'fastify';

import { AppError } from '../../domain/errors';
import { companyUser, requireCompanyUser } from '../context';
import { text, type FormBody } from '../forms';
import { renderPage } from '../render';

/**
 * Settings › Webhooks: the company's endpoints, Create (the signing secret is shown once, on the
 * page that answers the form), and the recent deliveries with their outcomes.
 */
export async function webhookRoutes(app: FastifyInstance) {
  const { webhooks } = app.deps;

  async function listPage(companyId: string, extra: Record<string, unknown> = {}) {
    const [endpoints, deliveries] = await Promise.all([webhooks.listEndpoints(companyId), webhooks.listDeliveries(companyId, 50)]);
    return { title: 'Webhooks', endpoints, deliveries, url: '', error: null, ...extra };
  }

  app.get('/settings/webhooks', { preHandler: requireCompanyUser }, async (request, reply) =>
    renderPage(reply, 'webhooks', await listPage(companyUser(request).companyId)),
  );

  app.post('/settings/webhooks', { preHandler: [requireCompanyUser, app.csrfProtection] }, async (request, reply) => {
    const user = companyUser(request);
    const url = text(request.body as FormBody, 'url', 2100);
    try {
      const created = await webhooks.createEndpoint(user.companyId, url);
      request.log.info({ webhookId: created.id }, 'webhook created');
      return renderPage(reply, 'webhook-created', { title: 'Webhook created', webhook: created }, 201);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err;
      return renderPage(reply, 'webhooks', await listPage(user.companyId, { url, error: err.message }), 422);
    }
  });
}
