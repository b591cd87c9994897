import path from 'node:path';

import type { Logger } from 'pino';

import type { Config } from './config';
import { isDatabaseUnavailable, isDiskFull, openDb, type Db } from './db/db';
import { createDiskFullReporter } from './disk-full';
import { importJobCounts } from './db/metrics-repository';
import { migrate } from './db/migrate';
import { createLookupBatchRepository } from './db/lookup-batch-repository';
import { createQualityRepository } from './db/quality-repository';
import { createRegistryRepository } from './db/registry-repository';
import { createSearchRepository, hostOf, routeSearches } from './db/search-repository';
import { createRepositories, type RepositoriesTx } from './db/repositories';
import { createAlertService } from './domain/alerts/alert-service';
import { createAuditService } from './domain/audit/audit-service';
import { createClaimService } from './domain/claims/claim-service';
import { createLoggedPlateSearches } from './domain/claims/logged-plate-searches';
import { createDocumentHasher, keyFingerprint } from './domain/clients/identity';
import { createCompanyService } from './domain/companies/company-service';
import { createDashboardService } from './domain/dashboard/dashboard-service';
import { createSessionService } from './domain/dashboard/session-service';
import { minusYears, todayIn } from './domain/dates';
import { createIdempotencyService } from './domain/idempotency/idempotency-service';
import { createImportClaimWriter } from './domain/imports/claim-writer';
import { announceImportOutcome } from './domain/imports/import-events';
import { createImportService, type ImportQueue } from './domain/imports/import-service';
import { createLookupBatchService } from './domain/lookups/lookup-batch';
import { createQualityService } from './domain/quality/quality';
import { createLookupJournal } from './domain/registry/lookup-journal';
import { createRegistryService } from './domain/registry/registry-service';
import { createTokenService } from './domain/tokens/token-service';
import { createWebhookService } from './domain/webhooks/webhook-service';
import { createLogger } from './logger';
import { createMetrics } from './metrics';
import { resolveDocumentHashKey, resolveEncryptionKey, resolveSessionSecret, StartupError } from './secrets';
import { createDatabaseFailureCounter } from './db/failure-counter';
import { createSealer, type Sealer } from './domain/sign-in/sealed';
import { createSignInService } from './domain/sign-in/sign-in-service';
import { createSignInThrottle } from './domain/sign-in/throttle';
import { createObjectStore, type ObjectStore } from './storage/object-store';
import { sweepFiles } from './domain/storage';
import { importCsvProcessor } from './workers/import-csv.processor';
import { startImportThread } from './workers/import-thread';
import { createInProcessImportQueue } from './workers/in-process-runner';
import { createInProcessBatchQueue } from './workers/lookup-batch-runner';
import type { BullImportQueue } from './workers/queues';
import { sendOnce, startWebhookDeliverer, type WebhookDeliverer } from './workers/webhook-deliverer';

export { resolveSessionSecret, StartupError };

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
   * Tests only: the clock's time (milliseconds since the epoch) for what counts hours and days
   * (the identity-check budget, the retention of look-ups, delivery bodies, uploads and audit
   * events), for token expiry and for sign-in (sessions, codes, reset links, throttling), instead
   * of Date.now.
   */
  now?: () => number;
  /** A long-running server: the embedded database's code is compiled optimized once, at start. */
  optimizedEmbeddedCode?: boolean;
  /** Called right after an import chunk commits, before its progress is reported (crash tests). */
  afterChunkCommit?: (chunkNo: number) => void;
  /** Awaited in an import chunk's transaction before its write (crash tests). */
  beforeChunkWrite?: (chunkNo: number) => Promise<void>;
  /** Called while an import chunk's write runs in the database and this thread waits for it: the heap trim. */
  whileChunkWrites?: () => void;
  /** Tests only: the object store as the service uses it, given the configured one (a full disk simulated at this seam). */
  storage?: (configured: ObjectStore) => ObjectStore;
};

/** An uploaded file that belongs to no import or batch is removed by the daily sweep once this old (uploads take at most an hour). */
const ORPHAN_FILE_AFTER_MS = 24 * 3_600_000;

