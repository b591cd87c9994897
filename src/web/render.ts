import type { FastifyReply } from 'fastify';

/** What the layout needs on every page, next to the page's own data. */
function pageContext(reply: FastifyReply) {
  const request = reply.request;
  // The sign-out button and every form carry the token; a page without a session (error pages
  // after sign-out) simply has none.
  const csrfToken = request.session && typeof request.session === 'object' && 'cookie' in request.session ? reply.generateCsrf() : '';
  return { user: request.webUser, csrfToken, path: request.url.split('?')[0] ?? '/', alertCount: request.alertCount };
}

/** Renders views/<template>.eta inside the layout and sends it; dashboard pages are never cached. */
export async function renderPage(reply: FastifyReply, template: string, data: Record<string, unknown>, status = 200) {
  const html = await reply.viewAsync(template, { ...pageContext(reply), ...data });
  return reply.status(status).type('text/html; charset=utf-8').send(html);
}
