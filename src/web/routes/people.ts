import type { FastifyInstance } from 'fastify';

import { auditOrigin } from '../../audit-origin';
import { personActor } from '../../domain/audit/audit';
import { COMPANY_ROLES, isCompanyRole } from '../../domain/companies/company-repository';
import { PASSWORD_MIN_LENGTH } from '../../domain/companies/company-service';
import { AppError } from '../../domain/errors';
import { companyUser } from '../context';
import { text, type FormBody } from '../forms';
import { renderPage } from '../render';

export const ROLES = COMPANY_ROLES;

/** Turns a failed createUser into field errors for the form; other errors propagate. */
export function personFormErrors(err: unknown): Record<string, string[]> {
  if (err instanceof AppError && err.code === 'VALIDATION_FAILED' && err.fields) return err.fields;
  if (err instanceof AppError && err.code === 'CONFLICT') return { email: [err.message] };
  throw err;
}

/**
 * Settings › People: everyone in the company sees who has access; only admins add and remove.
 * A generated first password is shown once, in the response that created it.
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
    const revoked = Number(text(q, 'revoked', 6)) || 0;
    const notice =
      text(q, 'removed') === '1'
        ? `The person was removed and signed out.${revoked ? ` ${revoked} API token${revoked === 1 ? ' was' : 's were'} revoked.` : ''}`
        : text(q, 'added') === '1'
          ? 'The person was added.'
          : text(q, 'role') === '1'
            ? 'The role was changed.'
            : null;
    return renderPage(reply, 'people', await listPage(companyUser(request).companyId, { notice }));
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
      return renderPage(
        reply,
        'person-created',
        { title: 'Person added', person: created.user, password: created.password, back: '/settings/people' },
        201,
      );
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
