import type { CompanyRepository, UserRecord, UserRole } from './company-repository';
import { isUuid } from '../ids';
import { AppError, validationError } from '../errors';
import { generatePassword, hashPassword, verifyPassword } from '../passwords';

const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/u;
export const PASSWORD_MIN_LENGTH = 12;

export type CompanyServiceDeps = {
  store: { companies: CompanyRepository };
  /** log2 of scrypt's N for new password hashes (configuration's passwordHashCost). */
  passwordHashCost: number;
};

export function createCompanyService({ store, passwordHashCost }: CompanyServiceDeps) {
  // A fixed hash to compare against when the email is unknown, so response time does not reveal
  // which emails have accounts.
  let dummyHash: Promise<string> | undefined;

  async function createCompany(name: unknown) {
    if (typeof name !== 'string' || name.trim() === '') throw validationError({ name: ['The name field is required.'] });
    if (name.trim().length > 255) throw validationError({ name: ['The name field must not be greater than 255 characters.'] });
    const company = await store.companies.insert(name.trim());
    if (!company) throw new AppError('CONFLICT', `A company named '${name.trim()}' already exists.`);
    return company;
  }

  async function getCompany(id: string) {
    const company = isUuid(id) ? await store.companies.findById(id) : undefined;
    if (!company) throw new AppError('NOT_FOUND', 'Company not found.');
    return company;
  }

  /**
   * Creates a person who can sign in. Without a password one is generated and returned once.
   * companyId null with role operator creates an operator of the service.
   */
  async function createUser(input: { companyId: string | null; email: unknown; password?: unknown; role: UserRole }) {
    const { companyId, role } = input;
    if (typeof input.email !== 'string' || !EMAIL.test(input.email.trim()) || input.email.length > 254) {
      throw validationError({ email: ['The email field must be a valid email address.'] });
    }
    const password = input.password === undefined || input.password === null || input.password === '' ? generatePassword() : input.password;
    if (typeof password !== 'string' || password.length < PASSWORD_MIN_LENGTH || password.length > 200) {
      throw validationError({ password: [`The password must be between ${PASSWORD_MIN_LENGTH} and 200 characters.`] });
    }
    if (companyId !== null) await getCompany(companyId);
    const user = await store.companies.insertUser({
      companyId,
      email: input.email.trim().toLowerCase(),
      passwordHash: await hashPassword(password, passwordHashCost),
      role,
    });
    if (!user) throw new AppError('CONFLICT', 'A person with this email already exists.');
    return { user, password: input.password ? undefined : password };
  }

  /** The person for these credentials, or undefined; takes the same time for unknown emails. */
  async function signIn(email: string, password: string): Promise<UserRecord | undefined> {
    const found = await store.companies.findUserByEmail(email.trim());
    if (!found) {
      await verifyPassword(password, await (dummyHash ??= hashPassword(generatePassword(), passwordHashCost)));
      return undefined;
    }
    if (!(await verifyPassword(password, found.password_hash))) return undefined;
    const { password_hash: _p, ...user } = found;
    return user;
  }

  async function removeUser(id: string, companyId: string | null): Promise<void> {
    if (!isUuid(id) || !(await store.companies.deleteUser(id, companyId))) throw new AppError('NOT_FOUND', 'Person not found.');
  }

  return {
    createCompany,
    getCompany,
    listCompanies: () => store.companies.list(),
    createUser,
    signIn,
    findUser: (id: string) => (isUuid(id) ? store.companies.findUserById(id) : Promise.resolve(undefined)),
    listUsers: (companyId: string | null) => store.companies.listUsers(companyId),
    removeUser,
  };
}
export type CompanyService = ReturnType<typeof createCompanyService>;
