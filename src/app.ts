import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import swagger from '@fastify/swagger';
import swaggerUi, { type FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyInstance } from 'fastify';
import type { FastifyBaseLogger } from 'fastify';

import type { Deps } from './deps';
import { answerTime } from './domain/dates';
import { compileInput } from './domain/validation';
import { authPlugin } from './api/plugins/auth';
import { rateLimitsPlugin } from './api/plugins/rate-limits';
import { errorHandlerPlugin } from './api/plugins/error-handler';
import { claimSchema, clientSchema } from './api/schemas/claims';
import { addSharedSchemas, documentRoute, errorBody, errorSchema } from './api/schemas/common';
import { accessRegistry, routesNeed } from './http-access';
import { isScopeNeed } from './domain/access/access';
import { metricsPlugin } from './api/plugins/metrics';
import { uploadGuardPlugin, type PaceClock } from './upload-guard';
import { claimRoutes } from './api/routes/claims';
import { importRoutes } from './api/routes/imports';
import { registryRoutes } from './api/routes/registry';
import { alertRoutes } from './api/routes/alerts';
import { alertSchema } from './api/schemas/alerts';
import { incidentSchema, networkSchema } from './api/schemas/registry';
import { lookupBatchRoutes } from './api/routes/lookup-batches';
import { lookupBatchSchema } from './api/schemas/lookup-batches';
import { qualityRoutes } from './api/routes/quality';
import { auditRoutes } from './api/routes/audit';
import { auditEventSchema } from './api/schemas/audit';
import { qualityReportSchema } from './api/schemas/quality';
import { dashboardPlugin, PUBLIC_DIR, SECURITY_HEADERS } from './web/index';
import { HSTS } from './web/session-rules';

/**
 * The dashboard's security headers on the pages served by libraries beside it: the API docs
 * (/docs, Swagger UI) and Bull Board. Both draw with inline style attributes, so their policy
 * allows inline style; scripts only from this server, never framed, HSTS over TLS.
 */
const LIBRARY_PAGE_HEADERS = {
  ...SECURITY_HEADERS,
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'; object-src 'none'",
} as const;
const LIBRARY_PAGES = /^\/(docs|admin\/queues)(\/|\?|$)/u;

/** The registry's icon (the dashboard's favicon), shown by /docs too. */
const FAVICON = fs.readFileSync(path.join(PUBLIC_DIR, 'favicon.svg'));
/** The registry's mark and name, white on the API reference's top bar (where Swagger UI shows its own). */
const DOCS_LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 300 40" width="300" height="40">' +
  '<rect x="4" y="4" width="32" height="32" rx="6" fill="#fff"/><path d="M13 12h14v16H13z" fill="#123a63"/>' +
  '<path d="M16 17h8M16 21h8M16 25h5" stroke="#fff" stroke-width="2"/>' +
  '<text x="46" y="27" fill="#fff" font-family="system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif" font-size="19" font-weight="700">Claims Registry API</text></svg>';
/** Where the OpenAPI document is served (the API's own address of it). */
const OPENAPI_URL = '/api/v1/openapi.json';

/**
 * /docs (Swagger UI) as the registry's page: its title, icon and mark instead of the library's,
 * and the document loaded from its own address (@fastify/swagger-ui sets `url` to its /docs/json
 * whatever `uiConfig.url` says; `urls`, its documented way to name a definition, wins over it).
 */
const API_REFERENCE_UI = {
  routePrefix: '/docs',
  uiConfig: { urls: [{ url: OPENAPI_URL, name: `Claims Registry API (${OPENAPI_URL})` }], deepLinking: true },
  logo: { type: 'image/svg+xml', content: DOCS_LOGO, href: '/docs', target: '_self' },
  theme: {
    title: 'API reference · Claims Registry',
    favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
    css: [{ filename: 'registry.css', content: '.swagger-ui .topbar { background-color: #123a63; }\n' }],
  },
} satisfies FastifySwaggerUiOptions;
/** Every /api/v1 answer (errors, 401, 404 and 429 included): DECISIONS, "Answers are not kept". */
const API_PATH = /^\/api\/v1(\/|\?|$)/u;
const API_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

/**
 * What the routes (API, dashboard, Bull Board) are given: the services, never the repositories or
 * the database handle (ARCHITECTURE, "Where access is decided").
 */
export type AppDeps = Omit<Deps, 'repos' | 'db'>;

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

export type AppOptions = {
  logger: FastifyBaseLogger;
  extraRoutes?: (app: FastifyInstance) => Promise<void>;
  /** V8's young-generation collection, run while uploads arrive (src/upload-guard.ts); without it, none is asked for. */
  youngCollection?: () => void;
  /** The time the uploads' pace is kept by (src/upload-guard.ts); default: the real one. */
  uploadPaceClock?: PaceClock;
};

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LevelCheck = { isLevelEnabled?: (level: string) => boolean };

