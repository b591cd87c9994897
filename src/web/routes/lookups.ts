import type { FastifyInstance } from 'fastify';

import { decodeCursor, encodeCursor } from '../../domain/paging';
import type { LookupLogFilter } from '../../domain/dashboard/dashboard-repository';
import { isIsoDate } from '../../domain/dates';
import { isUuid } from '../../domain/ids';
import type { Principal } from '../../domain/principal';
import { LOOKUP_KINDS, type Indicator, type LookupKind } from '../../domain/registry/registry';
import { companyUser } from '../context';
import { text, type FormBody } from '../forms';
import { networkGraph } from '../network-graph';
import { renderPage } from '../render';

const PAGE_SIZE = 25;
const WHO_LOOKED_SHOWN = 25;

/**
 * The registry sections of a claim's page: matches with indicators, the incident, the network, and
 * who looked at the claim. Matches, incident and network are three look-ups of the log.
 */
/**
 * The registry's panels of a claim page. With `lookups` the matches, incident and network, each a
 * look-up written in the viewer's name; without (a page opened from another site), none of them.
 */
export async function claimPageRegistry(app: FastifyInstance, principal: Principal, claimId: string, lookups = true) {
  const [lookedAt, alerts, panels] = await Promise.all([
    app.deps.registry.claimLookups(principal, claimId, { limit: WHO_LOOKED_SHOWN }),
    app.deps.alerts.list(principal, { claim_id: claimId, limit: WHO_LOOKED_SHOWN }),
    lookups ? lookupPanels(app, principal, claimId) : undefined,
  ]);
  return {
    lookupsShown: panels !== undefined,
    ...panels,
    lookedAt: lookedAt.data,
    moreLookedAt: lookedAt.meta.next_cursor !== null,
    searchYears: app.deps.config.searchHistoryYears,
    indicatorNames: INDICATOR_LABELS,
    kindNames: KIND_NAMES,
    claimAlerts: alerts.data,
  };
}

async function lookupPanels(app: FastifyInstance, principal: Principal, claimId: string) {
  const [found, incident, network] = await Promise.all([
    app.deps.registry.matches(principal, claimId),
    app.deps.registry.incident(principal, claimId),
    app.deps.registry.network(principal, claimId),
  ]);
  return {
    matches: found.matches,
    indicators: found.indicators,
    duplicate: found.indicators.find((i) => i.name === 'duplicate_claim') ?? null,
    incident,
    network,
    graph: networkGraph(network, claimId),
  };
}

const INDICATOR_LABELS: Record<Indicator['name'], string> = {
  repeat_claimant: 'Repeat claimant',
  plate_multi_company: 'Plate with several companies',
  early_claim: 'Early claim',
  duplicate_claim: 'Possible duplicate claim',
  network: 'Wide network',
};

const KINDS = LOOKUP_KINDS;
type Kind = LookupKind;
export const KIND_NAMES: Record<Kind, string> = {
  plate_search: 'Plate search',
  person_search: 'Person search',
  matches: 'Matches of a claim',
  incident: 'Incident of a claim',
  network: 'Network of a claim',
  alert: 'Alert received',
  identity_check: 'Identity mismatch told',
};

/** "Our look-ups": every cross-company read of the company, newest first, with who made it; filtered by kind, who and days. */
export async function lookupRoutes(app: FastifyInstance) {
  app.get('/lookups', { config: { access: 'viewer' } }, async (request, reply) => {
    const user = companyUser(request);
    const query = request.query as FormBody;
    const values = {
      kind: text(query, 'kind', 40),
      who: text(query, 'who', 60),
      from: text(query, 'from', 20),
      to: text(query, 'to', 20),
    };
    const errors: Record<string, string> = {};
    const day = (field: 'from' | 'to', label: string) => {
      if (values[field] === '') return undefined;
      if (isIsoDate(values[field])) return values[field];
      errors[field] = `The ${label} must be a date written YYYY-MM-DD, such as 2026-03-31.`;
      return undefined;
    };
    const [whoKind, whoId] = values.who.split(':');
    const filter: LookupLogFilter = {
      kind: (KINDS as readonly string[]).includes(values.kind) ? (values.kind as Kind) : undefined,
      userId: whoKind === 'user' && isUuid(whoId ?? '') ? whoId : undefined,
      tokenId: whoKind === 'token' && isUuid(whoId ?? '') ? whoId : undefined,
      from: day('from', 'first day'),
      to: day('to', 'last day'),
    };
    const after = decodeCursor(text(query, 'cursor', 200));
    const [page, actors] = await Promise.all([
      app.deps.dashboard.lookupLog(user.companyId, filter, after, PAGE_SIZE),
      app.deps.dashboard.lookupActors(user.companyId),
    ]);
    const params = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ''));
    const qs = (extra: Record<string, string> = {}) => {
      const s = new URLSearchParams({ ...params, ...extra }).toString();
      return s ? `/lookups?${s}` : '/lookups';
    };
    return renderPage(
      reply,
      'lookups',
      {
        title: 'Our look-ups',
        lookups: page.rows,
        actors,
        values,
        errors,
        kinds: KIND_NAMES,
        filtered: Object.keys(params).length > 0,
        isFirstPage: !after,
        firstUrl: qs(),
        nextUrl: page.next ? qs({ cursor: encodeCursor(page.next) }) : null,
      },
      Object.keys(errors).length ? 422 : 200,
    );
  });
}
