import { CLI_ACTOR, NO_ORIGIN, type AuditAction, type AuditActor, type AuditOrigin, type AuditRepository } from '../audit/audit';
import { isCompanyRole, type CompanyLimits, type CompanyRepository, type UserRecord, type UserRole } from './company-repository';
import { isUuid } from '../ids';
import { AppError, validationError } from '../errors';
import { generatePassword, hashPassword, isPasswordHash, verifyPassword } from '../passwords';

const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/u;
export const PASSWORD_MIN_LENGTH = 12;

/** Who acts and from where, for the audit event; default: the command line. */
export type ActBy = { actor?: AuditActor; origin?: AuditOrigin };

type CompanyTx = { companies: CompanyRepository; audit: Pick<AuditRepository, 'record'> };

export type CompanyServiceDeps = {
  repos: { companies: CompanyRepository; transaction<T>(fn: (tx: CompanyTx) => Promise<T>): Promise<T> };
  /** Called once tokens were revoked or a company suspended or resumed here: this process forgets its cached tokens. */
  onTokensChanged?: () => void;
  /** log2 of scrypt's N for new password hashes (configuration's passwordHashCost). */
  passwordHashCost: number;
};

export function createCompanyService({ repos, passwordHashCost, onTokensChanged = () => {} }: CompanyServiceDeps) {
  /** The audit event of an act, in the act's transaction. */
  const record = (
    tx: CompanyTx,
    companyId: string | null,
    action: AuditAction,
    target: { type: string; id: string | null; name: string | null },
    by: ActBy,
  ) => {
    const origin = by.origin ?? NO_ORIGIN;
    return tx.audit.record({ companyId, action, actor: by.actor ?? CLI_ACTOR, target, ip: origin.ip, requestId: origin.requestId });
  };

  // A fixed hash to compare against when the email is unknown, so response time does not reveal
  // which emails have accounts.
  let dummyHash: Promise<string> | undefined;

  async function createCompany(name: unknown, by: ActBy = {}) {
    if (typeof name !== 'string' || name.trim() === '') throw validationError({ name: ['The name field is required.'] });
    if (name.trim().length > 255) throw validationError({ name: ['The name field must not be greater than 255 characters.'] });
    const company = await repos.transaction(async (tx) => {
      const c = await tx.companies.insert(name.trim());
      if (c) await record(tx, c.id, 'company.created', { type: 'company', id: c.id, name: c.name }, by);
      return c;
    });
    if (!company) throw new AppError('CONFLICT', `A company named '${name.trim()}' already exists.`);
    return company;
  }

  /**
   * Suspends or resumes a company (the operator): its tokens are refused with company_suspended
   * in every process within a second, its people are signed out and cannot sign in; its claims stay.
   */
  async function setSuspended(id: string, suspended: boolean, by: ActBy = {}) {
    const company = isUuid(id)
      ? await repos.transaction(async (tx) => {
          const c = await tx.companies.setSuspended(id, suspended);
          if (c)
            await record(tx, c.id, suspended ? 'company.suspended' : 'company.resumed', { type: 'company', id: c.id, name: c.name }, by);
          return c;
        })
      : undefined;
    onTokensChanged();
    if (!company) throw new AppError('NOT_FOUND', 'Company not found.');
    return company;
  }

  async function getCompany(id: string) {
    const company = isUuid(id) ? await repos.companies.findById(id) : undefined;
    if (!company) throw new AppError('NOT_FOUND', 'Company not found.');
    return company;
  }

  /**
   * Creates a person who can sign in. Without a password one is generated and returned once.
   * companyId null with role operator creates an operator of the service.
   */
  async function createUser(input: { companyId: string | null; email: unknown; password?: unknown; role: UserRole; by?: ActBy }) {
    const { companyId, role } = input;
    if (companyId !== null && !isCompanyRole(role)) throw validationError({ role: ['Choose viewer, member or admin.'] });
    if (typeof input.email !== 'string' || !EMAIL.test(input.email.trim()) || input.email.length > 254) {
      throw validationError({ email: ['The email field must be a valid email address.'] });
    }
    const password = input.password === undefined || input.password === null || input.password === '' ? generatePassword() : input.password;
    if (typeof password !== 'string' || password.length < PASSWORD_MIN_LENGTH || password.length > 200) {
      throw validationError({ password: [`The password must be between ${PASSWORD_MIN_LENGTH} and 200 characters.`] });
    }
    if (companyId !== null) await getCompany(companyId);
    const passwordHash = await hashPassword(password, passwordHashCost);
    const email = input.email.trim().toLowerCase();
    const user = await repos.transaction(async (tx) => {
      const u = await tx.companies.insertUser({ companyId, email, passwordHash, role });
      if (u) await record(tx, companyId, 'person.created', { type: 'person', id: u.id, name: u.email }, input.by ?? {});
      return u;
    });
    if (!user) throw new AppError('CONFLICT', 'A person with this email already exists.');
    return { user, password: input.password ? undefined : password };
  }

  /**
   * The person for these credentials, or undefined. The same scrypt work whatever the account's
   * state: an unknown email, or a person with no usable password (a reset under way, or one who
   * signs in by SSO only), is checked against a hash made for nobody.
   */
  async function signIn(email: string, password: string): Promise<UserRecord | undefined> {
    const found = await repos.companies.findUserByEmail(email.trim());
    const usable = found !== undefined && isPasswordHash(found.password_hash);
    const stored = usable ? found.password_hash : await (dummyHash ??= hashPassword(generatePassword(), passwordHashCost));
    const matches = await verifyPassword(password.slice(0, 200), stored);
    if (!usable || !matches) return undefined;
    const { password_hash: _p, ...user } = found;
    return user;
  }

  /**
   * Removes a person, with the audit event, in one transaction. A company person's live tokens
   * are revoked unless `keepTokens`; kept tokens and their webhooks pass to `heirId` (the admin
   * removing them). The tokens revoked.
   */
  async function removeUser(
    id: string,
    companyId: string | null,
    opts: ActBy & { keepTokens?: boolean; heirId?: string | null } = {},
  ): Promise<{ revokedTokens: { id: string; name: string }[] }> {
    if (!isUuid(id)) throw new AppError('NOT_FOUND', 'Person not found.');
    const revoked = await repos.transaction(async (tx) => {
      const person = await tx.companies.findUserById(id);
      if (!person || (companyId !== null && person.company_id !== companyId)) return undefined;
      const gone =
        person.company_id === null ? [] : await tx.companies.handOver(id, person.company_id, opts.heirId ?? null, opts.keepTokens ?? false);
      if (!(await tx.companies.deleteUser(id, companyId))) return undefined;
      await record(tx, person.company_id, 'person.removed', { type: 'person', id: person.id, name: person.email }, opts);
      // Each token revoked with the person is an act of its own (one statement for all of them).
      const origin = opts.origin ?? NO_ORIGIN;
      await tx.audit.record(
        gone.map((t) => ({
          companyId: person.company_id,
          action: 'token.revoked' as const,
          actor: opts.actor ?? CLI_ACTOR,
          target: { type: 'token', id: t.id, name: t.name },
          ip: origin.ip,
          requestId: origin.requestId,
        })),
      );
      return gone;
    });
    if (!revoked) throw new AppError('NOT_FOUND', 'Person not found.');
    if (revoked.length > 0) onTokensChanged();
    return { revokedTokens: revoked };
  }

  /** Changes a company person's role (an admin, not their own), with the audit event. */
  async function changeRole(id: string, companyId: string, role: unknown, by: ActBy & { selfId?: string } = {}) {
    if (!isCompanyRole(role)) throw validationError({ role: ['Choose viewer, member or admin.'] });
    if (by.selfId === id) throw new AppError('FORBIDDEN', 'You cannot change your own role. Ask another admin of your company.');
    const changed = isUuid(id)
      ? await repos.transaction(async (tx) => {
          const u = await tx.companies.setRole(id, companyId, role);
          if (u && u.previous_role !== role)
            await record(tx, companyId, 'person.role_changed', { type: 'person', id: u.id, name: u.email }, by);
          return u;
        })
      : undefined;
    if (!changed) throw new AppError('NOT_FOUND', 'Person not found.');
    return changed;
  }

  /** A company person's tokens and webhooks, listed before they are removed. */
  async function madeBy(id: string, companyId: string) {
    return isUuid(id) ? repos.companies.madeBy(id, companyId) : { tokens: [], webhooks: [] };
  }

  /**
   * The operator sets a company's own limits (`admin company:limits`): per token, and for all its
   * tokens together; null is the setting's default. The change and its event commit together.
   */
  async function setLimits(companyId: string, limits: Partial<CompanyLimits>, by: ActBy = {}): Promise<CompanyLimits> {
    const say = (n: number | null | undefined) => (n === null ? 'default' : n === 0 ? 'none' : `${n} a minute`);
    const parts = [
      ...(limits.perToken !== undefined ? [`per token: ${say(limits.perToken)}`] : []),
      ...(limits.perCompany !== undefined ? [`per company: ${say(limits.perCompany)}`] : []),
    ];
    return repos.transaction(async (tx) => {
      const set = await tx.companies.setRateLimits(companyId, limits);
      await record(
        tx,
        companyId,
        'company.settings_changed',
        { type: 'company', id: companyId, name: `rate limits: ${parts.join(', ')}` },
        by,
      );
      return set;
    });
  }

  return {
    createCompany,
    getCompany,
    /** Every company's own limits (few rows): the rate limiter reads them every few seconds. */
    rateLimits: () => repos.companies.rateLimits(),
    setLimits,
    listCompanies: () => repos.companies.list(),
    createUser,
    signIn,
    findUser: (id: string) => (isUuid(id) ? repos.companies.findUserById(id) : Promise.resolve(undefined)),
    listUsers: (companyId: string | null) => repos.companies.listUsers(companyId),
    removeUser,
    changeRole,
    madeBy,
    suspend: (id: string, by: ActBy = {}) => setSuspended(id, true, by),
    resume: (id: string, by: ActBy = {}) => setSuspended(id, false, by),
  };
}
export type CompanyService = ReturnType<typeof createCompanyService>;
