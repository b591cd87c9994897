/** Who is acting: a company, through an API token or a signed-in person. */
export type Principal = {
  companyId: string;
  companyName: string;
  tokenId: string | null;
  userId: string | null;
  /** An API token's name (its audit events' actor), when the principal is a token. */
  tokenName?: string;
  /** An API token's scopes (src/domain/tokens/scopes.ts); absent for a signed-in person. */
  scopes?: readonly string[];
};
