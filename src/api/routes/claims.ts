import type { FastifyInstance } from 'fastify';

import { idempotentRoute } from '../plugins/idempotency';
import { bodyErrors, commonErrors, errorBody, idempotencyKeyHeader, locationHeader } from '../schemas/common';
import type { ApiTypeProvider } from '../schemas/type-provider';
import {
  claimEnvelope,
  claimIdParams,
  claimPage,
  listClaimsQuery,
  searchByPlateBody,
  searchResult,
  submitClaimBody,
  updateStatusBody,
} from '../schemas/claims';

const notFound = { 404: { description: 'Unknown claim id, or not a UUID (claim_not_found)', ...errorBody } } as const;
const security = [{ bearerAuth: [] }];

/**
 * The claims resource. Each input is declared once, in the domain (src/domain/claims/claim-schema.ts,
 * re-exported by ../schemas/claims.ts); the handlers' types come from those schemas (json-schema-to-ts).
 */
export async function claimRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ApiTypeProvider>();

  app.post(
    '/claims',
    {
      config: { access: { scope: 'claims:write' } },
      ...idempotentRoute(app),
      schema: {
        operationId: 'submitClaim',
        summary: 'Submit a claim',
        description:
          'Resolves the client from date of birth and identity documents (or creates one) and stores the claim under your company.',
        tags: ['claims'],
        security,
        headers: idempotencyKeyHeader,
        body: submitClaimBody,
        response: {
          201: {
            description: 'The claim, with `Location: /api/v1/claims/{id}`',
            ...claimEnvelope,
            headers: locationHeader,
          },
          ...commonErrors,
          ...bodyErrors,
          409: { description: 'A request with the same Idempotency-Key is still running (idempotency_in_progress)', ...errorBody },
        },
      },
    },
    async (request, reply) => {
      const data = await app.deps.claims.submit(request.principal, request.body, 'api');
      return reply.status(201).header('location', `/api/v1/claims/${data.id}`).send({ data });
    },
  );

  app.get(
    '/claims',
    {
      config: { access: { scope: 'claims:read' } },
      schema: {
        operationId: 'listClaims',
        summary: "List your company's claims, newest first",
        tags: ['claims'],
        security,
        querystring: listClaimsQuery,
        response: { 200: claimPage, ...commonErrors },
      },
    },
    async (request) => app.deps.claims.list(request.principal, request.query),
  );

  app.get(
    '/claims/:id',
    {
      config: { access: { scope: 'claims:read' } },
      schema: {
        operationId: 'getClaim',
        summary: "Get one of your company's claims",
        tags: ['claims'],
        security,
        params: claimIdParams,
        response: { 200: claimEnvelope, ...commonErrors, ...notFound },
      },
    },
    async (request) => ({ data: await app.deps.claims.get(request.principal, request.params.id) }),
  );

  app.patch(
    '/claims/:id/status',
    {
      config: { access: { scope: 'claims:write' } },
      schema: {
        operationId: 'updateClaimStatus',
        summary: "Change the status of one of your company's claims",
        tags: ['claims'],
        security,
        params: claimIdParams,
        body: updateStatusBody,
        response: {
          200: claimEnvelope,
          ...commonErrors,
          ...bodyErrors,
          ...notFound,
          403: { description: 'The claim belongs to another company (forbidden)', ...errorBody },
        },
      },
    },
    async (request) => ({ data: await app.deps.claims.updateStatus(request.principal, request.params.id, request.body.status) }),
  );

  app.post(
    '/claims/search-by-plate',
    {
      config: { access: { scope: 'search' } },
      schema: {
        operationId: 'searchClaimsByPlate',
        summary: 'Search claims of all companies by vehicle registration',
        description:
          'Only claims whose claim_date is within the history window (SEARCH_HISTORY_YEARS, default 3) are returned, newest first. Every search is recorded in the look-up log (GET /api/v1/lookups) with the optional purpose.',
        tags: ['claims'],
        security,
        body: searchByPlateBody,
        response: { 200: searchResult, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => app.deps.claims.searchByPlate(request.principal, request.body.vehicle_registration, request.body.purpose),
  );
}