export async function createDeps(config: Config, options: DepsOptions = {}) {
  const key = resolveDocumentHashKey(config);
  const searchPath = options.searchPath ?? config.dbSearchPath;
  const db: Db = await openDb(
    config.databaseUrl
      ? {
          kind: 'postgres',
          url: config.databaseUrl,
          poolSize: config.dbPoolSize,
          ...(searchPath ? { searchPath } : {}),
        }
      : {
          kind: 'pglite',
          dataDir: options.inMemory ? undefined : path.join(config.dataDir, 'pgdata'),
          optimizedCode: options.optimizedEmbeddedCode ?? false,
        },
  );
  let lookupDb: Db | undefined;
  let searchDb: Db | undefined;
  try {
    await migrate(db);
    const repos = createRepositories(db);
    // A process started with another key would silently stop matching anyone: refuse instead.
    const stored = await repos.meta.setOnce('document_hash_key_fingerprint', keyFingerprint(key));
    if (stored !== keyFingerprint(key)) {
      throw new StartupError('DOCUMENT_HASH_KEY does not match the key this database was created with; refusing to start.');
    }
    const today = options.today ?? (() => todayIn(config.timezone));
    const now = options.now ?? Date.now;
    const hashDocument = createDocumentHasher(key);
    const log = options.logger ?? createLogger(config.logLevel);
    const registryRepository = createRegistryRepository(db);
    // A look-up is answered once its log entry is committed; entries arriving meanwhile are
    // written together (group commit, see lookup-journal.ts). On PostgreSQL the log has a
    // connection of its own, so that its write never queues behind the searches waiting for it.
    // Two writers there: a look-up that finds one free is written at once (the embedded
    // database has one session, so one).
    const lookupWriters = config.databaseUrl ? 2 : 1;
    if (config.databaseUrl) {
      const url = config.databaseUrl;
      lookupDb = await openDb({ kind: 'postgres', url, poolSize: lookupWriters, ...(searchPath ? { searchPath } : {}) });
    }
    const lookupLog = lookupDb ? createRegistryRepository(lookupDb) : registryRepository;
    // With SEARCH_DATABASE_URL (a streaming replica) the three cross-company reads go there, and
    // everything else here. Its pool is read-only and named claims-search in pg_stat_activity; a
    // search it cannot connect for in 2 s, or answer in 5 s, goes to the primary (search-repository.ts).
    let searches: ReturnType<typeof routeSearches> | undefined;
    if (config.databaseUrl && config.searchDatabaseUrl) {
      searchDb = await openDb({
        kind: 'postgres',
        url: config.searchDatabaseUrl,
        poolSize: config.dbPoolSize,
        applicationName: 'claims-search',
        readOnly: true,
        connectTimeoutSeconds: 2,
        ...(searchPath ? { searchPath } : {}),
      });
      searches = routeSearches({
        replica: createSearchRepository(searchDb),
        primary: createSearchRepository(db),
        log,
        replicaName: hostOf(config.searchDatabaseUrl),
      });
    }
    const lookupJournal = createLookupJournal({
      writers: lookupWriters,
      write: (entries) => lookupLog.appendLookups(entries),
      onError: (err) => log.error({ err }, 'could not write the look-up log; its look-ups were answered 503'),
    });
    // Without a replica, a plate search and its look-up entry are one statement, batched like the
    // journal's entries (logged-plate-searches.ts), one batch at a time: two at once only queued
    // each commit behind the other's WAL flush, in batches half the size, and answered a quarter
    // fewer searches (docs/performance.md, eighth round).
    const loggedPlateSearches = searches
      ? undefined
      : createLoggedPlateSearches({
          lanes: 1,
          run: (batch) => repos.claims.searchByPlateLogged(batch),
          passThrough: isDatabaseUnavailable,
          onError: (err) => {
            if (!isDatabaseUnavailable(err)) log.error({ err }, 'could not run a batch of plate searches; they were answered 503');
          },
        });
    const claims = createClaimService({
      repos,
      hashDocument,
      today,
      searchHistoryYears: config.searchHistoryYears,
      journal: lookupJournal,
      alertsEnabled: config.alertsEnabled,
      // A full disk fails every submission of a batch alike, as an unreachable database does.
      unavailable: (err) => isDatabaseUnavailable(err) || isDiskFull(err),
      identityChecks: { perHour: config.identityMismatchesPerHour, now },
      ...(searches ? { searches } : {}),
      ...(loggedPlateSearches ? { loggedPlateSearches } : {}),
    });
    const configuredStorage = createObjectStore(config);
    const storage = options.storage ? options.storage(configuredStorage) : configuredStorage;
    const audit = createAuditService({
      audit: repos.audit,
      retentionDays: config.auditRetentionDays,
      ...(options.now ? { now: options.now } : {}),
    });
    const registry = createRegistryService({
      auditTrail: { purge: () => audit.purge(), record: (event) => repos.audit.record(event) },
      registry: registryRepository,
      // The daily purge also removes uploaded files whose import or batch has ended (or that have none).
      sweepFiles: () =>
        sweepFiles(storage, (objects, orphanBefore) => repos.imports.endedObjects(objects, orphanBefore), {
          orphanAfterMs: ORPHAN_FILE_AFTER_MS,
        }),
      ...(searches ? { searches } : {}),
      journal: lookupJournal,
      hashDocument,
      today,
      timeZone: config.timezone,
      searchHistoryYears: config.searchHistoryYears,
      retentionYears: config.retentionYears,
      lookupRetentionDays: config.lookupRetentionDays,
      webhookRetentionDays: config.webhookRetentionDays,
      // The import service is made below; the purge runs long after.
      purgeAbandonedUploads: (before) => imports.purgeAbandoned(before),
      now: () => new Date(now()),
    });
    // With REDIS_URL the API only produces jobs (`npm run worker` consumes them); without it the
    // same processor runs inside this process, and the queue libraries stay unloaded (memory).
    const importQueue: BullImportQueue | ReturnType<typeof createInProcessImportQueue> = config.redisUrl
      ? (await import('./workers/queues')).createBullImportQueue({
          url: config.redisUrl,
          prefix: config.queuePrefix,
          attempts: config.importAttempts,
          log,
        })
      : createInProcessImportQueue({ concurrency: config.workerConcurrency, attempts: config.importAttempts, log });
    // Batch plate look-ups: a job per file, on BullMQ with REDIS_URL (the worker runs it), else in this process.
    const batchQueue = config.redisUrl
      ? (await import('./workers/lookup-batch-queue')).createBullBatchQueue({
          url: config.redisUrl,
          prefix: config.queuePrefix,
          attempts: config.importAttempts,
          log,
        })
      : createInProcessBatchQueue({ attempts: config.importAttempts, log });
    const lookupBatches = createLookupBatchService({
      batches: createLookupBatchRepository(db),
      storage,
      queue: batchQueue,
      today,
      searchHistoryYears: config.searchHistoryYears,
      limits: {
        maxBytes: config.importMaxBytes,
        uploadTimeoutMs: config.importUploadTimeoutSeconds * 1000,
        storageRetryMs: config.storageRetrySeconds * 1000,
      },
      whileChunkWrites: options.whileChunkWrites,
    });
    if (batchQueue.kind === 'in-process') batchQueue.start(lookupBatches);
    const imports = createImportService<RepositoriesTx>({
      repos,
      // PostgreSQL looks the next chunk up beside the one being written; PGlite has one session.
      writeClaims: createImportClaimWriter(claims, db.kind === 'postgres' ? repos.claims : undefined),
      documentsOf: claims.documentsOf,
      storage,
      queue: importQueue satisfies ImportQueue,
      today,
      now,
      limits: {
        maxBytes: config.importMaxBytes,
        chunkSize: config.importChunkSize,
        uploadTimeoutMs: config.importUploadTimeoutSeconds * 1000,
        writers: config.importWriters,
        storageRetryMs: config.storageRetrySeconds * 1000,
      },
      // A completed import's match alerts are made in the same transaction as its completion,
      // set-based: its claims become visible and are alerted together, and a failed or cancelled
      // import alerts nobody. Then the import's own webhook event.
      onTerminal: async (tx, run) => {
        if (run.status === 'completed' && config.alertsEnabled) {
          await tx.alerts.matchImport(run.id, minusYears(today(), config.searchHistoryYears));
        }
        await announceImportOutcome(tx, run);
      },
      ...(options.afterChunkCommit ? { afterChunkCommit: options.afterChunkCommit } : {}),
      ...(options.beforeChunkWrite ? { beforeChunkWrite: options.beforeChunkWrite } : {}),
      ...(options.whileChunkWrites ? { whileChunkWrites: options.whileChunkWrites } : {}),
    });
    const tokens = createTokenService({
      repos,
      sharedDatabase: db.kind === 'postgres',
      onUsageError: (err) => log.warn({ err }, 'could not record the last use of API tokens; will try again'),
      maxLifetimeDays: config.tokenMaxLifetimeDays,
      ...(options.now ? { now: options.now } : {}),
    });
    let sealer: Sealer | undefined;
    const signIn = createSignInService({
      repos,
      sealer: () => (sealer ??= createSealer(resolveEncryptionKey(config))),
      now,
      passwordHashCost: options.testPasswordHashCost ?? config.passwordHashCost,
    });
    // Failed sign-ins counted where every server process sees them: Redis, else the database.
    const failureCounter = config.redisUrl
      ? (await import('./workers/redis-failure-counter')).createRedisFailureCounter(config.redisUrl, config.queuePrefix)
      : undefined;
    const signInThrottle = createSignInThrottle({ counter: failureCounter ?? createDatabaseFailureCounter(repos.signIn, now), now });
    const metrics = createMetrics(
      {
        poolStats: () => db.poolStats(),
        queueDepth: importQueue.kind === 'bullmq' ? () => importQueue.depth() : () => importJobCounts(db),
      },
      { processName: config.processName },
    );
    const diskFull = createDiskFullReporter(metrics, log);

    // Background work is started by the caller (the main files, the tests' harness), not here.
    let importThread: ReturnType<typeof startImportThread> | undefined;
    let deliverer: WebhookDeliverer | undefined;
    /**
     * Runs the import queue inside this process (no REDIS_URL; with it, `npm run worker` does).
     * With `thread` and PostgreSQL each job runs on a thread of its own (import-thread.ts), with
     * its own connections; otherwise on this thread (embedded, PGlite's own thread does the
     * database work). Jobs enqueued before it starts wait for it.
     */
    const startImportRunner = (opts: { thread?: boolean } = {}) => {
      if (importQueue.kind !== 'in-process') throw new Error('Imports run on BullMQ here: npm run worker consumes them.');
      if (opts.thread && db.kind === 'postgres') {
        importThread ??= startImportThread({ config, ...(searchPath ? { searchPath } : {}), metrics, log });
      }
      importQueue.start(importThread?.processor ?? importCsvProcessor({ imports, metrics }));
    };
    /** Starts delivering the webhook outbox from this process (once). */
    const startWebhookDelivery = () => {
      deliverer ??= startWebhookDeliverer({
        webhooks: repos.webhooks,
        allowPrivate: config.webhookAllowPrivate,
        retrySchedule: config.webhookRetrySchedule,
        timeoutMs: config.webhookTimeoutSeconds * 1000,
        metrics,
        log,
      });
      return deliverer;
    };
    return {
      config,
      db,
      repos,
      today,
      claims,
      registry,
      lookupJournal,
      tokens,
      companies: createCompanyService({
        repos,
        passwordHashCost: options.testPasswordHashCost ?? config.passwordHashCost,
        onTokensChanged: () => tokens.forget(),
      }),
      storage,
      importQueue,
      imports,
      metrics,
      diskFull,
      alerts: createAlertService({ alerts: repos.alerts }),
      audit,
      lookupBatches,
      batchQueue,
      quality: createQualityService({ quality: createQualityRepository(db), timeZone: config.timezone }),
      webhooks: createWebhookService({
        webhooks: repos.webhooks,
        transaction: (fn) => repos.transaction(fn),
        allowPrivate: config.webhookAllowPrivate,
        sendOnce: (d) => sendOnce(d, { allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutSeconds * 1000 }),
      }),
      startImportRunner,
      startWebhookDelivery,
      idempotency: createIdempotencyService({ repos }),
      /**
       * Import queue health for the operator: BullMQ's job counts, or the in-process runner's own
       * (waiting and running now, failed for good since the server started).
       */
      async queueHealth(): Promise<{ mode: 'bullmq' | 'in-process'; waiting: number; active: number; failed: number }> {
        if (importQueue.kind === 'in-process') return { mode: 'in-process', ...importQueue.counts() };
        const c = await importQueue.bull.getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'failed');
        return {
          mode: 'bullmq',
          waiting: (c.waiting ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0),
          active: c.active ?? 0,
          failed: c.failed ?? 0,
        };
      },
      dashboard: createDashboardService({ repos, today, timeZone: config.timezone, lookupRetentionDays: config.lookupRetentionDays }),
      sessions: createSessionService({ repos, now }),
      now,
      signIn,
      signInThrottle,
      sessionSecret: () => resolveSessionSecret(config),
      async close() {
        await tokens.close();
        await failureCounter?.close();
        await importQueue.close();
        await batchQueue.close();
        await importThread?.close();
        await deliverer?.stop();
        await loggedPlateSearches?.flush();
        await claims.flush();
        await lookupJournal.close();
        await lookupDb?.close();
        await searchDb?.close();
        await db.close();
      },
    };
  } catch (err) {
    await lookupDb?.close();
    await searchDb?.close();
    await db.close();
    throw err;
  }
}
export type Deps = Awaited<ReturnType<typeof createDeps>>;
