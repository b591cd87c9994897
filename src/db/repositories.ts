import { createAlertRepository } from './alert-repository';
import { createAuditRepository } from './audit-repository';
import { createClaimRepository } from './claim-repository';
import { createCompanyRepository } from './company-repository';
import { createDashboardRepository } from './dashboard-repository';
import { RetryableConflict } from '../domain/errors';
import { pgErrorCode, type Db, type Queryable } from './db';
import { createIdentityCheckRepository } from './identity-check-repository';
import { createImportLedgerRepository } from './import-ledger-repository';
import { createIdempotencyRepository, createImportRepository } from './import-repository';
import { createSealedSecretsRepository } from './sealed-secrets-repository';
import { createSessionRepository } from './session-repository';
import { createPendingUploadRepository } from './upload-repository';
import { createSignInRepository } from './sign-in-repository';
import { createTokenRepository } from './token-repository';
import { createWebhookRepository } from './webhook-repository';

/**
 * `embedded`: q is of the embedded database (PGlite); `soleSession`: q is a transaction of it, a
 * database with one session (see ClaimRepositoryOptions).
 */
function repositorySet(q: Queryable, { embedded = false, soleSession = false } = {}) {
  return {
    claims: createClaimRepository(q, { soleSession }),
    tokens: createTokenRepository(q),
    companies: createCompanyRepository(q),
    imports: createImportRepository(q, { embedded }),
    ledger: createImportLedgerRepository(q),
    idempotency: createIdempotencyRepository(q),
    sessions: createSessionRepository(q),
    signIn: createSignInRepository(q),
    dashboard: createDashboardRepository(q),
    webhooks: createWebhookRepository(q),
    alerts: createAlertRepository(q),
    identityChecks: createIdentityCheckRepository(q),
    pendingUploads: createPendingUploadRepository(q),
    audit: createAuditRepository(q),
    sealedSecrets: createSealedSecretsRepository(q),
    meta: {
      async get(key: string): Promise<string | undefined> {
        return (await q.query<{ value: string }>('SELECT value FROM app_meta WHERE key = $1', [key]))[0]?.value;
      },
      /** Sets the value unless one is there; returns the value now stored. */
      async setOnce(key: string, value: string): Promise<string> {
        await q.query('INSERT INTO app_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, value]);
        return (await q.query<{ value: string }>('SELECT value FROM app_meta WHERE key = $1', [key]))[0]!.value;
      },
    },
  };
}
export type RepositorySet = ReturnType<typeof repositorySet>;

/** Runs fn inside a savepoint: on error the work of fn alone is rolled back, and the error rethrown. */
export type Savepoint = <T>(fn: () => Promise<T>) => Promise<T>;
let savepointSeq = 0;
function savepointOn(q: Queryable): Savepoint {
  return async (fn) => {
    const name = `sp_${++savepointSeq}`;
    await q.query(`SAVEPOINT ${name}`);
    try {
      const result = await fn();
      await q.query(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (err) {
      await q.query(`ROLLBACK TO SAVEPOINT ${name}`);
      throw err;
    }
  };
}

/**
 * The repositories, and a way to run several of their calls in one transaction. Domain services
 * receive this; they never see SQL.
 */
export function createRepositories(db: Db) {
  const embedded = db.kind === 'pglite';
  return {
    ...repositorySet(db, { embedded }),
    /** Runs fn in a transaction. Deadlocks and serialization failures surface as RetryableConflict. */
    async transaction<T>(fn: (tx: RepositorySet & { savepoint: Savepoint }) => Promise<T>): Promise<T> {
      try {
        return await db.transaction((q) =>
          fn(Object.assign(repositorySet(q, { embedded, soleSession: embedded }), { savepoint: savepointOn(q) })),
        );
      } catch (err) {
        const code = pgErrorCode(err);
        if (code === '40P01' || code === '40001') throw new RetryableConflict(`database conflict ${code}`);
        throw err;
      }
    },
    async ping(): Promise<void> {
      await db.query('SELECT 1');
    },
  };
}
export type Repositories = ReturnType<typeof createRepositories>;
/** What a transaction over the repositories sees: the repositories on its connection, and savepoints. */
export type RepositoriesTx = RepositorySet & { savepoint: Savepoint };
