import { createClaimRepository } from './claim-repository';
import { createCompanyRepository } from './company-repository';
import type { Db, Queryable } from './db';
import { createTokenRepository } from './token-repository';

function repositories(q: Queryable) {
  return {
    claims: createClaimRepository(q),
    tokens: createTokenRepository(q),
    companies: createCompanyRepository(q),
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
export type Repositories = ReturnType<typeof repositories>;

/**
 * The repositories, and a way to run several of their calls in one transaction. Domain services
 * receive this; they never see SQL.
 */
export function createStore(db: Db) {
  return {
    ...repositories(db),
    transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
      return db.transaction((q) => fn(repositories(q)));
    },
    async ping(): Promise<void> {
      await db.query('SELECT 1');
    },
  };
}
export type Store = ReturnType<typeof createStore>;
