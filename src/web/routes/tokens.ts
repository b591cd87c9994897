import type { FastifyInstance } from 'fastify';

import { AppError } from '../../domain/errors';
import { companyUser, requireCompanyUser } from '../context';
import { text, type FormBody } from '../forms';
import { renderPage } from '../render';

/** Settings › API Tokens. A token's value exists only in the response to Create Token. */
export async function tokenRoutes(app: FastifyInstance) {
  const { tokens } = app.deps;

  async function listPage(companyId: string, extra: Record<string, unknown> = {}) {
    return { title: 'API Tokens', tokens: await tokens.list(companyId), name: '', error: null, notice: null, ...extra };
  }

  app.get('/settings', { preHandler: requireCompanyUser }, async (_request, reply) => reply.redirect('/settings/tokens', 303));

  app.get('/settings/tokens', { preHandler: requireCompanyUser }, async (request, reply) => {
    const revoked = text(request.query as FormBody, 'revoked') === '1';
    const notice = revoked ? 'The token was revoked. Requests that use it now get 401 Unauthenticated.' : null;
    return renderPage(reply, 'tokens', await listPage(companyUser(request).companyId, { notice }));
  });

  app.post('/settings/tokens', { preHandler: [requireCompanyUser, app.csrfProtection] }, async (request, reply) => {
    const user = companyUser(request);
    const name = text(request.body as FormBody, 'name', 200);
    try {
      const created = await tokens.create(user.companyId, name, user.id);
      request.log.info({ tokenId: created.id }, 'API token created');
      return renderPage(
        reply,
        'token-created',
        { title: 'Token created', token: created, origin: `${request.protocol}://${request.host}` },
        201,
      );
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err;
      return renderPage(reply, 'tokens', await listPage(user.companyId, { name, error: err.message }), 422);
    }
  });

  app.get('/settings/tokens/:id/revoke', { preHandler: requireCompanyUser }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const token = (await tokens.list(companyUser(request).companyId)).find((t) => t.id === id);
    if (!token) throw new AppError('NOT_FOUND', 'Token not found.');
    return renderPage(reply, 'token-revoke', { title: 'Revoke token', token });
  });

  app.post('/settings/tokens/:id/revoke', { preHandler: [requireCompanyUser, app.csrfProtection] }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const token = await tokens.revoke(id, companyUser(request).companyId);
    request.log.info({ tokenId: token.id }, 'API token revoked');
    return reply.redirect('/settings/tokens?revoked=1', 303);
  });
}
