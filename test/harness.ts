import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';

import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { expect } from 'vitest';

import { buildApp } from '../src/app';
import { loadConfig, type Config } from '../src/config';
import { openDb } from '../src/db/db';
import { todayIn } from '../src/domain/dates';
import type { Principal } from '../src/domain/principal';
import { createDeps, systemClock, type ChunkHooks, type Deps } from '../src/deps';
import { openDatabase, prepareDatabase, startBackground } from '../src/startup';
import { createObjectStore, type ObjectStore } from '../src/storage/object-store';
import type { PaceClock } from '../src/upload-guard';

import { checkResponsesAgainstOpenApi } from './openapi-conformance';

export const TEST_HASH_KEY = 'test-document-hash-key-0123456789abcdef';
/** scrypt N = 2^10 in tests: fast; production's floor is 2^15 (PASSWORD_HASH_COST). */
export const TEST_PASSWORD_HASH_COST = 10;
/** The abuse limits of every test context unless a test sets its own: on, and out of reach. */
export const TEST_LIMITS = {
  RATE_LIMIT_PER_MINUTE: '1000000',
  COMPANY_RATE_LIMIT_PER_MINUTE: '1000000',
  SESSION_RATE_LIMIT_PER_MINUTE: '1000000',
  AUTH_FAILURES_PER_MINUTE: '1000000',
  IDENTITY_MISMATCHES_PER_HOUR: '1000000',
} as const;
export const dbKind = (): 'pglite' | 'postgres' => (process.env.TEST_DB_KIND === 'postgres' ? 'postgres' : 'pglite');

export type TestContext = {
  app: FastifyInstance;
  deps: Deps;
  config: Config;
  /** A new company with a live token, so every test works on its own data. */
  newCompany(name?: string): Promise<{ id: string; name: string; token: string; auth: { authorization: string } }>;
  close(): Promise<void>;
};

/**
 * A real app on a real database: in-memory PGlite, or a fresh schema in the PostgreSQL of
 * TEST_DATABASE_URL that is dropped at close. `env` overrides configuration variables.
 */
export async function createTestContext(
  env: Record<string, string> = {},
  options: {
    logger?: Logger;
    /** The service's "today" (YYYY-MM-DD); default: the real date in APP_TIMEZONE. */
    today?: () => string;
    /** The service's clock (ms since the epoch): hours and days (budgets, retention), token expiry, and sign-in (sessions, codes, reset links, throttling); default: the real time. */
    now?: () => number;
    /** Called right after each import chunk commits (0-based), before its progress is reported. */
    afterChunkCommit?: ChunkHooks['afterChunkCommit'];
    /** Awaited in each import chunk's transaction before its write (0-based chunk number). */
    beforeChunkWrite?: ChunkHooks['beforeChunkWrite'];
    /** The object store as the service uses it, given the configured one (a fault at this seam: a full disk). */
    storage?: (configured: ObjectStore) => ObjectStore;
    /** log2 of scrypt's N for passwords; default TEST_PASSWORD_HASH_COST (a timing test wants scrypt to dominate). */
    passwordHashCost?: number;
    /**
     * The service restarted on another context's database (with this call's `env`): prepared
     * (checked) again at its start, as a process is. Closing this context leaves the database to
     * the other one, which must be closed after it.
     */
    restartOf?: TestContext;
    /** V8's young collection as the server is given it (src/upload-guard.ts); default: none, as in any process but `npm start`. */
    youngCollection?: () => void;
    /** The time the uploads' pace is kept by (src/upload-guard.ts); default: the real one. */
    uploadPaceClock?: PaceClock;
  } = {},
): Promise<TestContext> {
  const kind = dbKind();
  const url = process.env.TEST_DATABASE_URL;
  if (kind === 'postgres' && !url) throw new Error('TEST_DB_KIND=postgres needs TEST_DATABASE_URL');
  const shared = options.restartOf;
  const schema = shared
    ? (shared.config.dbSearchPath ?? `test_${randomBytes(6).toString('hex')}`)
    : `test_${randomBytes(6).toString('hex')}`;
  // Behind PgBouncer in transaction mode (TEST_DATABASE_POOLER=transaction, .ci/run) no session
  // keeps a search_path: each context gets a database of its own instead of a schema.
  const pooler = process.env.TEST_DATABASE_POOLER === 'transaction' ? ('transaction' as const) : undefined;
  const adminDb = () => openDb({ kind: 'postgres', url: url!, poolSize: 1, ...(pooler ? { pooler } : {}) });
  if (kind === 'postgres' && !shared) {
    const admin = await adminDb();
    await admin.exec(pooler ? `CREATE DATABASE ${schema}` : `CREATE SCHEMA ${schema}`);
    await admin.close();
  }
  const database = pooler
    ? { DATABASE_URL: Object.assign(new URL(url!), { pathname: `/${schema}` }).toString(), DATABASE_POOLER: pooler }
    : { DATABASE_URL: url!, DB_SEARCH_PATH: schema };
  const loaded = loadConfig({
    DOCUMENT_HASH_KEY: TEST_HASH_KEY,
    SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
    ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef01234',
    LOG_LEVEL: 'silent',
    DATA_DIR: `/tmp/claims-test-${schema}`,
    ...(kind === 'postgres' ? database : {}),
    // The abuse limits stay on, set so high that tests about other things never reach them; the
    // tests of the limits set their own.
    ...TEST_LIMITS,
    // The tests' OpenID provider (test/support/oidc-provider.ts) listens on a loopback address over http.
    OIDC_ALLOW_PRIVATE: 'true',
    ...env,
  });
  // Below the configuration's floor (a variable cannot set it), so that sign-ins do not spend the suite's time in scrypt.
  const config: Config = { ...loaded, passwordHashCost: options.passwordHashCost ?? TEST_PASSWORD_HASH_COST };
  const logger = options.logger ?? pino({ level: 'silent' });
  // As the main files do, but the embedded database in memory. A restart shares the first
  // context's database (its close is the first context's).
  const sharedDb = shared?.deps.db;
  const db = sharedDb
    ? { ...sharedDb, close: async () => {} }
    : kind === 'postgres'
      ? await openDatabase(config)
      : await openDb({ kind: 'pglite', dataDir: undefined });
  await prepareDatabase(db, TEST_HASH_KEY).catch(async (err: unknown) => {
    await db.close();
    throw err;
  });
  const clock = systemClock(config);
  const configuredStorage = createObjectStore(config);
  const deps = await createDeps(config, {
    db,
    documentHashKey: TEST_HASH_KEY,
    clock: { today: options.today ?? clock.today, now: options.now ?? clock.now },
    storage: options.storage ? options.storage(configuredStorage) : configuredStorage,
    logger,
    chunkHooks: {
      ...(options.afterChunkCommit ? { afterChunkCommit: options.afterChunkCommit } : {}),
      ...(options.beforeChunkWrite ? { beforeChunkWrite: options.beforeChunkWrite } : {}),
    },
  });
  // As the server without REDIS_URL: jobs run and webhooks are delivered in this process.
  if (!config.redisUrl) startBackground(deps);
  const app = await buildApp(deps, { logger, youngCollection: options.youngCollection, uploadPaceClock: options.uploadPaceClock });
  const conformance = checkResponsesAgainstOpenApi(app);
  await app.ready();
  let n = 0;
  return {
    app,
    deps,
    config,
    async newCompany(name = 'Company') {
      const company = await deps.companies.createCompany(`${name} ${randomBytes(4).toString('hex')} ${++n}`);
      const { token } = await deps.tokens.create(company.id, 'test token');
      return { id: company.id, name: company.name, token, auth: { authorization: `Bearer ${token}` } };
    },
    async close() {
      await app.close();
      await deps.close();
      if (kind === 'postgres' && !shared) {
        const admin = await adminDb();
        await admin.exec(pooler ? `DROP DATABASE ${schema} WITH (FORCE)` : `DROP SCHEMA ${schema} CASCADE`);
        await admin.close();
      }
      // Every answer this file's tests got, against the OpenAPI document (test/openapi-conformance.ts).
      const { mismatches } = conformance;
      if (mismatches.length > 0) throw new Error(`Answers the OpenAPI document does not describe:\n${[...new Set(mismatches)].join('\n')}`);
    },
  };
}

