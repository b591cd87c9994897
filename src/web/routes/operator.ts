import type { FastifyInstance, FastifyRequest } from 'fastify';

import { auditOrigin } from '../../audit-origin';
import { AUDIT_ACTIONS, operatorActor } from '../../domain/audit/audit';
import { isCompanyRole } from '../../domain/companies/company-repository';
import { PASSWORD_MIN_LENGTH } from '../../domain/companies/company-service';
import { AppError } from '../../domain/errors';
import { isUuid } from '../../domain/ids';

import { text, type FormBody } from '../forms';
import { renderPage } from '../render';
import { firstPasswordPage, keepFirstPassword, personFormErrors, ROLES } from './people';

/** The operator's area: companies, their people, suspension, the audit log of every company, and a link to the queues (Bull Board). */
export async function operatorRoutes(app: FastifyInstance) {
  const { companies, dashboard } = app.deps;
  /** The operator as the actor of an act, and where the request came from. */
  const by = (request: FastifyRequest) => ({ actor: operatorActor(request.webUser!), origin: auditOrigin(request) });

  async function companiesPage(extra: Record<string, unknown> = {}) {
    const [list, counts, imports, queue] = await Promise.all([
      companies.listCompanies(),
      dashboard.companyCounts(),
      dashboard.recentImports(20),
      app.deps.queueHealth(),
    ]);
    const byId = new Map(counts.map((c) => [c.id, c]));
    const none = { claims: 0, imports: 0, tokens: 0, people: 0 };
    return {
      title: 'Companies',
      companies: list.map((c) => ({ ...c, ...none, ...byId.get(c.id), id: c.id })),
      imports,
      queue,
      name: '',
      error: null,
      ...extra,
    };
  }

  async function companyPage(companyId: string, extra: Record<string, unknown> = {}) {
    const company = await companies.getCompany(companyId);
    return {
      title: company.name,
      company,
      people: await companies.listUsers(company.id),
      sso: (await app.deps.signIn.companySettings(company.id)).sso,
      domainError: null,
      form: { email: '', role: 'admin' },
      errors: {},
      notice: null,
      roles: ROLES,
      passwordMin: PASSWORD_MIN_LENGTH,
      ...extra,
    };
  }

  app.get('/operator', { config: { access: 'operator' } }, async (_request, reply) =>
    renderPage(reply, 'operator-companies', await companiesPage()),
  );

  app.post('/operator/companies', { config: { access: 'operator' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const name = text(request.body as FormBody, 'name', 300);
    try {
      const company = await companies.createCompany(name, by(request));
      request.log.info({ companyId: company.id }, 'company created');
      return reply.redirect(`/operator/companies/${company.id}?created=1`, 303);
    } catch (err) {
      if (!(err instanceof AppError) || (err.code !== 'VALIDATION_FAILED' && err.code !== 'CONFLICT')) throw err;
      return renderPage(reply, 'operator-companies', await companiesPage({ name, error: err.message }), 422);
    }
  });

  app.get('/operator/companies/:id', { config: { access: 'operator' } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const q = request.query as FormBody;
    const page = await companyPage(id);
    // After Add person with a generated first password (?added=<id>): the password once.
    const after = firstPasswordPage(
      request,
      page.people,
      `/operator/companies/${page.company.id}`,
      "remove them and add them again, or ask the company's admin to reset their password",
    );
    if (after && 'page' in after) return renderPage(reply, after.page, after.data);
    if (after) return renderPage(reply, 'operator-company', { ...page, notice: after.notice });
    const notice =
      text(q, 'created') === '1'
        ? 'The company was created. Now add its first admin.'
        : text(q, 'removed') === '1'
          ? 'The person was removed and signed out.'
          : text(q, 'added') === '1'
            ? 'The person was added.'
            : text(q, 'suspended') === '1'
              ? 'The company is suspended: its tokens get 403 company_suspended and its people cannot sign in. Its claims stay.'
              : text(q, 'resumed') === '1'
                ? 'The company is resumed: its tokens and people work again.'
                : text(q, 'domain') === 'approved'
                  ? "The domain is approved: its people now sign in through the company's single sign-on."
                  : text(q, 'domain') === 'removed'
                    ? 'The domain is removed: its people sign in with their passwords.'
                    : null;
    return renderPage(reply, 'operator-company', { ...page, notice });
  });

  for (const act of ['suspend', 'resume'] as const) {
    app.post(
      `/operator/companies/:id/${act}`,
      { config: { access: 'operator' }, preHandler: app.csrfProtection },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        const company = act === 'suspend' ? await companies.suspend(id, by(request)) : await companies.resume(id, by(request));
        request.log.info({ companyId: company.id }, act === 'suspend' ? 'company suspended' : 'company resumed');
        return reply.redirect(`/operator/companies/${company.id}?${act === 'suspend' ? 'suspended' : 'resumed'}=1`, 303);
      },
    );
  }

  // Single sign-on domains: one the company asked for covers its sign-ins once approved here (or
  // by `admin sso:domain-approve`); removing one withdraws it.
  for (const act of ['approve', 'remove'] as const) {
    app.post(
      `/operator/companies/:id/sso-domains/${act}`,
      { config: { access: 'operator' }, preHandler: app.csrfProtection },
      async (request, reply) => {
        const { id } = request.params as { id: string };
        const company = await companies.getCompany(id);
        const domain = text(request.body as FormBody, 'domain', 300);
        try {
          if (act === 'approve') await app.deps.signIn.approveDomain(company.id, domain, by(request));
          else await app.deps.signIn.removeDomain(company.id, domain, by(request));
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err;
          const domainError = Object.values(err.fields ?? {}).flat()[0] ?? err.message;
          return renderPage(reply, 'operator-company', await companyPage(company.id, { domainError }), 422);
        }
        request.log.info({ companyId: company.id }, act === 'approve' ? 'SSO domain approved' : 'SSO domain removed');
        return reply.redirect(`/operator/companies/${company.id}?domain=${act === 'approve' ? 'approved' : 'removed'}`, 303);
      },
    );
  }

  /** Every company's audit events (and the operator's own), newest first; `company` and `action` filter. */
  app.get('/operator/audit', { config: { access: 'operator' } }, async (request, reply) => {
    const q = request.query as FormBody;
    const companyId = text(q, 'company', 40);
    const action = text(q, 'action', 64);
    const cursor = text(q, 'cursor', 200);
    if (companyId && !isUuid(companyId)) throw new AppError('NOT_FOUND', 'Company not found.');
    const list = await companies.listCompanies();
    const names = new Map(list.map((c) => [c.id, c.name]));
    const page = await app.deps.audit.list(companyId || null, { action, cursor: cursor || undefined, limit: 50 });
    const params = new URLSearchParams({ ...(companyId ? { company: companyId } : {}), ...(action ? { action } : {}) });
    const next = page.meta.next_cursor ? new URLSearchParams({ ...Object.fromEntries(params), cursor: page.meta.next_cursor }) : null;
    return renderPage(reply, 'audit', {
      title: 'Audit log, every company',
      events: page.data.map((e) => ({ ...e, companyName: e.company_id ? (names.get(e.company_id) ?? e.company_id) : null })),
      actions: AUDIT_ACTIONS,
      action,
      companies: list,
      companyId,
      formAction: '/operator/audit',
      exportUrl: null,
      nextUrl: next ? `/operator/audit?${next.toString()}` : null,
      isFirstPage: !cursor,
      operator: true,
    });
  });

  app.post('/operator/companies/:id/people', { config: { access: 'operator' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const company = await companies.getCompany(id);
    const body = request.body as FormBody;
    const form = { email: text(body, 'email', 300), role: text(body, 'role', 20) };
    const password = typeof body?.password === 'string' ? body.password : '';
    try {
      if (!isCompanyRole(form.role))
        throw new AppError('VALIDATION_FAILED', 'Choose a role.', { role: ['Choose viewer, member or admin.'] });
      const created = await companies.createUser({ companyId: company.id, email: form.email, password, role: form.role, by: by(request) });
      request.log.info({ userId: created.user.id, companyId: company.id }, 'person added by the operator');
      const page = `/operator/companies/${company.id}`;
      if (!created.password) return reply.redirect(`${page}?added=1`, 303);
      return reply.redirect(keepFirstPassword(request, created.user.id, created.password, page), 303);
    } catch (err) {
      return renderPage(reply, 'operator-company', await companyPage(company.id, { form, errors: personFormErrors(err) }), 422);
    }
  });

  app.get('/operator/companies/:id/people/:personId/remove', { config: { access: 'operator' } }, async (request, reply) => {
    const { id, personId } = request.params as { id: string; personId: string };
    const company = await companies.getCompany(id);
    const person = (await companies.listUsers(company.id)).find((p) => p.id === personId);
    if (!person) throw new AppError('NOT_FOUND', 'Person not found.');
    const back = `/operator/companies/${company.id}`;
    return renderPage(reply, 'person-remove', {
      title: 'Remove person',
      person,
      made: await companies.madeBy(person.id, company.id),
      action: `${back}/people/${person.id}/remove`,
      back,
    });
  });

  app.post(
    '/operator/companies/:id/people/:personId/remove',
    { config: { access: 'operator' }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const { id, personId } = request.params as { id: string; personId: string };
      const company = await companies.getCompany(id);
      await companies.removeUser(personId, company.id, {
        keepTokens: text(request.body as FormBody, 'keep_tokens') === '1',
        ...by(request),
      });
      request.log.info({ userId: personId, companyId: company.id }, 'person removed by the operator');
      return reply.redirect(`/operator/companies/${company.id}?removed=1`, 303);
    },
  );
}
