import type { FastifyInstance } from 'fastify';

import { monthBarChart } from '../chart';
import { companyUser } from '../context';
import { renderPage } from '../render';

export async function overviewRoutes(app: FastifyInstance) {
  app.get('/', { config: { access: 'viewer' } }, async (request, reply) => {
    const user = companyUser(request);
    const overview = await app.deps.dashboard.overview(user.companyId);
    const monthTotal = overview.months.reduce((sum, m) => sum + m.claims, 0);
    return renderPage(reply, 'overview', { title: 'Overview', overview, chart: monthBarChart(overview.months), monthTotal });
  });
}
