import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';

import { AppError } from '../../domain/errors';
import { PASSWORD_MIN_LENGTH } from '../../domain/companies/company-service';
import { companyUser, safeNext } from '../context';
import { text, type FormBody } from '../forms';
import { renderPage } from '../render';
import { auditOrigin } from '../../audit-origin';
import { completeSignIn, pendingSignIn, personEvent, recordPerson, recordSignInEvent, webActor, webPerson } from '../sign-in-flow';
import { keepResetLink } from './people';
import { redirectUriOf } from './sso';

/** The QR code of an otpauth:// address, drawn here (no script, no other site): an SVG as a data: image. */
async function qrDataUrl(uri: string): Promise<string> {
  const svg = await QRCode.toString(uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' });
  return `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
}

/** The answer to an attempt past the person's sign-in throttle (with Retry-After). */
const TOO_MANY_ATTEMPTS = 'Too many failed attempts. Wait a few minutes, then try again.';

/** The key in groups of four, as apps show and accept it when typed. */
const grouped = (key: string) => key.match(/.{1,4}/gu)!.join(' ');

export async function securityRoutes(app: FastifyInstance) {
  const { deps } = app;
  const { signIn } = deps;

  async function enrolPage(
    reply: FastifyReply,
    user: { id: string; email: string },
    opts: { action: string; duringSignIn: boolean; error?: string | null },
    status = 200,
  ) {
    const enrolment = (await signIn.pendingEnrolment(user)) ?? (await signIn.startEnrolment(user));
    return renderPage(
      reply,
      'enrol',
      {
        title: 'Set up a second factor',
        qr: await qrDataUrl(enrolment.uri),
        key: grouped(enrolment.key),
        action: opts.action,
        duringSignIn: opts.duringSignIn,
        error: opts.error ?? null,
      },
      status,
    );
  }

  /** The set-up page again, 429 with Retry-After: the person's codes are past the sign-in throttle. */
  function tooManyCodes(
    reply: FastifyReply,
    user: { id: string; email: string },
    counted: { retryAfterSeconds: number },
    opts: { action: string; duringSignIn: boolean },
  ) {
    reply.header('retry-after', String(counted.retryAfterSeconds));
    return enrolPage(reply, user, { ...opts, error: TOO_MANY_ATTEMPTS }, 429);
  }

  // --- Set-up during sign-in (a second factor is required and the person has none) -----------------

  app.get('/login/enrol', { config: { access: 'public' } }, async (request, reply) => {
    const pending = pendingSignIn(request);
    if (!pending || pending.step !== 'enrol') return reply.redirect('/login', 303);
    const user = await deps.companies.findUser(pending.userId);
    if (!user) return reply.redirect('/login', 303);
    return enrolPage(reply, user, { action: '/login/enrol', duringSignIn: true });
  });

  app.post('/login/enrol', { config: { access: 'public' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const pending = pendingSignIn(request);
    if (!pending || pending.step !== 'enrol') return reply.redirect('/login', 303);
    const user = await deps.companies.findUser(pending.userId);
    if (!user) return reply.redirect('/login', 303);
    const counted = await deps.signInThrottle.attempt(user.email, request.ip);
    if (!counted.allowed) return tooManyCodes(reply, user, counted, { action: '/login/enrol', duringSignIn: true });
    const codes = await signIn.confirmEnrolment(user.id, text(request.body as FormBody, 'code', 20), [
      personEvent(request, 'person.mfa_enabled', recordPerson(user)),
    ]);
    if (!codes) {
      await recordSignInEvent(request, 'person.sign_in_failed', recordPerson(user));
      return enrolPage(
        reply,
        user,
        { action: '/login/enrol', duringSignIn: true, error: 'That code is not right. Enter the 6-digit code your app shows now.' },
        422,
      );
    }
    await counted.succeeded();
    const next = await completeSignIn(request, user, pending.next);
    await recordSignInEvent(request, 'person.signed_in', recordPerson(user));
    return renderPage(reply, 'recovery-codes', { title: 'Recovery codes', codes, next: safeNext(next) });
  });

  // --- Settings › Security: one's own second factor and password ------------------------------------

  async function securityPage(request: FastifyRequest, reply: FastifyReply, extra: Record<string, unknown> = {}, status = 200) {
    const user = request.webUser!;
    const factor = await signIn.secondFactor(user.id);
    const q = request.query as FormBody;
    const notices: Record<string, string> = {
      password: 'Your password is changed. Your other sessions have ended.',
      disabled: 'The second factor is turned off.',
    };
    return renderPage(
      reply,
      'security',
      {
        title: 'Security',
        factor,
        required: user.secondFactorRequired,
        passwordMin: PASSWORD_MIN_LENGTH,
        errors: {},
        notice: notices[text(q, 'done', 20)] ?? null,
        isOperator: user.companyId === null,
        ...extra,
      },
      status,
    );
  }

  app.get('/settings/security', { config: { access: 'signed-in' } }, async (request, reply) => securityPage(request, reply));

  app.post(
    '/settings/security/second-factor',
    { config: { access: 'signed-in' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = request.webUser!;
      if (user.secondFactor) return reply.redirect('/settings/security', 303);
      return enrolPage(reply, user, { action: '/settings/security/second-factor/confirm', duringSignIn: false });
    },
  );

  app.post(
    '/settings/security/second-factor/confirm',
    { config: { access: 'signed-in' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = request.webUser!;
      if (user.secondFactor) return reply.redirect('/settings/security', 303);
      // Codes are guessed against the same throttle as every other code of this person's.
      const counted = await deps.signInThrottle.attempt(user.email, request.ip);
      if (!counted.allowed) {
        return tooManyCodes(reply, user, counted, { action: '/settings/security/second-factor/confirm', duringSignIn: false });
      }
      const codes = await signIn.confirmEnrolment(user.id, text(request.body as FormBody, 'code', 20), [
        personEvent(request, 'person.mfa_enabled', webPerson(request)),
      ]);
      if (!codes) {
        return enrolPage(
          reply,
          user,
          {
            action: '/settings/security/second-factor/confirm',
            duringSignIn: false,
            error: 'That code is not right. Enter the 6-digit code your app shows now.',
          },
          422,
        );
      }
      await counted.succeeded();
      // A step up: the session goes on (the same sign-in) under a new id.
      await request.session.regenerate(['userId', 'signedInAt', 'lastSeen']);
      return renderPage(reply, 'recovery-codes', { title: 'Recovery codes', codes, next: '/settings/security' });
    },
  );

  app.post(
    '/settings/security/second-factor/disable',
    { config: { access: 'signed-in' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = request.webUser!;
      const counted = await deps.signInThrottle.attempt(user.email, request.ip);
      if (!counted.allowed) {
        reply.header('retry-after', String(counted.retryAfterSeconds));
        return securityPage(request, reply, { errors: { code: [TOO_MANY_ATTEMPTS] } }, 429);
      }
      const ok = await signIn.disable(user, text(request.body as FormBody, 'code', 64), [
        personEvent(request, 'person.mfa_disabled', webPerson(request)),
      ]);
      if (!ok) return securityPage(request, reply, { errors: { code: ['That code is not right, or was used already.'] } }, 422);
      await counted.succeeded();
      return reply.redirect('/settings/security?done=disabled', 303);
    },
  );

  app.post('/settings/security/password', { config: { access: 'signed-in' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const user = request.webUser!;
    const body = request.body as FormBody;
    const raw = (name: string) => (typeof body?.[name] === 'string' ? String(body[name]) : '');
    // The current password is an attempt at the account, counted before it is checked.
    const counted = await deps.signInThrottle.attempt(user.email, request.ip);
    if (!counted.allowed) {
      reply.header('retry-after', String(counted.retryAfterSeconds));
      return securityPage(request, reply, { errors: { current_password: [TOO_MANY_ATTEMPTS] } }, 429);
    }
    try {
      await signIn.changePassword(
        user.id,
        { current: raw('current_password'), next: raw('new_password'), confirm: raw('confirm_password') },
        request.session.sessionId,
        [personEvent(request, 'person.password_changed', webPerson(request))],
      );
    } catch (err) {
      if (err instanceof AppError && err.code === 'VALIDATION_FAILED' && err.fields) {
        if (!err.fields.current_password) await counted.succeeded();
        return securityPage(request, reply, { errors: err.fields }, 422);
      }
      throw err;
    }
    await counted.succeeded();
    return reply.redirect('/settings/security?done=password', 303);
  });

  // --- A company's sign-in settings: its admin, or the operator -------------------------------------

  async function signInSettingsPage(
    request: FastifyRequest,
    reply: FastifyReply,
    companyId: string,
    extra: Record<string, unknown> = {},
    status = 200,
  ) {
    const company = await deps.companies.getCompany(companyId);
    const settings = await signIn.companySettings(companyId);
    const operator = request.webUser?.companyId === null;
    const base = operator ? `/operator/companies/${companyId}/sign-in` : '/settings/sign-in';
    const q = request.query as FormBody;
    return renderPage(
      reply,
      'sign-in-settings',
      {
        title: 'Sign-in',
        company,
        operator,
        base,
        settings,
        redirectUri: redirectUriOf(request),
        form: {
          issuer: settings.sso?.issuer ?? '',
          client_id: settings.sso?.clientId ?? '',
          domains: settings.sso?.domains.join(', ') ?? '',
          sso_only: settings.sso?.ssoOnly ?? false,
        },
        errors: {},
        notice: text(q, 'saved', 10) === '1' ? 'Saved.' : text(q, 'removed', 10) === '1' ? 'Single sign-on is turned off.' : null,
        ...extra,
      },
      status,
    );
  }

  /** company.settings_changed, by the admin or the operator. */
  const settingsEvent = (request: FastifyRequest, companyId: string, name: string) => ({
    companyId,
    action: 'company.settings_changed' as const,
    actor: webActor(request),
    target: { type: 'company', id: companyId, name },
    ...auditOrigin(request),
  });

  async function saveSso(request: FastifyRequest, reply: FastifyReply, companyId: string, base: string) {
    const body = request.body as FormBody;
    const form = {
      issuer: text(body, 'issuer', 600),
      client_id: text(body, 'client_id', 300),
      domains: text(body, 'domains', 3000),
      sso_only: text(body, 'sso_only', 5) === 'on',
    };
    try {
      await signIn.saveSso(
        companyId,
        {
          issuer: form.issuer,
          clientId: form.client_id,
          clientSecret: text(body, 'client_secret', 1100),
          domains: form.domains,
          ssoOnly: form.sso_only,
        },
        { actor: webActor(request), origin: auditOrigin(request) },
      );
    } catch (err) {
      if (err instanceof AppError && err.code === 'VALIDATION_FAILED' && err.fields) {
        return signInSettingsPage(request, reply, companyId, { form, errors: err.fields }, 422);
      }
      throw err;
    }
    request.log.info({ companyId }, 'company sign-in settings changed');
    return reply.redirect(`${base}?saved=1`, 303);
  }

  async function saveSecondFactorRule(request: FastifyRequest, reply: FastifyReply, companyId: string, base: string) {
    await signIn.setRequireSecondFactor(companyId, text(request.body as FormBody, 'require_second_factor', 5) === 'on', [
      settingsEvent(request, companyId, 'second factor required'),
    ]);
    request.log.info({ companyId }, 'company sign-in settings changed');
    return reply.redirect(`${base}?saved=1`, 303);
  }

  app.get('/settings/sign-in', { config: { access: 'admin' } }, async (request, reply) =>
    signInSettingsPage(request, reply, companyUser(request).companyId),
  );
  app.post('/settings/sign-in/sso', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) =>
    saveSso(request, reply, companyUser(request).companyId, '/settings/sign-in'),
  );
  app.post('/settings/sign-in/sso/remove', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { companyId } = companyUser(request);
    await signIn.deleteSso(companyId, [settingsEvent(request, companyId, 'single sign-on removed')]);
    return reply.redirect('/settings/sign-in?removed=1', 303);
  });
  app.post('/settings/sign-in/second-factor', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) =>
    saveSecondFactorRule(request, reply, companyUser(request).companyId, '/settings/sign-in'),
  );

  const operatorBase = (id: string) => `/operator/companies/${id}/sign-in`;
  app.get('/operator/companies/:id/sign-in', { config: { access: 'operator' } }, async (request, reply) =>
    signInSettingsPage(request, reply, (request.params as { id: string }).id),
  );
  app.post(
    '/operator/companies/:id/sign-in/sso',
    { config: { access: 'operator' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      await deps.companies.getCompany(id);
      return saveSso(request, reply, id, operatorBase(id));
    },
  );
  app.post(
    '/operator/companies/:id/sign-in/sso/remove',
    { config: { access: 'operator' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      await deps.companies.getCompany(id);
      await signIn.deleteSso(id, [settingsEvent(request, id, 'single sign-on removed')]);
      return reply.redirect(`${operatorBase(id)}?removed=1`, 303);
    },
  );
  app.post(
    '/operator/companies/:id/sign-in/second-factor',
    { config: { access: 'operator' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      await deps.companies.getCompany(id);
      return saveSecondFactorRule(request, reply, id, operatorBase(id));
    },
  );

  // --- An admin's password reset: a one-time link, valid 1 hour, shown to the admin -----------------

  app.post('/settings/people/:id/reset', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const user = companyUser(request);
    const { id } = request.params as { id: string };
    if (id === user.id) throw new AppError('FORBIDDEN', 'Change your own password under Settings, Security.');
    // The old password stops working now: a change of the person's password, by the admin.
    const link = await signIn.createResetLink(user.companyId, id, (p) => [
      personEvent(request, 'person.password_changed', recordPerson(p), webPerson(request)),
    ]);
    request.log.info({ userId: id }, 'password reset link made');
    // Shown once on the page this redirects to (people.ts), so a reload makes no second link.
    return reply.redirect(keepResetLink(request, link.person.id, link.token), 303);
  });

  const resetPage = (reply: FastifyReply, token: string, extra: Record<string, unknown> = {}, status = 200) =>
    renderPage(
      reply,
      'reset-password',
      { title: 'Choose a new password', token, errors: {}, passwordMin: PASSWORD_MIN_LENGTH, ...extra },
      status,
    );
  const goneLink = (reply: FastifyReply) =>
    renderPage(
      reply,
      'error',
      {
        title: 'Link no longer valid',
        message: 'This reset link was used already or is more than an hour old. Ask an admin of your company for a new one.',
      },
      410,
    );

  app.get('/reset/:token', { config: { access: 'public' } }, async (request, reply) => {
    const { token } = request.params as { token: string };
    reply.header('referrer-policy', 'no-referrer');
    if (!(await signIn.resetLinkPerson(token))) return goneLink(reply);
    return resetPage(reply, token);
  });

  app.post('/reset/:token', { config: { access: 'public' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { token } = request.params as { token: string };
    const body = request.body as FormBody;
    const raw = (name: string) => (typeof body?.[name] === 'string' ? String(body[name]) : '');
    try {
      const person = await signIn.resetPassword(token, { next: raw('new_password'), confirm: raw('confirm_password') }, (p) => [
        personEvent(request, 'person.password_changed', recordPerson(p)),
      ]);
      if (!person) return goneLink(reply);
      return reply.redirect('/login?reset=1', 303);
    } catch (err) {
      if (err instanceof AppError && err.code === 'VALIDATION_FAILED' && err.fields)
        return resetPage(reply, token, { errors: err.fields }, 422);
      throw err;
    }
  });
}
