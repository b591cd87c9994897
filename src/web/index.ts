import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifySession from '@fastify/session';
import fastifyStatic from '@fastify/static';
import fastifyView from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { PLAIN_SESSION_COOKIE, SESSION_COOKIE, SESSION_MAX_AGE_MS, sessionCookieHeader } from './context';
import { HSTS, sessionEnded, signOutOf } from './session-rules';
import { securityRoutes } from './routes/security';
import { ssoRoutes } from './routes/sso';
import { webErrorHandler } from './errors';
import { createFormatters, escapeHtml, fieldId } from './format';
import { auditRoutes } from './routes/audit';
import { authRoutes } from './routes/auth';
import { claimRoutes } from './routes/claims';
import { importRoutes } from './routes/imports';
import { lookupRoutes } from './routes/lookups';
import { operatorRoutes } from './routes/operator';
import { overviewRoutes } from './routes/overview';
import { registryExtrasRoutes } from './routes/registry-extras';
import { peopleRoutes } from './routes/people';
import { tokenRoutes } from './routes/tokens';
import { webhookRoutes } from './routes/webhooks';
import { createSessionStore } from './session-store';
import { registerOneTime } from './one-time';
import { renderPage } from './render';
import { checkAccess, countCompanyBudget } from './access';
import { decide } from '../domain/access/access';
import { routesNeed } from '../http-access';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The dashboard's assets: beside this file in the sources, beside the bundle in dist/ (scripts/build.ts). */
export const PUBLIC_DIR = path.join(HERE, 'public');

/** Changes whenever a file under public/ changes, so browsers may cache assets for a long time. */
function assetVersion(dir: string): string {
  const hash = createHash('sha256');
  for (const file of fs.readdirSync(dir).sort()) hash.update(file).update(fs.readFileSync(path.join(dir, file)));
  return hash.digest('hex').slice(0, 10);
}

/** Security headers for every dashboard response. No inline script or style is used anywhere. */
export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
} as const;

/**
 * The web dashboard: server-rendered pages for company people and the operator, on the same
 * server as the API. Encapsulated: its cookie, session, CSRF, form-body and view plugins do not
 * reach /api/v1.
 */
