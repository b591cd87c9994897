import type { FastifyInstance } from 'fastify';

import type { Principal } from '../../domain/principal';
import { companyUser, principalOf, requireCompanyUser } from '../context';
import { text, type FormBody } from '../forms';
import { renderPage } from '../render';

const PAGE_SIZE = 25;
const WHO_LOOKED_SHOWN = 25;

/** The registry sections of a claim's page: matches with indicators, and who looked at the claim. */
export async function claimPageRegistry(app: FastifyInstance, principal: Principal, claimId: string) {
  const [found, lookedAt, alerts] = await Promise.all([
    app.deps.registry.matches(principal, claimId),
    app.deps.registry.claimLookups(principal, claimId, { limit: WHO_LOOKED_SHOWN }),
    app.deps.alerts.list(principal, { claim_id: claimId, limit: WHO_LOOKED_SHOWN }),
  ]);
  return {
    matches: found.matches,
    indicators: found.indicators,
    lookedAt: lookedAt.data,
    moreLookedAt: lookedAt.meta.next_cursor !== null,
    searchYears: app.deps.config.searchHistoryYears,
    claimAlerts: alerts.data,
  };
}

/** "Our look-ups": every cross-company read of the company, newest first. */
export async function lookupRoutes(app: FastifyInstance) {
  app.get('/lookups', { preHandler: requireCompanyUser }, async (request, reply) => {
    const cursor = text(request.query as FormBody, 'cursor', 200);
    const page = await app.deps.registry.listLookups(principalOf(companyUser(request)), { cursor: cursor || undefined, limit: PAGE_SIZE });
    return renderPage(reply, 'lookups', {
      title: 'Our look-ups',
      lookups: page.data,
      isFirstPage: !cursor,
      nextUrl: page.meta.next_cursor ? `/lookups?cursor=${encodeURIComponent(page.meta.next_cursor)}` : null,
    });
  });
}
