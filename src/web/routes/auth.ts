import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { safeNext, SESSION_COOKIE } from '../context';
import { renderPage } from '../render';

/** Sign-in attempts per minute: per address and email, and per address whatever the email. */
export const SIGN_IN_LIMITS = { perAddressAndEmail: 10, perAddress: 30, windowMs: 60_000 } as const;

type LoginBody = { email?: unknown; password?: unknown; next?: unknown };
const emailOf = (body: unknown) => {
  const email = (body as LoginBody | undefined)?.email;
  return typeof email === 'string' ? email.trim().toLowerCase().slice(0, 254) : '';
};

export async function authRoutes(app: FastifyInstance) {
  const perAddressAndEmail = app.createRateLimit({
    max: SIGN_IN_LIMITS.perAddressAndEmail,
    timeWindow: SIGN_IN_LIMITS.windowMs,
    keyGenerator: (request) => `sign-in:${request.ip}:${emailOf(request.body)}`,
  });
  const perAddress = app.createRateLimit({
    max: SIGN_IN_LIMITS.perAddress,
    timeWindow: SIGN_IN_LIMITS.windowMs,
    keyGenerator: (request) => `sign-in:${request.ip}`,
  });

  /** Counts the attempt before the password is checked; over the limit, a friendly 429 page with Retry-After. */
  async function limitSignIn(request: FastifyRequest, reply: FastifyReply) {
    for (const limiter of [perAddressAndEmail, perAddress]) {
      const result = await limiter(request);
      if (!result.isAllowed && result.isExceeded) {
        reply.header('retry-after', String(Math.max(1, result.ttlInSeconds)));
        request.log.info('sign-in rate limit reached');
        return renderPage(
          reply,
          'login',
          {
            email: emailOf(request.body),
            next: safeNext((request.body as LoginBody | undefined)?.next),
            error: `Too many sign-in attempts. Wait ${Math.max(1, result.ttlInSeconds)} seconds, then try again.`,
          },
          429,
        );
      }
    }
  }

  app.get('/login', async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown }).next);
    if (request.webUser) return reply.redirect(next, 303);
    const signedOut = (request.query as { signed_out?: unknown }).signed_out === '1';
    return renderPage(reply, 'login', { email: '', next, error: null, notice: signedOut ? 'You have signed out.' : null });
  });

  app.post('/login', { preHandler: [limitSignIn, app.csrfProtection] }, async (request, reply) => {
    const body = (request.body ?? {}) as LoginBody;
    const email = typeof body.email === 'string' ? body.email.slice(0, 254) : '';
    const password = typeof body.password === 'string' ? body.password.slice(0, 200) : '';
    const next = safeNext(body.next);
    const user = email && password ? await app.deps.companies.signIn(email, password) : undefined;
    if (!user) {
      request.log.info('sign-in failed');
      return renderPage(reply, 'login', { email, next, error: 'The email or password is not right. Check them and try again.' }, 401);
    }
    if (user.company_id !== null && (await app.deps.companies.getCompany(user.company_id)).suspended_at !== null) {
      request.log.info({ userId: user.id }, 'sign-in refused: company suspended');
      const suspended =
        "Your company's access to the registry is suspended by its operator, so nobody of your company can sign in. Its claims stay in the registry; ask the operator for the reason and to resume it.";
      return renderPage(reply, 'login', { email, next, error: suspended }, 403);
    }
    // A new session id at sign-in: an id planted before sign-in is worth nothing afterwards.
    await request.session.regenerate();
    request.session.userId = user.id;
    request.log.info({ userId: user.id }, 'signed in');
    return reply.redirect(user.role === 'operator' && next === '/' ? '/operator' : next, 303);
  });

  app.post('/logout', { preHandler: app.csrfProtection }, async (request, reply) => {
    if (request.session && 'destroy' in request.session) await request.session.destroy();
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/login?signed_out=1', 303);
  });
}
