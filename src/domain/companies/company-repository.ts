export type CompanyRecord = { id: string; name: string; created_at: string };
export type UserRole = 'operator' | 'admin' | 'member';
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
  rateLimits(): Promise<Map<string, number>>;
  /** Sets (or with null, removes) the company's own rate limit. */
  setRateLimit(companyId: string, perMinute: number | null): Promise<void>;
}