/**
 * A request's logger. Fastify makes a child logger (bound to the request id) for every request,
 * and pino's child() serializes and redacts the bindings at once; most requests log nothing at
 * the configured level, so the child is made on the first line actually written. Its output is
 * the same as the child's.
 */
class RequestLogger {
  #child: FastifyBaseLogger | undefined;
  constructor(
    private readonly parent: FastifyBaseLogger & LevelCheck,
    private readonly bindings: Record<string, unknown>,
  ) {}
  private made(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings));
  }
  private write(level: Level, args: unknown[]): void {
    if (this.#child || this.parent.isLevelEnabled!(level)) {
      const child = this.made();
      Reflect.apply(child[level], child, args);
    }
  }
  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }
  set level(value: string) {
    this.made().level = value;
  }
  fatal(...args: unknown[]) {
    this.write('fatal', args);
  }
  error(...args: unknown[]) {
    this.write('error', args);
  }
  warn(...args: unknown[]) {
    this.write('warn', args);
  }
  info(...args: unknown[]) {
    this.write('info', args);
  }
  debug(...args: unknown[]) {
    this.write('debug', args);
  }
  trace(...args: unknown[]) {
    this.write('trace', args);
  }
  silent() {}
  child(bindings: Record<string, unknown>, options?: object) {
    return this.made().child(bindings, options);
  }
}

function childLoggerFactory(
  this: FastifyInstance,
  logger: FastifyBaseLogger & LevelCheck,
  bindings: Record<string, unknown>,
  options: object,
): FastifyBaseLogger {
  // Route options (a log level of its own) or a logger that cannot tell its levels: the plain child.
  if (Object.keys(options).length > 0 || typeof logger.isLevelEnabled !== 'function') return logger.child(bindings, options);
  return new RequestLogger(logger, bindings);
}

/**
 * A body is validated by the domain's compiled validator of the very same schema object (one
 * compilation for the route, the CSV rows and the forms; strict: "12" is not a boolean); query
 * strings, params and headers are coerced.
 */
export function validatorCompiler() {
  // ajv-formats is CommonJS: under ESM its plugin is the default export's `default`, typed as any.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return
  const withFormats = (ajv: Ajv): Ajv => addFormats.default(ajv);
  const coercing = withFormats(new Ajv({ allErrors: true, coerceTypes: 'array', useDefaults: true, strict: false }));
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    httpPart === 'body' ? compileInput(schema) : coercing.compile(schema);
}

/** The 403 of a token route: its own (if it has one), the missing scope, a suspended company. */
function scopeRefusal(scope: string | undefined, own: unknown) {
  const ownText = (own as { description?: string } | undefined)?.description;
  const text =
    `${ownText ? `${ownText}; or ` : ''}the token lacks the scope ${scope ?? '(none declared)'} (insufficient_scope, with ` +
    `WWW-Authenticate: Bearer error="insufficient_scope", scope="${scope ?? ''}"); or the company is suspended (company_suspended)`;
  const header = { type: 'string', description: 'On insufficient_scope: `Bearer error="insufficient_scope", scope="<scope>"`.' };
  return { description: text, ...errorBody, headers: { 'www-authenticate': header } };
}

/**
 * TRUST_PROXY as Fastify takes it. A hop count trusts that many proxies in front of the server,
 * as Express counts them (Fastify 5 itself trusts nothing for a number); addresses go as they are.
 */
