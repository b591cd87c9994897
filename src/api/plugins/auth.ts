import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { AppError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyInstance {
    /** onRequest hook: 401 unless the request carries a live bearer token. */
    requireToken: (request: FastifyRequest) => Promise<void>;
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
    app.decorate('requireToken', async (request: FastifyRequest) => {
      const principal = await app.deps.tokens.authenticate(bearer(request));
      if (!principal) throw new AppError('UNAUTHORIZED', 'Unauthenticated.');
      request.principal = principal;
    });
  },
  { name: 'auth', dependencies: ['error-handler'] },
);
