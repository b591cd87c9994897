import { createHash, randomUUID } from 'node:crypto';

import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyInstance } from 'fastify';
import type { FastifyBaseLogger } from 'fastify';

import type { Deps } from '../deps';
import { authPlugin } from './plugins/auth';
import { bullBoardPlugin } from './plugins/bull-board';
import { errorHandlerPlugin } from './plugins/error-handler';
import { claimSchema, clientSchema } from './schemas/claims';
import { addSharedSchemas, errorSchema } from './schemas/common';
import { claimRoutes } from './routes/claims';
import { importRoutes } from './routes/imports';
import { dashboardPlugin } from '../web/index';

declare module 'fastify' {
  interface FastifyInstance {
    deps: Deps;
  }
}

export type AppOptions = { logger: FastifyBaseLogger; extraRoutes?: (app: FastifyInstance) => Promise<void> };

/** Body validation is strict (no type coercion: "12" is not a boolean); query strings are coerced. */
function validatorCompiler() {
  const withFormats = (ajv: Ajv): Ajv => addFormats.default(ajv);
  const strict = withFormats(new Ajv({ allErrors: true, coerceTypes: false, useDefaults: false, strict: false }));
  const coercing = withFormats(new Ajv({ allErrors: true, coerceTypes: 'array', useDefaults: true, strict: false }));
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => (httpPart === 'body' ? strict : coercing).compile(schema);
}

export async function buildApp(deps: Deps, { logger, extraRoutes }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    genReqId: () => randomUUID(),
    trustProxy: deps.config.trustProxy,
    connectionTimeout: 30_000,
    // Receiving a request may take as long as storing a large upload is allowed to.
    requestTimeout: Math.max(120, deps.config.importUploadTimeoutSeconds + 30) * 1000,
    keepAliveTimeout: 65_000,
    bodyLimit: 1_048_576,
    // Long enough that any malformed claim id reaches the route and gets its JSON 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
  });
  app.decorate('deps', deps);
  app.setValidatorCompiler(validatorCompiler());
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  await app.register(errorHandlerPlugin);
  // Named schemas: `{ $ref: 'Claim#' }` in routes, components/schemas/Claim in the OpenAPI document.
  addSharedSchemas(app, [errorSchema, clientSchema, claimSchema]);
  await app.register(authPlugin);

  await app.register(swagger, {
    // Only tagged routes (the /api/v1 resources) are part of the API reference; dashboard pages are not.
    hideUntagged: true,
    // Component schemas keep the names they were added under (Claim, Client, Error, ...).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Claims Registry API',
        version: '1.0.0',
        description:
          'A shared registry of insurance claims. Every call carries `Authorization: Bearer <API_TOKEN>`; create tokens in the dashboard under Settings › API Tokens.',
      },
      servers: [{ url: '/', description: 'This server (the API is under /api/v1)' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'csk_…' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { url: '/api/v1/openapi.json' } });

  await app.register(
    async (api) => {
      if (deps.config.rateLimitPerMinute > 0) {
        // Per token (hashed, so the key in memory is not a credential), else per client address.
        await api.register(rateLimit, {
          max: deps.config.rateLimitPerMinute,
          timeWindow: 60_000,
          keyGenerator: (request) => {
            const auth = request.headers.authorization;
            return auth ? createHash('sha256').update(auth).digest('hex') : request.ip;
          },
        });
      }
      api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
      await api.register(claimRoutes);
      await api.register(importRoutes);
    },
    { prefix: '/api/v1' },
  );

  if (deps.importQueue.kind === 'bullmq') await app.register(bullBoardPlugin, { queue: deps.importQueue.bull });
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await deps.store.ping();
      return { status: 'ready' };
    } catch {
      return reply.status(503).send({ status: 'unavailable', message: 'The database is not reachable.' });
    }
  });

  await app.register(dashboardPlugin);
  if (extraRoutes) await extraRoutes(app);
  return app;
}
