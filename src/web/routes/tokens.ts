import type { FastifyInstance } from 'fastify';

import { auditOrigin } from '../../audit-origin';
import { personActor } from '../../domain/audit/audit';
import { AppError, type FieldErrors } from '../../domain/errors';
import { SCOPE_DESCRIPTIONS, TOKEN_SCOPES } from '../../domain/tokens/scopes';
import { TOKEN_PREFIX, type TokenLifetime } from '../../domain/tokens/token-service';
import { companyUser } from '../context';
import { text, type FormBody } from '../forms';
import { keepOnce, takeOnce } from '../one-time';
import { renderPage } from '../render';

/** The lifetimes the form offers (days); 90 is preselected (see `preselected`). */
const LIFETIME_CHOICES = ['7', '30', '90', '365'] as const;

/** The form's `expires` choice as a lifetime: a number of days, `date` (with `expires_on`), or `never`. */
function lifetimeOf(form: FormBody): TokenLifetime | undefined {
  const choice = text(form, 'expires', 20);
  if (choice === 'never') return 'never';
  if (choice === 'date') return { until: text(form, 'expires_on', 20) };
  if (/^\d{1,5}$/u.test(choice)) return { days: Number(choice) };
  return undefined;
}

/** Every value of a repeated checkbox. */
function values(form: FormBody, name: string): string[] {
  const raw = form[name];
  return (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((v): v is string => typeof v === 'string');
}

/** What the page says when another active token has the new token's name: created all the same. */
function nameInUseWarning(name: string, others: number): string {
  const who = others === 1 ? 'another active token is' : `${others} other active tokens are`;
  return (
    `The token was created, but ${who} also called “${name}”. To tell them apart, look at the last 4 characters ` +
    'in the list, or revoke one and create it again with a name that says which system uses it.'
  );
}

/**
 * Settings › API Tokens (admins). A token's value is shown once, on the page Create Token
 * redirects to (post/redirect/get: a reload creates nothing and shows it no more). The form asks for the scopes (none pre-chosen) and the expiry (90 days preselected, at most
 * TOKEN_MAX_LIFETIME_DAYS); the list shows both and flags tokens that expire within 7 days.
 */
export async function tokenRoutes(app: FastifyInstance) {
  const { tokens } = app.deps;
  const maxDays = tokens.maxLifetimeDays;
  const lifetimes = LIFETIME_CHOICES.filter((d) => maxDays === 0 || Number(d) <= maxDays);
  // 90 days preselected, or the longest choice within the maximum.
  const preselected = [...lifetimes].reverse().find((d) => Number(d) <= tokens.defaultLifetimeDays) ?? 'date';

  async function listPage(companyId: string, extra: Record<string, unknown> = {}) {
    const list = (await tokens.list(companyId)).map((t) => ({ ...t, expiresSoon: tokens.expiresSoon(t), expired: tokens.isExpired(t) }));
    return {
      title: 'API Tokens',
      tokens: list,
      tokenPrefix: TOKEN_PREFIX,
      name: '',
      errors: {},
      error: null,
      notice: null,
      warning: null,
      scopes: TOKEN_SCOPES.map((s) => ({ id: s, description: SCOPE_DESCRIPTIONS[s] })),
      chosenScopes: [],
      lifetimes,
      expires: preselected,
      expiresOn: '',
      offerNever: maxDays === 0,
      maxDays,
      ...extra,
    };
  }

  app.get('/settings', { config: { access: 'viewer' } }, async (request, reply) =>
    reply.redirect(request.webUser?.role === 'admin' ? '/settings/tokens' : '/settings/people', 303),
  );

  app.get('/settings/tokens', { config: { access: 'admin' } }, async (request, reply) => {
    const q = request.query as FormBody;
    const page = await listPage(companyUser(request).companyId);
    // After Create Token (?created=<id>): the value once, then (a reload) what happened.
    const createdId = text(q, 'created', 40);
    const created = createdId ? page.tokens.find((t) => t.id === createdId) : undefined;
    if (created) {
      const others = tokens.namesakes(page.tokens, created).length;
      const warning = others ? nameInUseWarning(created.name, others) : null;
      const shown = takeOnce(request, `token:${created.id}`);
      if (shown?.token) {
        const origin = `${request.protocol}://${request.host}`;
        return renderPage(reply, 'token-created', { title: 'Token created', token: { ...created, token: shown.token }, warning, origin });
      }
      const notice = `The token “${created.name}” was created. Its value was shown once and cannot be shown again: if it was not copied, revoke the token and create a new one.`;
      return renderPage(reply, 'tokens', { ...page, notice, warning });
    }
    const revoked = text(q, 'revoked') === '1';
    const notice = revoked ? 'The token was revoked. Requests that use it now get 401 Unauthenticated.' : null;
    return renderPage(reply, 'tokens', { ...page, notice });
  });

  app.post('/settings/tokens', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const user = companyUser(request);
    const form = (request.body ?? {}) as FormBody;
    const name = text(form, 'name', 200);
    const chosenScopes = values(form, 'scopes');
    const lifetime = lifetimeOf(form);
    try {
      const created = await tokens.create(user.companyId, name, user.id, {
        scopes: chosenScopes,
        // The form preselects 90 days; a form sent without a choice gets the same.
        ...(lifetime ? { lifetime } : {}),
        actor: personActor(user),
        origin: auditOrigin(request),
      });
      request.log.info({ tokenId: created.id }, 'API token created');
      keepOnce(request, `token:${created.id}`, { token: created.token });
      return reply.redirect(`/settings/tokens?created=${created.id}`, 303);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err;
      const errors: FieldErrors = err.fields ?? {};
      const page = await listPage(user.companyId, {
        name,
        errors,
        error: errors.name?.[0] ?? null,
        chosenScopes,
        expires: text(form, 'expires', 20),
        expiresOn: text(form, 'expires_on', 20),
      });
      return renderPage(reply, 'tokens', page, 422);
    }
  });

  app.get('/settings/tokens/:id/revoke', { config: { access: 'admin' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const token = (await tokens.list(companyUser(request).companyId)).find((t) => t.id === id);
    if (!token) throw new AppError('NOT_FOUND', 'Token not found.');
    return renderPage(reply, 'token-revoke', { title: 'Revoke token', token });
  });

  app.post('/settings/tokens/:id/revoke', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    const token = await tokens.revoke(id, user.companyId, { actor: personActor(user), origin: auditOrigin(request) });
    request.log.info({ tokenId: token.id }, 'API token revoked');
    return reply.redirect('/settings/tokens?revoked=1', 303);
  });
}
