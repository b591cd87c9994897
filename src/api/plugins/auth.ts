import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { AppError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { grants } from '../../domain/tokens/scopes';
import { scopeOfRoute } from '../route-scopes';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyInstance {
    /**
     * onRequest hook: 401 unless the request carries a live bearer token (`token_expired` for an
     * expired one), 403 `company_suspended` for a suspended company's, and 403
     * `insufficient_scope` unless the token has the scope its route needs (route-scopes.ts); 429
     * past the abuse limits (rate-limits.ts).
     */
    requireToken: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/iu.exec(header);
  return m?.[1];
}

export const authPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('principal', null as unknown as Principal);
    // The old-format tokens known before the first request (token-service.ts, loadOldFormat).
    app.addHook('onReady', () => app.deps.tokens.loadOldFormat());
    app.decorate('requireToken', async (request: FastifyRequest, reply: FastifyReply) => {
      const token = bearer(request);
      // Abuse limits (rate-limits.ts): an address past its failures is refused before any read.
      if (!app.deps.tokens.seenValidBefore(token)) await app.rateLimits.refuseFailingAddress(request, reply);
      const checked = await app.deps.tokens.check(token);
      if (!checked.ok) {
        if (checked.reason === 'token_expired') {
          reply.header('www-authenticate', 'Bearer error="invalid_token"');
          throw new AppError('UNAUTHORIZED', 'The token has expired.', undefined, 'token_expired');
        }
        if (checked.reason === 'company_suspended') {
          throw new AppError('FORBIDDEN', "Your company's access to the registry is suspended.", undefined, 'company_suspended');
        }
        await app.rateLimits.countFailure(request);
        throw new AppError('UNAUTHORIZED', 'Unauthenticated.');
      }
      const needed = scopeOfRoute(request.method, request.routeOptions.url ?? '');
      if (needed === undefined) {
        // A token route missing from route-scopes.ts: refused to every token until it is added.
        request.log.error({ route: request.routeOptions.url }, 'route has no scope in src/api/route-scopes.ts; refused');
        throw new AppError('FORBIDDEN', 'This route is not open to API tokens.', undefined, 'insufficient_scope');
      }
      if (!grants(checked.principal.scopes, needed)) {
        reply.header('www-authenticate', `Bearer error="insufficient_scope", scope="${needed}"`);
        throw new AppError('FORBIDDEN', `This token lacks the scope ${needed}.`, undefined, 'insufficient_scope');
      }
      request.principal = checked.principal;
      await app.rateLimits.countRequest(request, reply, { increment: request.routeOptions.config.countsPerPlate !== true });
    });
  },
  { name: 'auth', dependencies: ['error-handler', 'rate-limits'] },
);
