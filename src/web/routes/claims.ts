import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { CLAIM_SOURCES, CLAIM_STATUSES, CLAIM_TYPES, DOCUMENT_TYPES, LIMITS, normalizePlate } from '../../domain/claims/claim';
import { plateSearchSchema, type PlateSearchBody, statusChangeSchema, type StatusChangeBody } from '../../domain/claims/claim-schema';
import { CLAIM_LIST_PAGE_SIZE } from '../../domain/dashboard/dashboard-service';
import { validateInput } from '../../domain/validation';
import { AppError, validationError } from '../../domain/errors';
import { exportHref, filterParams, pageLinks, parseClaimListQuery } from '../claim-list';
import { auditOrigin } from '../../audit-origin';
import { claimsCsv } from '../claims-export';
import { companyUser, fromAnotherSite, principalOf } from '../context';
import { claimBodyFromForm, emptyClaimForm, errorSummary, text, type FormBody } from '../forms';
import { renderPage } from '../render';
import { webActor } from '../sign-in-flow';
import { claimPageRegistry } from './lookups';

// The inputs' maxlength attributes come from the schema's limits, not written again in the views.
const choices = { statuses: CLAIM_STATUSES, claimTypes: CLAIM_TYPES, documentTypes: DOCUMENT_TYPES, limits: LIMITS };

