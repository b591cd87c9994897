import type { FastifyInstance } from 'fastify';

import { commonErrors } from '../schemas/common';
import { qualityEnvelope, qualityQuery } from '../schemas/quality';

/** Data quality: how complete and how timely the caller's company's own submissions are. */
export async function qualityRoutes(app: FastifyInstance) {
  app.get(
    '/quality',
    {
      config: { access: { scope: 'logs:read' } },
      schema: {
        operationId: 'getQuality',
        summary: "Your company's data-quality figures over the last `days` days (1-365, default 90)",
        description:
          'Over the claims registered in the period: how many and by source, the shares missing claim_type, amount and ' +
          'is_at_fault, and the filing delay (whole days from claim date to registration, median and 90th percentile); over the ' +
          "period's completed imports: rows rejected and the rejection rate. Rates and shares are fractions from 0 to 1 (4 decimals).",
        tags: ['registry'],
        security: [{ bearerAuth: [] }],
        querystring: qualityQuery,
        response: { 200: qualityEnvelope, ...commonErrors },
      },
    },
    async (request) => ({ data: await app.deps.quality.report(request.principal, (request.query as { days?: number }).days) }),
  );
}
