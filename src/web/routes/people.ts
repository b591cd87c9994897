import type { FastifyInstance, FastifyRequest } from 'fastify';

import { auditOrigin } from '../../audit-origin';
import { personActor } from '../../domain/audit/audit';
import { COMPANY_ROLES, isCompanyRole } from '../../domain/companies/company-repository';
import { PASSWORD_MIN_LENGTH } from '../../domain/companies/company-service';
import { AppError } from '../../domain/errors';
import { RESET_LINK_MS } from '../../domain/sign-in/sign-in-service';
import { companyUser } from '../context';
import { text, type FormBody } from '../forms';
import { keepOnce, takeOnce } from '../one-time';
import { renderPage } from '../render';

export const ROLES = COMPANY_ROLES;

/** Turns a failed createUser into field errors for the form; other errors propagate. */
export function personFormErrors(err: unknown): Record<string, string[]> {
  if (err instanceof AppError && err.code === 'VALIDATION_FAILED' && err.fields) return err.fields;
  if (err instanceof AppError && err.code === 'CONFLICT') return { email: [err.message] };
  throw err;
}

/**
 * What the page after a create form shows: the one-time value's own page (the first time), or a
 * notice of what happened (a reload, once the value was shown).
 */
export type AfterCreate = { page: string; data: Record<string, unknown> } | { notice: string };

/**
 * After Add person with a generated first password, the page the form redirects to
 * (`?added=<person's id>`): the password once (kept by `keepFirstPassword`), then only what
 * happened (`ifLost`: what to do when the password was not passed on). Undefined when the query
 * names none of `people`.
 */
export function firstPasswordPage(
  request: FastifyRequest,
  people: { id: string; email: string }[],
  back: string,
  ifLost = 'use Reset password to give them a link instead',
): AfterCreate | undefined {
  const id = text(request.query as FormBody, 'added', 40);
  const person = people.find((p) => p.id === id);
  if (!person) return undefined;
  const shown = takeOnce(request, `person:${person.id}`);
  if (shown?.password) return { page: 'person-created', data: { title: 'Person added', person, password: shown.password, back } };
  return {
    notice: `${person.email} was added. Their first password was shown once and cannot be shown again: if it was not passed on, ${ifLost}.`,
  };
}

/** Keeps a generated first password for the page after the redirect; the redirect's address. */
export function keepFirstPassword(request: FastifyRequest, personId: string, password: string, page: string): string {
  keepOnce(request, `person:${personId}`, { password });
  return `${page}?added=${personId}`;
}

/** Keeps a new reset link's token for the page after the redirect (security.ts); the redirect's address. */
export function keepResetLink(request: FastifyRequest, personId: string, token: string): string {
  keepOnce(request, `reset:${personId}`, { token });
  return `/settings/people?reset=${personId}`;
}

/** After Reset password, the page the form redirects to (`?reset=<person's id>`): the link once, then only what happened. */
function resetLinkPage(request: FastifyRequest, people: { id: string; email: string }[]): AfterCreate | undefined {
  const id = text(request.query as FormBody, 'reset', 40);
  const person = people.find((p) => p.id === id);
  if (!person) return undefined;
  const shown = takeOnce(request, `reset:${person.id}`);
  if (shown?.token) {
    const link = `${request.protocol}://${request.host}/reset/${shown.token}`;
    return {
      page: 'reset-link',
      data: { title: 'Password reset link', person, link, minutes: RESET_LINK_MS / 60_000, back: '/settings/people' },
    };
  }
  return {
    notice: `A reset link for ${person.email} was made. It was shown once and cannot be shown again: if it was not copied, use Reset password to make a new one.`,
  };
}

/**
 * Settings › People: everyone in the company sees who has access; only admins add and remove.
 * A generated first password is shown once, on the page the form redirects to.
 */
