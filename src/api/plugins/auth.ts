import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { decide, type Refusal } from '../../domain/access/access';
import { AppError } from '../../domain/errors';
import { createTurns } from '../../domain/turns';
import type { Principal } from '../../domain/principal';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyInstance {
    /**
     * onRequest hook of every /api/v1 route that is not public: 401 unless the request carries a
     * live bearer token (`token_expired` for an expired one), with the address's failure budget in
     * its RateLimit headers; then the token's and its company's budgets are counted (429 past
     * either, rate-limits.ts), and only then is the route's need decided (access.ts): 403
     * `insufficient_scope` or `company_suspended`. A refused call is so counted like any other.
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

/** The API's answer to a refusal of access.ts. */
function refused(refusal: Refusal, reply: FastifyReply): AppError {
  switch (refusal.reason) {
    case 'insufficient_scope':
      reply.header('www-authenticate', `Bearer error="insufficient_scope", scope="${refusal.scope}"`);
      return new AppError('FORBIDDEN', `This token lacks the scope ${refusal.scope}.`, undefined, 'insufficient_scope');
    case 'company_suspended':
      return new AppError('FORBIDDEN', "Your company's access to the registry is suspended.", undefined, 'company_suspended');
    default:
      return new AppError('FORBIDDEN', 'This route is not open to API tokens.', undefined, 'insufficient_scope');
  }
}

export const authPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('principal', null as unknown as Principal);
    // The old-format tokens known before the first request (token-service.ts, loadOldFormat).
    app.addHook('onReady', () => app.deps.tokens.loadOldFormat());
    // An address's checks of tokens this process has not seen valid, one at a time: parallel
    // guesses cannot each find the failure budget unspent and together pass it.
    const addressTurns = createTurns();
    /** The token checked, and a failure counted against the address's budget (an expired token's is not). */
    const checkCounted = async (request: FastifyRequest, reply: FastifyReply, token: string | undefined) => {
      const checked = await app.deps.tokens.check(token);
      if (!checked.ok && checked.reason !== 'token_expired') await app.rateLimits.countFailure(request, reply);
      return checked;
    };
    app.decorate('requireToken', async (request: FastifyRequest, reply: FastifyReply) => {
      const token = bearer(request);
      // Abuse limits (rate-limits.ts): an address past its failures is refused before any read.
      const checked = app.deps.tokens.seenValidBefore(token)
        ? await checkCounted(request, reply, token)
        : await addressTurns(request.ip, async () => {
            await app.rateLimits.refuseFailingAddress(request, reply);
            return checkCounted(request, reply, token);
          });
      if (!checked.ok) {
        if (checked.reason === 'token_expired') {
          await app.rateLimits.failureHeaders(request, reply);
          reply.header('www-authenticate', 'Bearer error="invalid_token"');
          throw new AppError('UNAUTHORIZED', 'The token has expired.', undefined, 'token_expired');
        }
        throw new AppError('UNAUTHORIZED', 'Unauthenticated.');
      }
      request.principal = checked.principal;
      await app.rateLimits.countRequest(request, reply, { increment: request.routeOptions.config.countsPerPlate !== true });
      const need = request.routeOptions.config.access;
      const refusal = need === undefined ? ({ reason: 'company_only' } as const) : decide(checked.actor, need);
      if (refusal) throw refused(refusal, reply);
    });
  },
  { name: 'auth', dependencies: ['error-handler', 'rate-limits'] },
);
