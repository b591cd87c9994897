export type CompanyRecord = { id: string; name: string; created_at: string; suspended_at: string | null };
export type UserRole = 'operator' | 'admin' | 'member' | 'viewer';
/** The roles of a company's people, least to most. */
export const COMPANY_ROLES = ['viewer', 'member', 'admin'] as const;
/** A company's own request limits per minute (null: the setting's default; 0: none): each token's, and all its tokens' together. */
export type CompanyLimits = { perToken: number | null; perCompany: number | null };

export type CompanyRole = (typeof COMPANY_ROLES)[number];
export const isCompanyRole = (v: unknown): v is CompanyRole => typeof v === 'string' && (COMPANY_ROLES as readonly string[]).includes(v);
export type UserRecord = { id: string; company_id: string | null; email: string; role: UserRole; created_at: string };

/**
 * Companies and the people who sign in to the dashboard; src/db implements it. A company's
 * people are read and removed with the company's id; `null` is the operator's side (people of
 * no company, or any company).
 */
export interface CompanyRepository {
  insert(name: string): Promise<CompanyRecord | undefined>;
  list(): Promise<CompanyRecord[]>;
  findById(id: string): Promise<CompanyRecord | undefined>;
  insertUser(u: { companyId: string | null; email: string; passwordHash: string; role: UserRole }): Promise<UserRecord | undefined>;
  findUserByEmail(email: string): Promise<(UserRecord & { password_hash: string }) | undefined>;
  findUserById(id: string): Promise<UserRecord | undefined>;
  listUsers(companyId: string | null): Promise<UserRecord[]>;
  deleteUser(id: string, companyId: string | null): Promise<boolean>;
  /** The companies' own API rate limits per token and minute (0: none); a company absent has the default. */
  rateLimits(): Promise<Map<string, CompanyLimits>>;
  /** Sets the company's own limits: a limit left out keeps its value, null is the setting's default. */
  setRateLimits(companyId: string, limits: Partial<CompanyLimits>): Promise<CompanyLimits>;
  /** Changes a company person's role; the person with the role they had, or undefined. */
  setRole(id: string, companyId: string, role: CompanyRole): Promise<(UserRecord & { previous_role: UserRole }) | undefined>;
  /**
   * Suspends (or resumes) a company: moves the token revocation version in the same statement
   * (every process drops its cached tokens) and, on suspension, ends its people's sessions.
   * The company as it now is, or undefined when none has this id.
   */
  setSuspended(id: string, suspended: boolean): Promise<CompanyRecord | undefined>;
  /** The live tokens and the webhooks a person created (shown before removing them). */
  madeBy(userId: string, companyId: string): Promise<{ tokens: { id: string; name: string }[]; webhooks: { id: string; url: string }[] }>;
  /**
   * Before removing a person: their live tokens are revoked (moving the revocation version), or
   * kept and handed to `heirId`; their webhooks are handed to `heirId`. The tokens revoked.
   */
  handOver(userId: string, companyId: string, heirId: string | null, keepTokens: boolean): Promise<{ id: string; name: string }[]>;
}
