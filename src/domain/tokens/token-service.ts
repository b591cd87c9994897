import { createHash, randomBytes } from 'node:crypto';

import type { Store } from '../../db/store';
import type { TokenRecord } from '../../db/token-repository';
import { isUuid } from '../ids';
import { AppError, validationError } from '../errors';
import type { Principal } from '../principal';

/** Recognisable by secret scanners: `csk_` and 43 base64url characters (32 random bytes). */
export const TOKEN_PREFIX = 'csk_';
const TOKEN_PATTERN = /^csk_[A-Za-z0-9_-]{43}$/u;

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export type PublicToken = Omit<TokenRecord, 'company_id'>;
const publicToken = ({ company_id: _c, ...t }: TokenRecord): PublicToken => t;

export function createTokenService({ store }: { store: Pick<Store, 'tokens' | 'companies'> }) {
  /** Creates a token; the value is returned here once and never again (only its hash is kept). */
  async function create(companyId: string, name: unknown, createdByUserId: string | null = null) {
    if (typeof name !== 'string' || name.trim() === '') throw validationError({ name: ['The name field is required.'] });
    if (name.trim().length > 100) throw validationError({ name: ['The name field must not be greater than 100 characters.'] });
    if (!isUuid(companyId) || !(await store.companies.findById(companyId))) {
      throw new AppError('NOT_FOUND', 'Company not found.');
    }
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record = await store.tokens.insert({
      companyId,
      name: name.trim(),
      hash: sha256(token),
      prefix: token.slice(0, TOKEN_PREFIX.length + 6),
      createdByUserId,
    });
    return { ...publicToken(record), token };
  }

  /** The principal of a bearer token, or undefined for a missing, malformed, unknown or revoked one. */
  async function authenticate(bearer: string | undefined): Promise<Principal | undefined> {
    if (!bearer || !TOKEN_PATTERN.test(bearer)) return undefined;
    const found = await store.tokens.authenticate(sha256(bearer));
    return found && { companyId: found.companyId, companyName: found.companyName, tokenId: found.tokenId, userId: null };
  }

  async function list(companyId: string): Promise<PublicToken[]> {
    return (await store.tokens.listByCompany(companyId)).map(publicToken);
  }

  /** Revokes at once. With companyId, a token of another company is "not found". */
  async function revoke(id: string, companyId: string | null): Promise<PublicToken> {
    const record = isUuid(id) ? await store.tokens.revoke(id, companyId) : undefined;
    if (!record) throw new AppError('NOT_FOUND', 'Token not found.');
    return publicToken(record);
  }

  return { create, authenticate, list, revoke };
}
export type TokenService = ReturnType<typeof createTokenService>;