/** A document number nobody else uses, so tests never share persons. */
export const docNumber = (prefix = 'P'): string => `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`;
/** A plate nobody else uses. */
export const plate = (): string => `AB${randomBytes(3).toString('hex').toUpperCase()}`;

/** A log destination that keeps what is written to it: `lines` as written, `records()` parsed (pino's JSON lines). */
export function logSink<T = Record<string, unknown>>() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, lines, records: (): T[] => lines.map((line) => JSON.parse(line) as T) };
}

/** A valid claim body; override any part. Document numbers are random so persons never collide across tests. */
export function claimBody(overrides: Record<string, unknown> = {}, clientOverrides: Record<string, unknown> = {}) {
  return {
    client: {
      first_name: 'Ona',
      last_name: 'Petraitė',
      date_of_birth: '1985-06-02',
      id_documents: [{ type: 'passport', number: docNumber() }],
      ...clientOverrides,
    },
    claim_date: addDays(todayIn('UTC'), -30),
    vehicle_registration: plate(),
    amount: 1250,
    claim_type: 'accident',
    ...overrides,
  };
}

/** The ISO date `days` after the given one (negative: before). */
export const addDays = (iso: string, days: number): string =>
  new Date(Date.parse(`${iso}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

/** A company acting as itself, as the domain services take it (no token, no person). */
export const companyPrincipal = (c: { id: string; name: string }): Principal => ({
  companyId: c.id,
  companyName: c.name,
  tokenId: null,
  userId: null,
});

/** A company as ctx.newCompany() returns it. */
export type Company = Awaited<ReturnType<TestContext['newCompany']>>;

/** Submits a claim through the API (claimBody with overrides), asserts the 201, returns `data`. */
export async function submitClaim(ctx: TestContext, company: Company, overrides: Record<string, unknown> = {}) {
  const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody(overrides) });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data;
}

/** The API's error body: message, stable code, the request's id, and `errors` for a 422. */
export function apiError(code: string, message: unknown, errors?: unknown) {
  return { message, code, request_id: expect.any(String), ...(errors === undefined ? {} : { errors }) };
}