export async function dashboardPlugin(app: FastifyInstance) {
  const deps = app.deps;
  const secret = deps.sessionSecret();
  const publicDir = PUBLIC_DIR;
  const version = assetVersion(publicDir);

  // Assets in a scope of their own: no session look-up for a stylesheet.
  await app.register(async (assets) => {
    routesNeed(assets, 'public');
    assets.addHook('onSend', async (_request, reply) => {
      reply.headers({ 'x-content-type-options': 'nosniff' });
    });
    await assets.register(fastifyStatic, {
      root: publicDir,
      prefix: '/assets/',
      maxAge: '7d',
      immutable: true,
      index: false,
      wildcard: false,
    });
    // Browsers ask for /favicon.ico on pages that name no icon (the JSON answers, /docs).
    assets.get('/favicon.ico', async (_request, reply) => reply.redirect(`/assets/favicon.svg?v=${version}`, 301));
  });

  const idleMs = deps.config.sessionIdleMinutes * 60_000;
  await app.register(async (pages) => {
    // Before the cookie plugin parses it: over TLS only the __Host- cookie counts (context.ts).
    pages.addHook('onRequest', async (request) => {
      const header = request.headers.cookie;
      if (header) request.headers.cookie = sessionCookieHeader(header, request.protocol === 'https');
    });
    await pages.register(fastifyCookie);
    await pages.register(fastifySession, {
      secret,
      cookieName: SESSION_COOKIE,
      store: createSessionStore(deps.sessions, idleMs),
      saveUninitialized: false,
      rolling: false,
      // 'auto': Secure when the request came over HTTPS (X-Forwarded-Proto counts when TRUST_PROXY is on).
      cookie: { path: '/', httpOnly: true, sameSite: 'lax', secure: 'auto', maxAge: SESSION_MAX_AGE_MS },
    });
    await pages.register(fastifyCsrf, {
      sessionPlugin: '@fastify/session',
      getToken: (request: FastifyRequest) => {
        const fromBody = (request.body as { _csrf?: unknown } | undefined)?._csrf;
        if (typeof fromBody === 'string') return fromBody;
        const header = request.headers['x-csrf-token'];
        return typeof header === 'string' ? header : undefined;
      },
    });
    await pages.register(fastifyFormbody, { bodyLimit: 64 * 1024 });
    registerOneTime(pages, secret);
    await pages.register(fastifyView, {
      engine: { eta: new Eta({ autoEscape: true, cache: true }) },
      templates: path.join(HERE, 'views'),
      production: true,
      defaultContext: {
        fmt: createFormatters(deps.config.timezone),
        fieldId,
        escapeHtml,
        assetVersion: version,
        // Bull Board is mounted only when imports run on BullMQ (REDIS_URL).
        queuesAvailable: deps.importQueue.kind === 'bullmq',
      },
    });

    pages.decorateRequest('webUser', null);
    pages.decorateRequest('alertCount', 0);
    pages.addHook('onSend', async (request, reply) => {
      // A page may only be stricter (the reset link's page sends no Referer at all).
      const referrer = reply.getHeader('referrer-policy');
      reply.headers(SECURITY_HEADERS);
      if (referrer === 'no-referrer') reply.header('referrer-policy', referrer);
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
      if (request.protocol === 'https') {
        reply.header('strict-transport-security', HSTS);
      } else {
        // Over plain HTTP browsers refuse a __Host- cookie (it must be Secure): the plain name.
        const set = reply.getHeader('set-cookie');
        if (set !== undefined) {
          const rename = (c: string) => (c.startsWith(`${SESSION_COOKIE}=`) ? PLAIN_SESSION_COOKIE + c.slice(SESSION_COOKIE.length) : c);
          // reply.header() adds to Set-Cookie: remove the original first.
          reply.removeHeader('set-cookie');
          reply.header('set-cookie', Array.isArray(set) ? set.map((c) => rename(String(c))) : rename(String(set)));
        }
      }
    });
    // Who is signed in: looked up again on every request, so a removed person is out at once. A
    // session idle for SESSION_IDLE_MINUTES, or 8 hours old, is signed out; a person who must
    // have a second factor and has none is sent to set one up before anything else.
    pages.addHook('preHandler', async (request, reply) => {
      request.webUser = null;
      const session = request.session;
      const userId = session?.userId;
      if (!userId) return;
      const now = deps.now();
      const ended = sessionEnded(session, now, idleMs);
      if (ended) {
        signOutOf(session);
        session.ended = ended;
        request.log.info({ userId, ended }, 'session ended');
        return;
      }
      const user = await deps.dashboard.currentUser(userId);
      // In good standing (access.ts): a suspended company's person is signed out; one who must
      // have a second factor and has none is sent to set one up before anything else.
      const standing = user && decide(user.actor, 'signed-in');
      if (standing?.reason === 'company_suspended') {
        signOutOf(session);
        request.log.info({ userId }, 'signed out: company suspended');
        return;
      }
      if (standing?.reason === 'second_factor') {
        signOutOf(session);
        session.pending = { userId, step: 'enrol', at: now, next: '/', method: 'password' };
        return;
      }
      request.webUser = user ?? null;
      // Each signed-in person's requests against their budget (SESSION_RATE_LIMIT_PER_MINUTE).
      if (user) await app.rateLimits.countSession(request, reply, user.id);
      // Activity is written at most every 15 seconds (each write is a database round trip).
      if (user && now - (session.lastSeen ?? 0) >= 15_000) session.lastSeen = now;
      // The navigation's count of alerts received in the last 7 days.
      const companyId = request.webUser?.companyId;
      if (companyId) request.alertCount = await deps.alerts.recentCount({ companyId });
    });
    // Who may open what: each route's need, decided by access.ts, before the route's own work.
    pages.addHook('preHandler', checkAccess);
    // A search's count against its company's budget comes after the route's own preHandlers.
    pages.addHook('onRoute', (route) => {
      if (!route.config?.companyBudget) return;
      const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
      route.preHandler = [...own, countCompanyBudget];
    });
    pages.setErrorHandler(webErrorHandler);

    await pages.register(authRoutes);
    await pages.register(securityRoutes);
    await pages.register(ssoRoutes);
    await pages.register(overviewRoutes);
    await pages.register(claimRoutes);
    await pages.register(tokenRoutes);
    await pages.register(peopleRoutes);
    await pages.register(webhookRoutes);
    await pages.register(importRoutes);
    await pages.register(lookupRoutes);
    await pages.register(operatorRoutes);
    await pages.register(registryExtrasRoutes);
    await pages.register(auditRoutes);

    // Unknown page addresses get an HTML page; anything under /api keeps the API's JSON 404.
    pages.get('/*', { config: { access: 'public' } }, async (request, reply) => {
      if (request.url.startsWith('/api/') || request.url === '/api') return reply.callNotFound();
      return renderPage(reply, 'error', { title: 'Page not found', message: 'There is no page at this address.' }, 404);
    });
  });
}
