import type { TokenScope } from '../domain/tokens/scopes';

/**
 * The one table of which scope each /api/v1 route needs (DECISIONS, "Token scopes"), keyed by
 * method and route pattern as Fastify registers it. `requireToken` (plugins/auth.ts) checks a
 * request against it, the OpenAPI document states it (each operation's `security` and its 403),
 * and test/api/token-scopes.test.ts drives a request per route and scope from it. A token route
 * missing here is refused to every token (and fails that test): adding a route means adding its
 * line here.
 */
export const ROUTE_SCOPES: Readonly<Record<string, TokenScope>> = {
  'POST /api/v1/claims': 'claims:write',
  'GET /api/v1/claims': 'claims:read',
  'GET /api/v1/claims/:id': 'claims:read',
  'PATCH /api/v1/claims/:id/status': 'claims:write',
  'GET /api/v1/claims/:id/lookups': 'claims:read',
  'POST /api/v1/claims/search-by-plate': 'search',
  'POST /api/v1/claims/search-by-person': 'search',
  'GET /api/v1/claims/:id/matches': 'search',
  'GET /api/v1/claims/:id/incident': 'search',
  'GET /api/v1/claims/:id/network': 'search',
  'POST /api/v1/lookups/batch': 'search',
  'GET /api/v1/lookups/batch/:id': 'search',
  'GET /api/v1/lookups/batch/:id/results.csv': 'search',
  'POST /api/v1/claims/import': 'imports',
  'GET /api/v1/imports': 'imports',
  'GET /api/v1/imports/:id': 'imports',
  'GET /api/v1/imports/:id/errors.csv': 'imports',
  'POST /api/v1/imports/:id/cancel': 'imports',
  'GET /api/v1/alerts': 'alerts:read',
  'GET /api/v1/lookups': 'logs:read',
  'GET /api/v1/audit-events': 'logs:read',
  'GET /api/v1/quality': 'logs:read',
};

/** The key of a route in ROUTE_SCOPES: HEAD is answered by its GET route. */
export const routeKey = (method: string, url: string): string => `${method === 'HEAD' ? 'GET' : method} ${url}`;

export const scopeOfRoute = (method: string, url: string): TokenScope | undefined => ROUTE_SCOPES[routeKey(method, url)];
