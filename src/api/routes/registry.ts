import type { FastifyInstance } from 'fastify';

import { claimIdParams } from '../schemas/claims';
import { bodyErrors, commonErrors, errorBody, pageQuery } from '../schemas/common';
import type { ApiTypeProvider } from '../schemas/type-provider';
import {
  claimLookupPage,
  incidentEnvelope,
  lookupPage,
  matchesQuery,
  matchesResult,
  networkEnvelope,
  searchByPersonBody,
  searchByPersonResult,
} from '../schemas/registry';

const notFound = { 404: { description: "Unknown claim id, not a UUID, or another company's claim", ...errorBody } } as const;
const security = [{ bearerAuth: [] }];

/**
 * Registry intelligence: matches and indicators, search by person, the look-up log. The handlers'
 * types come from the route schemas (the person search's is the domain's, src/domain/claims/claim-schema.ts).
 */
export async function registryRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ApiTypeProvider>();
  const { registry } = app.deps;

  app.get(
    '/claims/:id/matches',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'getClaimMatches',
        summary: 'Claims of all companies that share the plate or the person with one of your claims, and advisory indicators',
        description:
          'Claims within the search window (SEARCH_HISTORY_YEARS) with the same vehicle registration or the same client, ' +
          'this claim excluded, newest first, each with `matched_on`. `indicators` are advisory flags, never a rejection, ' +
          "counted over all companies on claim dates in the period ending on this claim's date: `repeat_claimant` (3 or more " +
          'claims of the person in 24 months), `plate_multi_company` (claims on the plate from 2 or more companies in 12 months), ' +
          '`early_claim` (dated within 30 days after the person was first recorded), `duplicate_claim` (another company has a claim of ' +
          'the same person on the same plate dated at most 1 day apart), `network` (more than 10 persons or more than 10 plates ' +
          'within two steps, as GET /claims/{id}/network counts them). Recorded in the look-up log.',
        tags: ['registry'],
        security,
        params: claimIdParams,
        querystring: matchesQuery,
        response: { 200: matchesResult, ...commonErrors, ...notFound },
      },
    },
    async (request) => ({ data: await registry.matches(request.principal, request.params.id, request.query.purpose) }),
  );

  app.get(
    '/claims/:id/incident',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'getClaimIncident',
        summary: "Other companies' claims of the same incident as one of your claims",
        description:
          'Two claims are one incident when they are of different companies, their claim dates are at most 1 day apart, and they ' +
          'share the plate or the person. Only claims that pair with this one count (no chains through a third claim), within the ' +
          'search window, as a plate search shows them, oldest claim date first; `companies` counts yours too. ' +
          'Recorded in the look-up log (kind `incident`).',
        tags: ['registry'],
        security,
        params: claimIdParams,
        querystring: matchesQuery,
        response: { 200: incidentEnvelope, ...commonErrors, ...notFound },
      },
    },
    async (request) => ({ data: await registry.incident(request.principal, request.params.id, request.query.purpose) }),
  );

  app.get(
    '/claims/:id/network',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'getClaimNetwork',
        summary: 'The persons and vehicles within two steps of one of your claims, and the claims joining them',
        description:
          "From the claim to its person and plate, then to the persons and plates of every claim (any company's, within the " +
          'search window) on that plate or of that person. Counts include the claim itself and your company and are never cut; ' +
          'at most 500 edges, the claim itself first, then newest first. Recorded in the look-up log (kind `network`, its ' +
          'result count the claims).',
        tags: ['registry'],
        security,
        params: claimIdParams,
        querystring: matchesQuery,
        response: { 200: networkEnvelope, ...commonErrors, ...notFound },
      },
    },
    async (request) => ({ data: await registry.network(request.principal, request.params.id, request.query.purpose) }),
  );

  app.post(
    '/claims/search-by-person',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'searchClaimsByPerson',
        summary: 'Search claims of all companies by person (date of birth and identity documents)',
        description:
          'The claims of all companies, within the search window, of the person the documents resolve to, when the date of birth ' +
          'matches; same shape and order as the plate search. An unknown document or another date of birth is a 200 with an ' +
          'empty list: the answer never tells whether a document number exists. Recorded in the look-up log (the person, never a document).',
        tags: ['registry'],
        security,
        body: searchByPersonBody,
        response: { 200: searchByPersonResult, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => registry.searchByPerson(request.principal, request.body),
  );

  app.get(
    '/lookups',
    {
      config: { access: { scope: 'logs:read' } },
      schema: {
        operationId: 'listLookups',
        summary: "Your company's look-ups (plate searches, person searches, matches, incidents, networks, alerts), newest first",
        tags: ['registry'],
        security,
        querystring: pageQuery,
        response: { 200: lookupPage, ...commonErrors },
      },
    },
    async (request) => registry.listLookups(request.principal, request.query),
  );

  app.get(
    '/claims/:id/lookups',
    {
      config: { access: { scope: 'claims:read' } },
      schema: {
        operationId: 'listClaimLookups',
        summary: "Which companies' look-ups returned one of your claims, and when",
        description: 'Newest first; company name, kind and time only (never who at that company).',
        tags: ['registry'],
        security,
        params: claimIdParams,
        querystring: pageQuery,
        response: { 200: claimLookupPage, ...commonErrors, ...notFound },
      },
    },
    async (request) => registry.claimLookups(request.principal, request.params.id, request.query),
  );
}
