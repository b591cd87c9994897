import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import type { Logger } from 'pino';

import type { Config } from './config';
import { openDb, type Db } from './db/db';
import { migrate } from './db/migrate';
import { createRegistryRepository } from './db/registry-repository';
import { createStore } from './db/store';
import { createClaimService } from './domain/claims/claim-service';
import { createDocumentHasher, keyFingerprint } from './domain/clients/identity';
import { createCompanyService } from './domain/companies/company-service';
import { createDashboardService } from './domain/dashboard/dashboard-service';
import { createSessionService } from './domain/dashboard/session-service';
import { todayIn } from './domain/dates';
import { createIdempotencyService } from './domain/idempotency/idempotency-service';
import { createImportService, importResource, type ImportQueue } from './domain/imports/import-service';
import { createLookupJournal } from './domain/registry/lookup-journal';
import { createRegistryService } from './domain/registry/registry-service';
import { createTokenService } from './domain/tokens/token-service';
import { createWebhookService, enqueueWebhookEvent, type WebhookEventType } from './domain/webhooks/webhook-service';
import { importJobCounts } from './db/metrics-repository';
import { createLogger } from './logger';
import { createMetrics } from './metrics';
import { createObjectStore } from './storage/object-store';
import { importCsvProcessor } from './workers/import-csv.processor';
import { createInProcessImportQueue } from './workers/in-process-runner';
import type { BullImportQueue } from './workers/queues';
import { startImportThread } from './workers/import-thread';
import { startWebhookDeliverer, type WebhookDeliverer } from './workers/webhook-deliverer';

export class StartupError extends Error {}

/**
 * A secret from its variable, or in embedded mode one generated once into DATA_DIR and reused.
 * PostgreSQL mode requires the variable: several processes must share the same value.
 */
function resolveSecret(config: Config, given: string | undefined, variable: string, fileName: string, sharedBy: string): string {
  if (given) return given;
  if (config.databaseUrl) {
    throw new StartupError(`${variable} must be set when DATABASE_URL is set (at least 32 characters, the same for every ${sharedBy}).`);
  }
  const file = path.join(config.dataDir, fileName);
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return fs.readFileSync(file, 'utf8').trim();
}

/** The key of the identity documents' HMAC (DOCUMENT_HASH_KEY). */
const resolveDocumentHashKey = (config: Config) =>
  resolveSecret(config, config.documentHashKey, 'DOCUMENT_HASH_KEY', 'document-hash.key', 'process');

/**
 * The dashboard's cookie-signing secret (SESSION_SECRET). Resolved when the dashboard is
 * registered, so the worker and the admin CLI do not need it.
 */
export const resolveSessionSecret = (config: Config) =>
  resolveSecret(config, config.sessionSecret, 'SESSION_SECRET', 'session-secret.key', 'server process');

export type DepsOptions = {
  /** Test isolation: a PostgreSQL schema, or an in-memory PGlite (dataDir null). */
  searchPath?: string;
  inMemory?: boolean;
  /** Where the queue, storage and import job log; default: a logger at LOG_LEVEL. */
  logger?: Logger;
  /**
   * Tests only: a password hashing cost below configuration's floor, so that test sign-ins do
   * not spend the suite's time in scrypt. No variable sets it; production always uses the config.
   */
  testPasswordHashCost?: number;
  /** Tests only: the clock's date (YYYY-MM-DD) instead of today's in APP_TIMEZONE. */
  today?: () => string;
  /**
   * Deliver webhooks from this process. Default: when imports run in-process (no REDIS_URL), as
   * the server then is the only process; with REDIS_URL the workers deliver. The admin command line says false.
   */
  deliverWebhooks?: boolean;
  /** A long-running server: the embedded database's code is compiled optimized once, at start. */
  optimizedEmbeddedCode?: boolean;
  /**
   * A long-running server: with PostgreSQL and no REDIS_URL, imports run on a thread of their own
   * (import-thread.ts) instead of taking turns with requests on this one.
   */
  importThread?: boolean;
  /** Called right after an import chunk commits, before its progress is reported (crash tests). */
  afterChunkCommit?: (chunkNo: number) => void;
  /** Called while an import chunk's write runs in the database and this thread waits for it: the heap trim. */
  whileChunkWrites?: () => void;
};