export async function peopleRoutes(app: FastifyInstance) {
  const { companies } = app.deps;

  async function listPage(companyId: string, extra: Record<string, unknown> = {}) {
    return {
      title: 'People',
      people: await companies.listUsers(companyId),
      form: { email: '', role: 'member' },
      errors: {},
      notice: null,
      roles: ROLES,
      passwordMin: PASSWORD_MIN_LENGTH,
      ...extra,
    };
  }

  app.get('/settings/people', { config: { access: 'viewer' } }, async (request, reply) => {
    const q = request.query as FormBody;
    const page = await listPage(companyUser(request).companyId);
    const after = firstPasswordPage(request, page.people, '/settings/people') ?? resetLinkPage(request, page.people);
    if (after && 'page' in after) return renderPage(reply, after.page, after.data);
    if (after) return renderPage(reply, 'people', { ...page, notice: after.notice });
    const revoked = Number(text(q, 'revoked', 6)) || 0;
    const notice =
      text(q, 'removed') === '1'
        ? `The person was removed and signed out.${revoked ? ` ${revoked} API token${revoked === 1 ? ' was' : 's were'} revoked.` : ''}`
        : text(q, 'added') === '1'
          ? 'The person was added.'
          : text(q, 'role') === '1'
            ? 'The role was changed.'
            : null;
    return renderPage(reply, 'people', { ...page, notice });
  });

  app.post('/settings/people', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const user = companyUser(request);
    const body = request.body as FormBody;
    const form = { email: text(body, 'email', 300), role: text(body, 'role', 20) };
    const password = typeof body?.password === 'string' ? body.password : '';
    try {
      if (!isCompanyRole(form.role))
        throw new AppError('VALIDATION_FAILED', 'Choose a role.', { role: ['Choose viewer, member or admin.'] });
      const created = await companies.createUser({
        companyId: user.companyId,
        email: form.email,
        password,
        role: form.role,
        by: { actor: personActor(user), origin: auditOrigin(request) },
      });
      request.log.info({ userId: created.user.id }, 'person added');
      if (!created.password) return reply.redirect('/settings/people?added=1', 303);
      return reply.redirect(keepFirstPassword(request, created.user.id, created.password, '/settings/people'), 303);
    } catch (err) {
      return renderPage(reply, 'people', await listPage(user.companyId, { form, errors: personFormErrors(err) }), 422);
    }
  });

  app.get('/settings/people/:id/remove', { config: { access: 'admin' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    const person = (await companies.listUsers(user.companyId)).find((p) => p.id === id);
    if (!person) throw new AppError('NOT_FOUND', 'Person not found.');
    if (person.id === user.id) throw new AppError('FORBIDDEN', 'You cannot remove yourself. Ask another admin of your company.');
    return renderPage(reply, 'person-remove', {
      title: 'Remove person',
      person,
      made: await companies.madeBy(person.id, user.companyId),
      action: `/settings/people/${person.id}/remove`,
      back: '/settings/people',
    });
  });

  app.post('/settings/people/:id/remove', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    if (id === user.id) throw new AppError('FORBIDDEN', 'You cannot remove yourself. Ask another admin of your company.');
    const { revokedTokens } = await companies.removeUser(id, user.companyId, {
      keepTokens: text(request.body as FormBody, 'keep_tokens') === '1',
      heirId: user.id,
      actor: personActor(user),
      origin: auditOrigin(request),
    });
    request.log.info({ userId: id, tokensRevoked: revokedTokens.length }, 'person removed');
    return reply.redirect(`/settings/people?removed=1${revokedTokens.length ? `&revoked=${revokedTokens.length}` : ''}`, 303);
  });

  app.post('/settings/people/:id/role', { config: { access: 'admin' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const user = companyUser(request);
    const changed = await companies.changeRole(id, user.companyId, text(request.body as FormBody, 'role', 20), {
      selfId: user.id,
      actor: personActor(user),
      origin: auditOrigin(request),
    });
    request.log.info({ userId: changed.id, role: changed.role }, 'role changed');
    return reply.redirect('/settings/people?role=1', 303);
  });
}
