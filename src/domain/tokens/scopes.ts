/**
 * What an API token may do (DECISIONS, "Token scopes"). Each /api/v1 route needs one scope; the
 * table of route → scope is src/api/route-scopes.ts.
 */
export const TOKEN_SCOPES = ['claims:read', 'claims:write', 'search', 'imports', 'alerts:read', 'logs:read'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

export const isTokenScope = (v: unknown): v is TokenScope => typeof v === 'string' && (TOKEN_SCOPES as readonly string[]).includes(v);

/** What each scope lets a token do, for the dashboard's form and docs/api.md. */
export const SCOPE_DESCRIPTIONS: Record<TokenScope, string> = {
  'claims:read': 'Read your own claims: list, get, a claim’s look-ups',
  'claims:write': 'Submit claims and change their status (includes claims:read)',
  search: 'Plate and person searches, matches, batch look-ups',
  imports: 'Upload, list, get and cancel imports; errors.csv',
  'alerts:read': 'Read alerts',
  'logs:read': 'Read the look-up log, the audit events and the quality report',
};

/** Scopes a scope implies besides itself. */
const IMPLIES: Partial<Record<TokenScope, TokenScope[]>> = { 'claims:write': ['claims:read'] };

/** True when a token with `granted` may use a route that needs `needed`. */
export function grants(granted: readonly string[], needed: TokenScope): boolean {
  return granted.some((g) => g === needed || (IMPLIES[g as TokenScope]?.includes(needed) ?? false));
}
