import type { FastifyInstance } from 'fastify';

import type { ClaimStatus } from '../../domain/claims/claim';
import { idempotentRoute } from '../plugins/idempotency';
import { commonErrors, errorBody } from '../schemas/common';
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

const notFound = { 404: { description: 'Unknown claim id, or not a UUID', ...errorBody } } as const;
const security = [{ bearerAuth: [] }];

export async function claimRoutes(app: FastifyInstance) {
  app.addHook('onRequest', app.requireToken);

  app.post('/claims', {
    ...idempotentRoute(app),
    schema: {
      operationId: 'submitClaim',
      summary: 'Submit a claim',
      description: 'Resolves the client from date of birth and identity documents (or creates one) and stores the claim under your company.',
      tags: ['claims'],
      security,
      body: submitClaimBody,
      response: {
        201: claimEnvelope,
        ...commonErrors,
        409: { description: 'A request with the same Idempotency-Key is still running', ...errorBody },
      },
    },
  }, async (request, reply) => {
    const data = await app.deps.claims.submit(request.principal, request.body, 'api');
    return reply.status(201).send({ data });
  });

  app.get('/claims', {
    schema: {
      operationId: 'listClaims',
      summary: "List your company's claims, newest first",
      tags: ['claims'],
      security,
      querystring: listClaimsQuery,
      response: { 200: claimPage, ...commonErrors },
    },
  }, async (request) => {
    const q = request.query as { status?: ClaimStatus; cursor?: string; limit: number };
    return app.deps.claims.list(request.principal, q);
  });

  app.get('/claims/:id', {
    schema: {
      operationId: 'getClaim',
      summary: 'Get one of your company\'s claims',
      tags: ['claims'],
      security,
      params: claimIdParams,
      response: { 200: claimEnvelope, ...commonErrors, ...notFound },
    },
  }, async (request) => {
    const { id } = request.params as { id: string };
    return { data: await app.deps.claims.get(request.principal, id) };
  });

  app.patch('/claims/:id/status', {
    schema: {
      operationId: 'updateClaimStatus',
      summary: 'Change the status of one of your company\'s claims',
      tags: ['claims'],
      security,
      params: claimIdParams,
      body: updateStatusBody,
      response: {
        200: claimEnvelope,
        ...commonErrors,
        ...notFound,
        403: { description: 'The claim belongs to another company', ...errorBody },
      },
    },
  }, async (request) => {
    const { id } = request.params as { id: string };
    return { data: await app.deps.claims.updateStatus(request.principal, id, (request.body as { status: unknown }).status) };
  });

  app.post('/claims/search-by-plate', {
    schema: {
      operationId: 'searchClaimsByPlate',
      summary: 'Search claims of all companies by vehicle registration',
      description: 'Only claims whose claim_date is within the history window (SEARCH_HISTORY_YEARS, default 3) are returned, newest first. Every search is recorded in the look-up log (GET /api/v1/lookups) with the optional purpose.',
      tags: ['claims'],
      security,
      body: searchByPlateBody,
      response: { 200: searchResult, ...commonErrors },
    },
  }, async (request) => {
    const body = request.body as { vehicle_registration: unknown; purpose?: unknown };
    return app.deps.claims.searchByPlate(request.principal, body.vehicle_registration, body.purpose);
  });
}
