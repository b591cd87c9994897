import type { FastifyInstance, FastifyRequest } from 'fastify';

import { auditOrigin } from '../../audit-origin';
import { personActor } from '../../domain/audit/audit';
import { AppError } from '../../domain/errors';
import { WEBHOOK_EVENTS, webhookMessages } from '../../domain/webhooks/webhook-service';
import { companyUser } from '../context';
import { durationWords, listWords } from '../format';
import { text, type FormBody } from '../forms';
import { WEBHOOK_EVENT_WORDS, webhookUrlMessage } from '../messages';
import { keepOnce, takeOnce } from '../one-time';
import { renderPage } from '../render';

/**
 * Settings › Webhooks (admins): the company's endpoints, Create (the signing secret is shown once,
 * on the page the form redirects to: a reload creates nothing and shows it no more), Delete (after
 * a confirmation page), and the recent deliveries with their outcomes.
 */
export async function webhookRoutes(app: FastifyInstance) {
  const { webhooks } = app.deps;

  async function listPage(companyId: string, extra: Record<string, unknown> = {}) {
    const [endpoints, deliveries] = await Promise.all([webhooks.listEndpoints(companyId), webhooks.listDeliveries(companyId, 50)]);
    const { webhookRetrySchedule, webhookTimeoutSeconds } = app.deps.config;
    const maxAttempts = webhookRetrySchedule.length + 1;
    // When a delivery is tried again, in words, from the settings (WEBHOOK_TIMEOUT_SECONDS, WEBHOOK_RETRY_SCHEDULE).
    const retries = {
      timeout: durationWords(webhookTimeoutSeconds),
      after: listWords(webhookRetrySchedule.map(durationWords)),
    };
    // Every event the service sends, from the domain's own list.
    const events = WEBHOOK_EVENTS.map((type) => ({ type, words: WEBHOOK_EVENT_WORDS[type] }));
    return {
      title: 'Webhooks',
      endpoints,
      deliveries,
      events,
      maxAttempts,
      retries,
      url: '',
      error: null,
      notice: null,
      testResult: null,
      ...extra,
    };
  }

  app.get('/settings/webhooks', { config: { access: 'admin' } }, async (request, reply) => {
    // Shown once: gone from the session before the page is sent.
    const rotated = takeOnce(request, 'webhook-rotated');
    if (rotated) return renderPage(reply, 'webhook-created', { title: 'Signing secret rotated', webhook: rotated, rotated: true });
    const q = request.query as FormBody;
    const page = await listPage(companyUser(request).companyId);
    // After Create Webhook (?created=<id>): the signing secret once, then (a reload) what happened.
    const createdId = text(q, 'created', 40);
    const created = createdId ? page.endpoints.find((e) => e.id === createdId) : undefined;
    if (created) {
      const shown = takeOnce(request, `webhook:${created.id}`);
      if (shown?.secret)
        return renderPage(reply, 'webhook-created', { title: 'Webhook created', webhook: { url: created.url, secret: shown.secret } });
      const notice = `The webhook for ${created.url} was created. Its signing secret was shown once and cannot be shown again: if it was not copied, rotate the secret to get a new one.`;
      return renderPage(reply, 'webhooks', { ...page, notice });
    }
    const deleted = text(q, 'deleted') === '1';
    const notice = deleted ? 'The webhook was deleted. No more deliveries are sent to it.' : null;
    return renderPage(reply, 'webhooks', { ...page, notice });
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
      keepOnce(request, `webhook:${created.id}`, { secret: created.secret });
      return reply.redirect(`/settings/webhooks?created=${created.id}`, 303);
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
  // the page after the redirect in the session, sealed (one-time.ts).
  app.post(
    '/settings/webhooks/:id/rotate-secret',
    { config: { access: 'admin' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = companyUser(request);
      const endpoint = await endpointOf(request);
      const r = await webhooks.rotateSecret(user.companyId, endpoint.id, { actor: personActor(user), origin: auditOrigin(request) });
      request.log.info({ webhookId: endpoint.id }, 'webhook secret rotated');
      keepOnce(request, 'webhook-rotated', { id: r.id, url: r.url, secret: r.secret, previousValidUntil: r.previous_valid_until });
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
