import { randomUUID } from 'node:crypto';

import type { NewClaimRow, StoredClaim } from '../../db/claim-repository';
import type { Store } from '../../db/store';
import { minusYears } from '../dates';
import { decodeCursor, encodeCursor, invalidCursorMessage } from '../cursor';
import { isUuid } from '../ids';
import { AppError, RetryableConflict, validationError, type FieldErrors } from '../errors';
import type { DocumentHasher, IdentityOutcome } from '../clients/identity';
import { planIdentities } from '../clients/identity';
import type { Principal } from '../principal';
import type { Claim, ClaimInput, ClaimSource, ClaimStatus } from './claim';
import { CLAIM_STATUSES, messages, normalizePlate, validateClaimInput } from './claim';

export type ClaimServiceDeps = {
  store: Pick<Store, 'claims' | 'transaction'>;
  hashDocument: DocumentHasher;
  /** Today's date in the service's time zone. */
  today: () => string;
  searchHistoryYears: number;
};

const notFound = () => new AppError('NOT_FOUND', 'Claim not found.');

export type BatchRow = { input: ClaimInput };
export type BatchResult = { outcomes: ({ ok: true; claimId: string } | { ok: false; errors: FieldErrors })[] };

export function toPublic({ companyId: _c, cursor: _k, ...claim }: StoredClaim): Claim {
  return claim;
}

export function createClaimService({ store, hashDocument, today, searchHistoryYears }: ClaimServiceDeps) {
  /** The first day of the search window, worked out once per day. */
  let window = { today: '', from: '' };
  const windowStart = (day: string): string => {
    if (window.today !== day) window = { today: day, from: minusYears(day, searchHistoryYears) };
    return window.from;
  };
  const refsOf = (input: ClaimInput) => input.client.documents.map((d) => ({ type: d.type, hash: hashDocument(d.number) }));

  /**
   * Resolves identities and stores the claims of a batch inside the caller's transaction, with a
   * fixed number of statements whatever the batch size: look the documents up, plan, write.
   * Rows are resolved in order; a row that fails identity resolution is reported and not written.
   * Concurrency is optimistic: the unique key on documents decides who created a person first,
   * and a batch that lost such a race throws RetryableConflict having written nothing (run it
   * again: it will then find the person). 50 parallel submissions of one new person thus create
   * exactly one client. Inside a longer transaction, run it in a savepoint.
   */
  async function storeBatch(
    tx: Pick<Store, 'claims'>,
    principal: Pick<Principal, 'companyId'>,
    inputs: ClaimInput[],
    source: ClaimSource,
    importId: string | null,
  ): Promise<{ outcomes: IdentityOutcome[]; claims: (NewClaimRow | null)[]; createdAt: string | null }> {
    const rows = inputs.map((input) => ({ ...input.client, documents: refsOf(input) }));
    const known = await tx.claims.findDocuments(rows.flatMap((r) => r.documents));
    const plan = planIdentities(rows, known);
    const claims = plan.outcomes.map((o, i): NewClaimRow | null =>
      o.ok ? { ...inputs[i]!, id: randomUUID(), clientId: o.client.id, companyId: principal.companyId, source, importId } : null,
    );
    const { createdAt } = await tx.claims.insertResolved(plan, claims.filter((c): c is NewClaimRow => c !== null));
    return { outcomes: plan.outcomes, claims, createdAt };
  }

  async function submit(principal: Principal, body: unknown, source: ClaimSource = 'api'): Promise<Claim> {
    const { value, errors } = validateClaimInput(body, today());
    if (!value) throw validationError(errors);
    // One look-up and one (atomic) write statement: no explicit transaction needed.
    const { outcomes, claims, createdAt } = await withRetries(() => storeBatch(store, principal, [value], source, null));
    const outcome = outcomes[0]!;
    if (!outcome.ok) throw validationError({ [outcome.field]: [outcome.message] });
    const row = claims[0]!;
    const c = outcome.client;
    return {
      id: row.id,
      client: {
        id: c.id,
        first_name: c.firstName,
        last_name: c.lastName,
        date_of_birth: c.dateOfBirth,
        id_documents: c.documentTypes.map((type) => ({ type })),
      },
      claim_date: row.claimDate,
      claim_type: row.claimType,
      amount: row.amount,
      currency: 'EUR',
      is_at_fault: row.isAtFault,
      vehicle_registration: row.vehicleRegistration,
      source,
      status: row.status,
      company_name: principal.companyName,
      created_at: createdAt!,
    };
  }

  /** A claim of the caller's company; another company's claim is "not found" here. */
  async function get(principal: Principal, id: string): Promise<Claim> {
    if (!isUuid(id)) throw notFound();
    const claim = await store.claims.findById(id);
    if (!claim || claim.companyId !== principal.companyId) throw notFound();
    return toPublic(claim);
  }

  async function list(principal: Principal, opts: { status?: ClaimStatus | undefined; cursor?: string | undefined; limit: number }) {
    let after: { ts: string; id: string } | undefined;
    if (opts.cursor) {
      after = decodeCursor(opts.cursor);
      if (!after) throw validationError({ cursor: [invalidCursorMessage] });
    }
    const rows = await store.claims.listByCompany(principal.companyId, { status: opts.status, after, limit: opts.limit + 1 });
    const page = rows.slice(0, opts.limit);
    const next = rows.length > opts.limit ? encodeCursor(page.at(-1)!.cursor) : null;
    return { data: page.map(toPublic), meta: { next_cursor: next } };
  }

  async function updateStatus(principal: Principal, id: string, status: unknown): Promise<Claim> {
    if (!isUuid(id)) throw notFound();
    if (typeof status !== 'string' || !(CLAIM_STATUSES as readonly string[]).includes(status)) {
      throw validationError({
        status: [status === undefined || status === null ? messages.required('status') : messages.oneOf('status', CLAIM_STATUSES)],
      });
    }
    const result = await store.transaction(async (tx) => {
      const r = await tx.claims.updateStatus(id, principal.companyId, status as ClaimStatus, {
        tokenId: principal.tokenId,
        userId: principal.userId,
      });
      return r && r.companyId === principal.companyId ? tx.claims.findById(id) : r;
    });
    if (!result) throw notFound();
    if (!('id' in result)) throw new AppError('FORBIDDEN', 'This action is unauthorized.');
    return toPublic(result);
  }

  async function searchByPlate(plate: unknown) {
    const errors: FieldErrors = {};
    const field = 'vehicle_registration';
    if (typeof plate !== 'string' || plate.trim() === '') errors[field] = [messages.required(field)];
    else if (plate.length > 20) errors[field] = [messages.maxLength(field, 20)];
    else if (!/^[\p{L}\p{N}]+$/u.test(normalizePlate(plate))) errors[field] = [messages.plateCharacters];
    if (Object.keys(errors).length > 0) throw validationError(errors);
    const from = windowStart(today());
    const claims = await store.claims.searchByPlate(normalizePlate(plate as string), from);
    return {
      data: claims.map(toPublic),
      meta: { total_claims: claims.length, query_period: `${searchHistoryYears} year${searchHistoryYears === 1 ? '' : 's'}` },
    };
  }

  return { submit, get, list, updateStatus, searchByPlate, storeBatch };
}
export type ClaimService = ReturnType<typeof createClaimService>;



/** Runs fn again when it lost a race; a handful of attempts always suffices in practice. */
export async function withRetries<T>(fn: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof RetryableConflict) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}