export function trustProxyOption(trust: Deps['config']['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return trust === 0 ? false : (_address: string, hop: number) => hop < trust;
  return trust;
}

export async function buildApp(
  deps: Deps,
  { logger, extraRoutes, youngCollection, uploadPaceClock }: AppOptions,
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    childLoggerFactory,
    genReqId: () => randomUUID(),
    trustProxy: trustProxyOption(deps.config.trustProxy),
    connectionTimeout: 30_000,
    // Receiving a request may take as long as storing a large upload is allowed to.
    requestTimeout: Math.max(120, deps.config.importUploadTimeoutSeconds + 30) * 1000,
    keepAliveTimeout: 65_000,
    bodyLimit: 1_048_576,
    // Long enough that any malformed claim id reaches the route and gets its JSON 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
  });
  const { repos: _repos, db: _db, ...services } = deps;
  app.decorate('deps', services);
  // Every route states its need (src/domain/access/access.ts); the app is not ready while one states none.
  accessRegistry(app);
  app.setValidatorCompiler(validatorCompiler());
  // A plain callback hook: no promise per request for one header.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // HSTS on every answer that came over TLS (directly, or as a trusted proxy says).
    if (request.protocol === 'https') reply.header('strict-transport-security', HSTS);
    if (LIBRARY_PAGES.test(request.url)) reply.headers(LIBRARY_PAGE_HEADERS);
    // Claims carry names and dates of birth: no API answer is kept by a cache or read as another type.
    if (API_PATH.test(request.url)) reply.headers(API_HEADERS);
    done();
  });
  await app.register(errorHandlerPlugin);
  await app.register(uploadGuardPlugin, { youngCollection, paceClock: uploadPaceClock });
  // Named schemas: `{ $ref: 'Claim#' }` in routes, components/schemas/Claim in the OpenAPI document.
  addSharedSchemas(app, [
    errorSchema,
    clientSchema,
    claimSchema,
    alertSchema,
    lookupBatchSchema,
    qualityReportSchema,
    incidentSchema,
    networkSchema,
    auditEventSchema,
  ]);
  await app.register(metricsPlugin);
  await app.register(rateLimitsPlugin);
  await app.register(authPlugin);

  await app.register(swagger, {
    // Only tagged routes (the /api/v1 resources) are part of the API reference; dashboard pages are not.
    hideUntagged: true,
    // Each API answer's headers (request id, WWW-Authenticate, Retry-After, ...) declared in one
    // place, and each body with every rule the server enforces.
    transform: ({ schema, url }) => ({ schema: url.startsWith('/api/v1/') ? documentRoute(schema) : schema, url }),
    // Component schemas keep the names they were added under (Claim, Client, Error, ...).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Claims Registry API',
        version: '1.0.0',
        description:
          'A shared registry of insurance claims. Every call carries `Authorization: Bearer <API_TOKEN>`; create tokens in the dashboard under Settings › API Tokens.',
        // package.json says UNLICENSED: no licence is granted to use or copy the code. SPDX has no
        // identifier for that, so the document names it by a user-defined reference.
        license: { name: 'Proprietary: all rights reserved', identifier: 'LicenseRef-Proprietary' },
      },
      servers: [{ url: '/', description: 'This server (the API is under /api/v1)' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'csk_…' } } },
    },
  });
  await app.register(async (docs) => {
    routesNeed(docs, 'public');
    await docs.register(swaggerUi, API_REFERENCE_UI);
  });

  // Each token route's OpenAPI `security` names the scope the route states, with the 403 it may answer.
  await app.register(
    async (api) => {
      api.addHook('onRoute', (route) => {
        const need = route.config?.access;
        const scope = need !== undefined && isScopeNeed(need) ? need.scope : undefined;
        const schema = route.schema as { security?: unknown; response?: Record<string, unknown> } | undefined;
        if (!schema?.security) return;
        schema.security = [{ bearerAuth: scope ? [scope] : [] }];
        schema.response = { ...schema.response, 403: scopeRefusal(scope, schema.response?.[403]) };
      });
      // Every route that is not public takes a token, and its need is decided (plugins/auth.ts).
      api.addHook('onRequest', async (request, reply) => {
        if (request.routeOptions.config.access !== 'public') await app.requireToken(request, reply);
      });
      // The API takes JSON (and multipart for uploads): Fastify's default text/plain parser would
      // hand a string to the body schema and answer 422 where the body's type is the problem (415).
      api.removeContentTypeParser('text/plain');
      api.get('/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger());
      await api.register(claimRoutes);
      await api.register(importRoutes);
      await api.register(registryRoutes);
      await api.register(alertRoutes);
      await api.register(lookupBatchRoutes);
      await api.register(qualityRoutes);
      await api.register(auditRoutes);
    },
    { prefix: '/api/v1' },
  );

  if (deps.importQueue.kind === 'bullmq') {
    const { bullBoardPlugin } = await import('./web/bull-board');
    await app.register(bullBoardPlugin, { queue: deps.importQueue.bull });
  }
  app.get('/healthz', { schema: { hide: true }, config: { access: 'public' } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true }, config: { access: 'public' } }, async (_request, reply) => {
    try {
      await deps.ping();
    } catch {
      return reply.status(503).send({ status: 'unavailable', message: 'The database is not reachable.' });
    }
    // A full disk is reported but keeps the process ready: searches and every other read still
    // work, and every process shares the disk, so taking them out of service would stop those too.
    const full = deps.diskFull.recent();
    if (full) {
      return {
        status: 'disk_full',
        message:
          full.where === 'database'
            ? "The database's disk is full: writes are refused (503 storage_full) until space is freed; reads work."
            : 'The disk of the uploaded files is full: uploads are refused (507) until space is freed.',
        disk_full: { where: full.where, last_seen_at: answerTime(full.at) },
      };
    }
    return { status: 'ready' };
  });

  await app.register(dashboardPlugin);
  if (extraRoutes) await extraRoutes(app);
  return app;
}