export async function createDeps(config: Config, options: DepsOptions = {}) {
  const key = resolveDocumentHashKey(config);
  const db: Db = await openDb(
    config.databaseUrl
      ? {
          kind: 'postgres',
          url: config.databaseUrl,
          poolSize: config.dbPoolSize,
          ...((options.searchPath ?? config.dbSearchPath) ? { searchPath: options.searchPath ?? config.dbSearchPath } : {}),
        }
      : {
          kind: 'pglite',
          dataDir: options.inMemory ? undefined : path.join(config.dataDir, 'pgdata'),
          optimizedCode: options.optimizedEmbeddedCode ?? false,
        },
  );
  try {
    await migrate(db);
    const store = createStore(db);
    // A process started with another key would silently stop matching anyone: refuse instead.
    const stored = await store.meta.setOnce('document_hash_key_fingerprint', keyFingerprint(key));
    if (stored !== keyFingerprint(key)) {
      throw new StartupError('DOCUMENT_HASH_KEY does not match the key this database was created with; refusing to start.');
    }
    const today = options.today ?? (() => todayIn(config.timezone));
    const hashDocument = createDocumentHasher(key);
    const log = options.logger ?? createLogger(config.logLevel);
    const registryRepository = createRegistryRepository(db);
    // A look-up is answered once its log entry is committed; entries arriving meanwhile are
    // written together (group commit, see lookup-journal.ts).
    const lookupJournal = createLookupJournal({
      write: (entries) => registryRepository.appendLookups(entries),
      onError: (err) => log.error({ err }, 'could not write the look-up log; its look-ups were answered 503'),
    });
    const claims = createClaimService({
      store,
      hashDocument,
      today,
      searchHistoryYears: config.searchHistoryYears,
      journal: lookupJournal,
    });
    const registry = createRegistryService({
      registry: registryRepository,
      journal: lookupJournal,
      hashDocument,
      today,
      timeZone: config.timezone,
      searchHistoryYears: config.searchHistoryYears,
      retentionYears: config.retentionYears,
      lookupRetentionDays: config.lookupRetentionDays,
    });
    const storage = createObjectStore(config);
    // With REDIS_URL the API only produces jobs (`npm run worker` consumes them); without it the
    // same processor runs inside this process, and the queue libraries (about 30 MB) stay unloaded.
    const importQueue: BullImportQueue | ReturnType<typeof createInProcessImportQueue> = config.redisUrl
      ? (await import('./workers/queues')).createBullImportQueue({
          url: config.redisUrl,
          prefix: config.queuePrefix,
          attempts: config.importAttempts,
          log,
        })
      : createInProcessImportQueue({ concurrency: config.workerConcurrency, attempts: config.importAttempts, log });
    const imports = createImportService({
      store,
      writeClaims: {
        lookup: (tx, documents) => tx.claims.findDocuments(documents.flat(), { documentTypes: false }),
        // PostgreSQL runs it beside the chunk being written; PGlite has one connection.
        ...(db.kind === 'postgres'
          ? { lookupOutside: (documents) => store.claims.findDocuments(documents.flat(), { documentTypes: false }) }
          : {}),
        write: (tx, companyId, inputs, importId, documents, known) => {
          const { plan, written } = claims.planBatch({ companyId }, inputs, 'bulk_import', importId, documents, known);
          return { outcomes: plan.outcomes, written: tx.claims.insertResolved(plan, written) };
        },
      },
      documentsOf: claims.documentsOf,
      storage,
      queue: importQueue satisfies ImportQueue,
      today,
      limits: {
        maxBytes: config.importMaxBytes,
        chunkSize: config.importChunkSize,
        uploadTimeoutMs: config.importUploadTimeoutSeconds * 1000,
      },
      // Webhook outbox: every move into completed, failed or cancelled writes its event in the
      // same transaction, so none is announced that did not happen and none is lost.
      onTerminal: (tx, run) =>
        enqueueWebhookEvent(tx, {
          companyId: run.companyId,
          type: `import.${run.status}` as WebhookEventType,
          key: `import.${run.status}:${run.id}`,
          payload: importResource(run),
        }),
      ...(options.afterChunkCommit ? { afterChunkCommit: options.afterChunkCommit } : {}),
      ...(options.whileChunkWrites ? { whileChunkWrites: options.whileChunkWrites } : {}),
    });
    const tokens = createTokenService({
      store,
      sharedDatabase: db.kind === 'postgres',
      onUsageError: (err) => log.warn({ err }, 'could not record the last use of API tokens; will try again'),
    });
    const metrics = createMetrics({
      poolStats: () => db.poolStats(),
      queueDepth:
        importQueue.kind === 'bullmq'
          ? async () => {
              const c = await importQueue.bull.getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'failed');
              return { waiting: (c.waiting ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0, failed: c.failed ?? 0 };
            }
          : () => importJobCounts(db),
    });
    const importThread =
      options.importThread && db.kind === 'postgres' && importQueue.kind === 'in-process'
        ? startImportThread({ config, ...(options.searchPath ? { searchPath: options.searchPath } : {}), metrics, log })
        : undefined;
    if (importQueue.kind === 'in-process') importQueue.start(importThread?.processor ?? importCsvProcessor({ imports, metrics }));
    let deliverer: WebhookDeliverer | undefined;
    /** Starts delivering the webhook outbox from this process (once). */
    const startWebhookDelivery = () => {
      deliverer ??= startWebhookDeliverer({
        webhooks: store.webhooks,
        allowPrivate: config.webhookAllowPrivate,
        retrySchedule: config.webhookRetrySchedule,
        timeoutMs: config.webhookTimeoutSeconds * 1000,
        metrics,
        log,
      });
      return deliverer;
    };
    if (options.deliverWebhooks ?? importQueue.kind === 'in-process') startWebhookDelivery();
    return {
      config,
      db,
      store,
      today,
      claims,
      registry,
      lookupJournal,
      tokens,
      companies: createCompanyService({ store, passwordHashCost: options.testPasswordHashCost ?? config.passwordHashCost }),
      storage,
      importQueue,
      imports,
      metrics,
      webhooks: createWebhookService({ webhooks: store.webhooks, allowPrivate: config.webhookAllowPrivate }),
      startWebhookDelivery,
      idempotency: createIdempotencyService({ store }),
      dashboard: createDashboardService({ store, today }),
      sessions: createSessionService({ store }),
      sessionSecret: () => resolveSessionSecret(config),
      async close() {
        await tokens.close();
        await importQueue.close();
        await importThread?.close();
        await deliverer?.stop();
        await lookupJournal.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}
export type Deps = Awaited<ReturnType<typeof createDeps>>;
