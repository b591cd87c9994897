import type { FastifyInstance, FastifyRequest } from 'fastify';

import { auditOrigin } from '../../audit-origin';
import { personActor } from '../../domain/audit/audit';
import { AppError } from '../../domain/errors';
import { WEBHOOK_EVENTS, webhookMessages } from '../../domain/webhooks/webhook-service';
import { companyUser } from '../context';
import { text, type FormBody } from '../forms';
import { WEBHOOK_EVENT_WORDS, webhookUrlMessage } from '../messages';
import { renderPage } from '../render';

declare module 'fastify' {
  interface Session {
    /** A webhook's new signing secret, shown once on the page the rotation redirects to (never in a URL). */
    rotatedWebhookSecret?: { id: string; url: string; secret: string; previousValidUntil: string };
  }
}

/**
 * Settings › Webhooks (admins): the company's endpoints, Create (the signing secret is shown once, on the
 * page that answers the form), Delete (after a confirmation page), and the recent deliveries with
 * their outcomes.
 */
export async function webhookRoutes(app: FastifyInstance) {
  const { webhooks } = app.deps;

  async function listPage(companyId: string, extra: Record<string, unknown> = {}) {
    const [endpoints, deliveries] = await Promise.all([webhooks.listEndpoints(companyId), webhooks.listDeliveries(companyId, 50)]);
    const maxAttempts = app.deps.config.webhookRetrySchedule.length + 1;
    // Every event the service sends, from the domain's own list.
    const events = WEBHOOK_EVENTS.map((type) => ({ type, words: WEBHOOK_EVENT_WORDS[type] }));
    return {
      title: 'Webhooks',
      endpoints,
      deliveries,
      events,
      maxAttempts,
      url: '',
      error: null,
      notice: null,
      testResult: null,
      ...extra,
    };
  }

  app.get('/settings/webhooks', { config: { access: 'admin' } }, async (request, reply) => {
    const rotated = request.session.rotatedWebhookSecret;
    if (rotated) {
      // Shown once: gone from the session before the page is sent.
      delete request.session.rotatedWebhookSecret;
      return renderPage(reply, 'webhook-created', { title: 'Signing secret rotated', webhook: rotated, rotated: true });
    }
    const deleted = text(request.query as FormBody, 'deleted') === '1';
    const notice = deleted ? 'The webhook was deleted. No more deliveries are sent to it.' : null;
    return renderPage(reply, 'webhooks', await listPage(companyUser(request).companyId, { notice }));
  });

  app.post('/settings/webhooks', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const user = companyUser(request);
    const url = text(request.body as FormBody, 'url', 2100);
    try {
      const created = await webhooks.createEndpoint(user.companyId, url, {
        actor: personActor(user),
        origin: auditOrigin(request),
        userId: user.id,
      });
      request.log.info({ webhookId: created.id }, 'webhook created');
      return renderPage(reply, 'webhook-created', { title: 'Webhook created', webhook: created }, 201);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err;
      return renderPage(reply, 'webhooks', await listPage(user.companyId, { url, error: webhookUrlMessage(err.message) }), 422);
    }
  });

  /** The company's endpoint with this id, or a 404 (another company's endpoint is not found either). */
  async function endpointOf(request: FastifyRequest) {
    const { id } = request.params as { id: string };
    const endpoint = (await webhooks.listEndpoints(companyUser(request).companyId)).find((e) => e.id === id);
    if (!endpoint) throw new AppError('NOT_FOUND', webhookMessages.notFound);
    return endpoint;
  }

  app.post('/settings/webhooks/:id/test', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const user = companyUser(request);
    const endpoint = await endpointOf(request);
    const answer = await webhooks.sendTestEvent(user.companyId, endpoint.id);
    request.log.info({ webhookId: endpoint.id, ok: answer.ok, statusCode: answer.statusCode }, 'webhook test event sent');
    const testResult = { url: endpoint.url, ok: answer.ok, statusCode: answer.statusCode, error: answer.error ?? null };
    return renderPage(reply, 'webhooks', await listPage(user.companyId, { testResult }));
  });

  // A new signing secret; the old one signs deliveries too for 24 hours. The new one travels to
  // the page after the redirect in the session.
  app.post(
    '/settings/webhooks/:id/rotate-secret',
    { config: { access: 'admin' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = companyUser(request);
      const endpoint = await endpointOf(request);
      const r = await webhooks.rotateSecret(user.companyId, endpoint.id, { actor: personActor(user), origin: auditOrigin(request) });
      request.log.info({ webhookId: endpoint.id }, 'webhook secret rotated');
      request.session.rotatedWebhookSecret = { id: r.id, url: r.url, secret: r.secret, previousValidUntil: r.previous_valid_until };
      return reply.redirect('/settings/webhooks', 303);
    },
  );

  app.get('/settings/webhooks/:id/delete', { config: { access: 'admin' } }, async (request, reply) =>
    renderPage(reply, 'webhook-delete', { title: 'Delete webhook', webhook: await endpointOf(request) }),
  );

  app.post('/settings/webhooks/:id/delete', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    await webhooks.deleteEndpoint(user.companyId, id, { actor: personActor(user), origin: auditOrigin(request) });
    request.log.info({ webhookId: id }, 'webhook deleted');
    return reply.redirect('/settings/webhooks?deleted=1', 303);
  });
}
