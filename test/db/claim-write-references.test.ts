import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { NewClaimRow } from '../../src/domain/claims/claim-repository';
import type { IdentityPlan } from '../../src/domain/clients/identity';
import { RetryableConflict } from '../../src/domain/errors';
import { createClaimRepository } from '../../src/db/claim-repository';
import { pgErrorCode } from '../../src/db/db';
import { newId } from '../../src/domain/ids';
import { createTestContext, dbKind, type Company, type TestContext } from '../harness';

/**
 * The claims write (submissions and import chunks) refers to persons and companies. On PostgreSQL
 * the foreign keys check each row; embedded, the write checks them itself in one pass (its
 * database has one session): either way, a write that refers to one that does not exist writes
 * nothing and is a RetryableConflict, which makes the caller look the persons up again.
 */
let ctx: TestContext;
let company: Company;
beforeAll(async () => {
  ctx = await createTestContext();
  company = await ctx.newCompany('References');
});
afterAll(async () => {
  await ctx.close();
});

type Plan = Pick<IdentityPlan, 'newClients' | 'newDocuments'>;

function newPerson(): Plan['newClients'][number] {
  return { id: newId(), firstName: 'Ona', lastName: 'Petraitė', dateOfBirth: '1980-02-03' };
}

function claimOf(clientId: string, companyId = company.id): NewClaimRow {
  return {
    id: newId(),
    companyId,
    clientId,
    input: {
      client: { firstName: 'Ona', lastName: 'Petraitė', dateOfBirth: '1980-02-03', documents: [] },
      claim_date: '2026-01-05',
      claim_type: 'accident',
      amount: '120.50',
      currency: 'EUR',
      is_at_fault: false,
      vehicle_registration: 'REF-1',
      status: 'filed',
    },
    source: 'bulk_import',
    importId: null,
  };
}

const document = (clientId: string) => ({ type: 'passport' as const, hash: randomUUID().replaceAll('-', ''), clientId });

async function countOf(table: 'claims' | 'clients' | 'identity_documents', ids: string[], column = 'id'): Promise<number> {
  const rows = await ctx.deps.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = ANY($1::uuid[])`, [ids]);
  return rows[0]!.n;
}

describe(`the claims write (${dbKind()})`, () => {
  it('stores new persons, their documents and claims that refer to them and to a stored person', async () => {
    const stored = newPerson();
    await ctx.deps.repos.transaction((tx) =>
      tx.claims.insertResolved({ newClients: [stored], newDocuments: [document(stored.id)] }, [claimOf(stored.id)]),
    );
    const fresh = newPerson();
    const claims = [claimOf(fresh.id), claimOf(stored.id)];
    const { createdAt } = await ctx.deps.repos.transaction((tx) =>
      tx.claims.insertResolved({ newClients: [fresh], newDocuments: [document(fresh.id), document(stored.id)] }, claims),
    );
    expect(createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/u);
    expect(
      await countOf(
        'claims',
        claims.map((c) => c.id),
      ),
    ).toBe(2);
    expect(await countOf('identity_documents', [stored.id], 'client_id')).toBe(2);
  });

  it('refuses a claim whose person does not exist, writing nothing of the batch', async () => {
    const fresh = newPerson();
    const ghost = newId();
    const claims = [claimOf(fresh.id), claimOf(ghost)];
    const err = await ctx.deps.repos
      .transaction((tx) => tx.claims.insertResolved({ newClients: [fresh], newDocuments: [document(fresh.id)] }, claims))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableConflict);
    expect(await countOf('clients', [fresh.id])).toBe(0);
    expect(
      await countOf(
        'claims',
        claims.map((c) => c.id),
      ),
    ).toBe(0);
  });

  it('refuses a document whose person does not exist', async () => {
    const ghost = newId();
    const err = await ctx.deps.repos
      .transaction((tx) => tx.claims.insertResolved({ newClients: [], newDocuments: [document(ghost)] }, []))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableConflict);
    expect(await countOf('identity_documents', [ghost], 'client_id')).toBe(0);
  });

  it('refuses a claim of a company that does not exist', async () => {
    const fresh = newPerson();
    const claim = claimOf(fresh.id, newId());
    const err = await ctx.deps.repos
      .transaction((tx) => tx.claims.insertResolved({ newClients: [fresh], newDocuments: [] }, [claim]))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableConflict);
    expect(await countOf('claims', [claim.id])).toBe(0);
  });

  it('leaves the foreign keys checking every later statement of the same transaction', async () => {
    const fresh = newPerson();
    const later = await ctx.deps.db
      .transaction(async (q) => {
        const claims = createClaimRepository(q, { soleSession: ctx.deps.db.kind === 'pglite' });
        await claims.insertResolved({ newClients: [fresh], newDocuments: [] }, [claimOf(fresh.id)]);
        // A statement of its own, after the write: a claim of nobody.
        return q
          .query(
            `INSERT INTO claims (id, company_id, client_id, claim_date, vehicle_registration, source, status)
             VALUES ($1, $2, $3, '2026-01-05', 'REF-2', 'api', 'filed')`,
            [newId(), company.id, newId()],
          )
          .then(
            () => 'stored',
            (e: unknown) => pgErrorCode(e),
          );
      })
      .catch((e: unknown) => pgErrorCode(e));
    // 23503 from the statement itself, or 25P02 once the transaction was aborted by it.
    expect(later).toMatch(/^(23503|25P02)$/u);
    expect(await countOf('clients', [fresh.id])).toBe(0);
  });
});
