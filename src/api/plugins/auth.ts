import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { AppError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyInstance {
    /** onRequest hook: 401 unless the request carries a live bearer token; 429 past the abuse limits (rate-limits.ts). */
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
    app.decorate('requireToken', async (request: FastifyRequest, reply: FastifyReply) => {
      const token = bearer(request);
      // Abuse limits (rate-limits.ts): an address past its failures is refused before any read.
      if (!app.deps.tokens.seenValidBefore(token)) await app.rateLimits.refuseFailingAddress(request, reply);
      const principal = await app.deps.tokens.authenticate(token);
      if (!principal) {
        await app.rateLimits.countFailure(request);
        throw new AppError('UNAUTHORIZED', 'Unauthenticated.');
      }
      request.principal = principal;
      await app.rateLimits.countRequest(request, reply, { increment: request.routeOptions.config.countsPerPlate !== true });
    });
  },
  { name: 'auth', dependencies: ['error-handler', 'rate-limits'] },
);