export async function claimRoutes(app: FastifyInstance) {
  const { claims } = app.deps;

  app.get('/claims', { config: { access: 'viewer' } }, async (request, reply) => {
    const user = companyUser(request);
    const q = parseClaimListQuery(request.query as FormBody);
    const list = await app.deps.dashboard.claimList(user.companyId, q.filter, q.sort, q.seek, q.page);
    const filtered = Object.keys(filterParams(q)).some((k) => k !== 'sort');
    return renderPage(
      reply,
      'claims',
      {
        title: 'Claims',
        claims: list.rows,
        total: list.total,
        page: list.page,
        pages: list.pages,
        pageSize: CLAIM_LIST_PAGE_SIZE,
        links: pageLinks(q, { page: list.page, pages: list.pages, first: list.rows[0]?.key, last: list.rows.at(-1)?.key }),
        values: q.values,
        errors: q.errors,
        filtered,
        exportUrl: exportHref(q),
        sources: CLAIM_SOURCES,
        ...choices,
      },
      Object.keys(q.errors).length ? 422 : 200,
    );
  });

  app.get('/claims/export.csv', { config: { access: 'viewer' } }, async (request, reply) => {
    const user = companyUser(request);
    const q = parseClaimListQuery(request.query as FormBody);
    const day = app.deps.today();
    request.log.info({ filtered: Object.keys(filterParams(q)) }, 'claims exported');
    const filters = filterParams(q);
    await app.deps.audit.recordDownload({
      what: 'claims CSV',
      companyId: user.companyId,
      of: { type: 'claims', id: null },
      by: { actor: webActor(request) },
      origin: auditOrigin(request),
      details: { filters: Object.keys(filters).length ? new URLSearchParams(filters).toString() : null },
    });
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="claims-${day}.csv"`)
      .send(claimsCsv(app.deps.dashboard.exportClaims(user.companyId, q.filter, q.sort)));
  });

  app.get('/claims/new', { config: { access: 'member' } }, async (request, reply) => {
    return renderPage(reply, 'claim-new', {
      title: 'Enter a claim',
      values: emptyClaimForm(app.deps.today()),
      today: app.deps.today(),
      errors: {},
      summary: [],
      ...choices,
    });
  });

  app.post('/claims', { config: { access: 'member' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { body, values } = claimBodyFromForm(request.body as FormBody);
    try {
      const claim = await claims.submit(principalOf(companyUser(request)), body, 'assisted');
      return reply.redirect(`/claims/${claim.id}?saved=1`, 303);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED' || !err.fields) throw err;
      const errors = err.fields;
      const summary = errorSummary(errors);
      return renderPage(
        reply,
        'claim-new',
        { title: 'Enter a claim', path: '/claims/new', values, errors, summary, today: app.deps.today(), ...choices },
        422,
      );
    }
  });

  /**
   * A claim's page. Its matches, incident and network are cross-company reads, each recorded in
   * the look-up log like the API's: a page opened from another site (a link anywhere) writes none
   * of them and offers a button instead (DECISIONS, "A link from elsewhere discloses nothing").
   */
  async function claimPage(request: FastifyRequest, reply: FastifyReply, lookups: boolean) {
    const { id } = request.params as { id: string };
    const principal = principalOf(companyUser(request));
    const claim = await claims.get(principal, id);
    const query = request.query as FormBody;
    const notice =
      text(query, 'saved') === '1' ? 'The claim was saved.' : text(query, 'updated') === '1' ? 'The status was changed.' : null;
    const [registry, history] = await Promise.all([
      claimPageRegistry(app, principal, id, lookups),
      app.deps.dashboard.statusHistory(principal.companyId, id),
    ]);
    return renderPage(reply, 'claim', {
      title: `Claim of ${claim.claim_date}`,
      claim,
      notice,
      history,
      ownCompany: principal.companyName,
      statuses: CLAIM_STATUSES,
      ...registry,
    });
  }

  app.get('/claims/:id', { config: { access: 'viewer' } }, async (request, reply) => claimPage(request, reply, !fromAnotherSite(request)));
  // The button of a page opened from another site: a form with its CSRF token, never sent by a script.
  app.post('/claims/:id/registry', { config: { access: 'viewer' }, preHandler: app.csrfProtection }, async (request, reply) =>
    claimPage(request, reply, true),
  );

  app.post('/claims/:id/status', { config: { access: 'member' }, preHandler: app.csrfProtection }, async (request, reply) => {
    const { id } = request.params as { id: string };
    // The same schema as the API's PATCH body.
    const { value, errors } = validateInput<StatusChangeBody>(statusChangeSchema, { status: text(request.body as FormBody, 'status') });
    if (errors) throw validationError(errors);
    try {
      await claims.updateStatus(principalOf(companyUser(request)), id, value.status);
    } catch (err) {
      if (err instanceof AppError && err.code === 'FORBIDDEN') {
        throw new AppError('FORBIDDEN', 'This claim belongs to another company. Only that company can change its status.');
      }
      throw err;
    }
    return reply.redirect(`/claims/${id}?updated=1`, 303);
  });

  const searchPage = (request: FastifyRequest, extra: Record<string, unknown>) => {
    const years = app.deps.config.searchHistoryYears;
    return {
      title: 'Search the registry',
      plate: '',
      purpose: '',
      result: null,
      error: null,
      person: { date_of_birth: '', type: 'passport', purpose: '' },
      personResult: null,
      personErrors: {},
      ownCompany: companyUser(request).companyName,
      period: `${years} year${years === 1 ? '' : 's'}`,
      documentTypes: DOCUMENT_TYPES,
      limits: LIMITS,
      ...extra,
    };
  };

  // The search page. A plate search writes a look-up entry in the person's name, so it is a form
  // post with the CSRF token (below), never a GET: a link cannot make one. A plate in the address
  // only fills the form in.
  app.get('/search', { config: { access: 'viewer' } }, async (request, reply) => {
    const query = request.query as FormBody;
    return renderPage(reply, 'search', searchPage(request, { plate: text(query, 'plate', 100), purpose: text(query, 'purpose', 300) }));
  });

  app.post('/search', { config: { access: 'viewer', companyBudget: true }, preHandler: app.csrfProtection }, async (request, reply) => {
    const form = request.body as FormBody;
    const plate = text(form, 'plate', 100);
    const purpose = text(form, 'purpose', 300);
    let result: Awaited<ReturnType<typeof claims.searchByPlate>> | null = null;
    let error: string | null = null;
    // The same schema as the API's search by plate.
    const checked = validateInput<PlateSearchBody>(plateSearchSchema, { vehicle_registration: plate });
    if (checked.errors) {
      error = Object.values(checked.errors)[0]![0]!;
    } else {
      try {
        result = await claims.searchByPlate(principalOf(companyUser(request)), plate, purpose);
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED') throw err;
        error = err.message;
      }
    }
    // The heading names the plate as it was searched: spaces, dots and dashes removed, upper case.
    const searched = result ? normalizePlate(plate) : plate;
    return renderPage(reply, 'search', searchPage(request, { plate, searched, purpose, result, error }), error ? 422 : 200);
  });

  // A person search is a form post: document numbers never travel in an address (nor its logs).
  app.post(
    '/search/person',
    { config: { access: 'viewer', companyBudget: true }, preHandler: app.csrfProtection },
    async (request, reply) => {
      const form = request.body as FormBody;
      const person = {
        date_of_birth: text(form, 'date_of_birth', 20),
        type: text(form, 'type', 40),
        purpose: text(form, 'purpose', 300),
      };
      const number = text(form, 'number', 300);
      try {
        const personResult = await app.deps.registry.searchByPerson(principalOf(companyUser(request)), {
          date_of_birth: person.date_of_birth,
          id_documents: [{ type: person.type, number }],
          purpose: person.purpose === '' ? undefined : person.purpose,
        });
        return await renderPage(reply, 'search', searchPage(request, { person, personResult }));
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'VALIDATION_FAILED' || !err.fields) throw err;
        return renderPage(reply, 'search', searchPage(request, { person, personErrors: err.fields }), 422);
      }
    },
  );
}
