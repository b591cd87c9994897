import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { safeNext, SESSION_COOKIE } from '../context';
import { text, type FormBody } from '../forms';
import { signOutOf } from '../session-rules';
import { renderPage } from '../render';
import { afterFirstFactor, completeSignIn, pendingSignIn, recordPerson, recordSignInEvent } from '../sign-in-flow';
import { startSso } from './sso';

const emailOf = (body: unknown) => text(body as FormBody, 'email', 254).toLowerCase();

const ENDED = {
  idle: (minutes: number) => `You were signed out after ${minutes} minutes without activity. Sign in again to go on.`,
  expired: () => 'You were signed out: a sign-in lasts 8 hours. Sign in again to go on.',
};

export async function authRoutes(app: FastifyInstance) {
  const { deps } = app;

  /** A friendly 429 page with Retry-After: an account's attempts (or this address's at it) are spent. */
  async function tooMany(request: FastifyRequest, reply: FastifyReply, wait: number, template: string, data: object) {
    reply.header('retry-after', String(wait));
    request.log.info('sign-in throttled');
    const minutes = Math.ceil(wait / 60);
    return renderPage(
      reply,
      template,
      { ...data, error: `Too many sign-in attempts. Wait ${minutes} minute${minutes === 1 ? '' : 's'}, then try again.` },
      429,
    );
  }

  /** Counts an attempt at `email` before it is checked (throttle.ts); undefined when refused (the 429 page is sent). */
  async function attempt(request: FastifyRequest, reply: FastifyReply, email: string, template: string, data: object) {
    const counted = await deps.signInThrottle.attempt(email, request.ip);
    if (counted.allowed) return counted;
    await tooMany(request, reply, counted.retryAfterSeconds, template, data);
    return undefined;
  }

  app.get('/login', { config: { access: 'public' } }, async (request, reply) => {
    const q = request.query as FormBody;
    const next = safeNext(q.next);
    if (request.webUser) return reply.redirect(next, 303);
    const pending = pendingSignIn(request);
    if (pending) return reply.redirect(pending.step === 'code' ? '/login/code' : '/login/enrol', 303);
    const ended = request.session?.ended;
    if (ended) delete request.session.ended;
    const notice =
      text(q, 'signed_out') === '1'
        ? 'You have signed out.'
        : text(q, 'reset') === '1'
          ? 'Your new password is set. Sign in with it.'
          : ended
            ? ENDED[ended](deps.config.sessionIdleMinutes)
            : null;
    return renderPage(reply, 'login', { step: 'email', email: text(q, 'email', 254), next, error: null, notice });
  });

  /**
   * The sign-in form. Its first step asks only for the email: an email of a domain with single
   * sign-on goes to the company's provider, any other gets the password step. A form with both
   * (the second step, or a script) signs in with the password, unless the company allows only SSO.
   */
  app.post('/login', { config: { access: 'public' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const body = (request.body ?? {}) as FormBody;
    const email = emailOf(body);
    const next = safeNext(body.next);
    const hasPassword = typeof body.password === 'string';
    const password = hasPassword ? String(body.password).slice(0, 200) : '';
    const page = { step: hasPassword ? 'password' : 'email', email, next };
    if (!email) return renderPage(reply, 'login', { ...page, step: 'email', error: 'Enter your email address.' }, 422);
    if (!hasPassword) {
      const wait = await deps.signInThrottle.blockedFor(email, request.ip);
      if (wait > 0) return tooMany(request, reply, wait, 'login', page);
      const sso = await deps.signIn.ssoForEmail(email);
      if (sso) return startSso(request, reply, sso, email, next);
      return renderPage(reply, 'login', { ...page, step: 'password', error: null });
    }
    const counted = await attempt(request, reply, email, 'login', page);
    if (!counted) return reply;
    const sso = await deps.signIn.ssoForEmail(email);
    // The password is checked whatever the account's state (the same scrypt work: the same time).
    const user = await deps.companies.signIn(email, password);
    if (sso?.ssoOnly) {
      await recordSignInEvent(request, 'person.sign_in_failed', { email });
      return renderPage(
        reply,
        'login',
        { ...page, step: 'email', error: 'Your company signs in only through its own sign-in page. Choose Continue to go there.' },
        403,
      );
    }
    if (!user) {
      await recordSignInEvent(request, 'person.sign_in_failed', { email });
      return renderPage(reply, 'login', { ...page, error: 'The email or password is not right. Check them and try again.' }, 401);
    }
    await counted.succeeded();
    return afterFirstFactor(request, reply, user, next, 'password');
  });

  /** The second step for a person with a second factor: a code from their app, or a recovery code. */
  app.get('/login/code', { config: { access: 'public' } }, async (request, reply) => {
    const pending = pendingSignIn(request);
    if (!pending || pending.step !== 'code') return reply.redirect('/login', 303);
    return renderPage(reply, 'login-code', { title: 'Second factor', error: null });
  });

  app.post('/login/code', { config: { access: 'public' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const pending = pendingSignIn(request);
    if (!pending || pending.step !== 'code') return reply.redirect('/login', 303);
    const user = await deps.companies.findUser(pending.userId);
    if (!user) return reply.redirect('/login', 303);
    const counted = await attempt(request, reply, user.email, 'login-code', { title: 'Second factor' });
    if (!counted) return reply;
    const code = text(request.body as FormBody, 'code', 64);
    const used = code ? await deps.signIn.checkCode(user.id, code) : null;
    if (!used) {
      await recordSignInEvent(request, 'person.sign_in_failed', recordPerson(user));
      return renderPage(
        reply,
        'login-code',
        { title: 'Second factor', error: 'That code is not right, or was used already. Try the newest code from your app.' },
        401,
      );
    }
    await counted.succeeded();
    const target = await completeSignIn(request, user, pending.next);
    await recordSignInEvent(request, 'person.signed_in', recordPerson(user), used === 'recovery' ? 'recovery code' : 'authenticator code');
    return reply.redirect(target, 303);
  });

  app.post('/logout', { config: { access: 'public' }, preHandler: app.csrfProtection }, async (request, reply) => {
    if (request.session && 'destroy' in request.session) {
      signOutOf(request.session);
      await request.session.destroy();
    }
    reply.clearCookie(SESSION_COOKIE, { path: '/', secure: request.protocol === 'https' });
    return reply.redirect('/login?signed_out=1', 303);
  });
}
