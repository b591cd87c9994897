import type { Logger } from 'pino';

import type { Config } from './config';
import { isDatabaseUnavailable, isDiskFull, openDb, type Db } from './db/db';
import { createDiskFullReporter } from './disk-full';
import { importJobCounts } from './db/metrics-repository';
import { createLookupBatchRepository } from './db/lookup-batch-repository';
import { createQualityRepository } from './db/quality-repository';
import { createRegistryRepository } from './db/registry-repository';
import { createSearchRepository, hostOf, routeSearches } from './db/search-repository';
import { createRepositories, type RepositoriesTx } from './db/repositories';
import { createAlertService } from './domain/alerts/alert-service';
import { createAuditService } from './domain/audit/audit-service';
import { createClaimService } from './domain/claims/claim-service';
import { createLoggedPlateSearches } from './domain/claims/logged-plate-searches';
import { createDocumentHasher } from './domain/clients/identity';
import { createCompanyService } from './domain/companies/company-service';
import { createDashboardService } from './domain/dashboard/dashboard-service';
import { createSessionService } from './domain/dashboard/session-service';
import { minusYears, todayIn } from './domain/dates';
import { createIdempotencyService } from './domain/idempotency/idempotency-service';
import { createImportClaimWriter } from './domain/imports/claim-writer';
import { announceImportOutcome } from './domain/imports/import-events';
import { importResource } from './api/import-resource';
import { createImportService, type ImportQueue } from './domain/imports/import-service';
import { createLookupBatchService } from './domain/lookups/lookup-batch';
import { createQualityService } from './domain/quality/quality';
import { createLookupJournal } from './domain/registry/lookup-journal';
import { createRegistryService } from './domain/registry/registry-service';
import { createTokenService } from './domain/tokens/token-service';
import { createWebhookService } from './domain/webhooks/webhook-service';
import { createLogger } from './logger';
import { createMetrics } from './metrics';
import { resolveEncryptionKeys, resolveSessionSecrets, StartupError } from './secrets';
import { createDatabaseFailureCounter } from './db/failure-counter';
import { createSealer, type Sealer } from './domain/sign-in/sealed';
import { createSignInService } from './domain/sign-in/sign-in-service';
import { resealSecrets } from './domain/keys/reseal';
import { createSignInThrottle } from './domain/sign-in/throttle';
import type { ObjectStore } from './storage/object-store';
import { sweepFiles } from './domain/storage';
import { importCsvProcessor } from './workers/import-csv.processor';
import { startImportThread } from './workers/import-thread';
import { createUploadInspection } from './workers/upload-inspection';
import { createInProcessBatchQueue, createInProcessImportQueue } from './workers/in-process-runner';
import type { BullImportQueue } from './workers/queues';
import { sendOnce, startWebhookDeliverer, type WebhookDeliverer } from './workers/webhook-deliverer';
import { discoverProvider } from './oidc';

export { resolveSessionSecrets, StartupError };

/** The service's clock: today's date (YYYY-MM-DD) and the time (ms since the epoch). */
export type Clock = { today: () => string; now: () => number };

/** The real clock: today in APP_TIMEZONE, Date.now. */
export const systemClock = (config: Pick<Config, 'timezone'>): Clock => ({ today: () => todayIn(config.timezone), now: Date.now });

/** Points in the write of each chunk of an import (whileChunkWrites: of a batch look-up's too). */
export type ChunkHooks = {
  /** Called while a chunk's write runs in the database and this thread waits for it: the main files' heap trim. */
  whileChunkWrites?: () => void;
  /** Awaited in an import chunk's transaction before its write (0-based chunk number). */
  beforeChunkWrite?: (chunkNo: number) => Promise<void>;
  /** Called right after an import chunk commits, before its progress is reported. */
  afterChunkCommit?: (chunkNo: number) => void;
};

/**
 * What createDeps is given rather than makes: everything it opens or reads from outside. The main
 * files (and src/startup.ts) open and prepare them; createDeps only builds the objects.
 */
export type DepsOptions = {
  /** The database, opened and migrated (startup.ts: openPreparedDatabase); deps.close() closes it. */
  db: Db;
  /** DOCUMENT_HASH_KEY, resolved (and in embedded mode generated) by the caller: startup.ts. */
  documentHashKey: string;
  /** What counts days and hours (budgets, retention, token expiry, sign-in): systemClock(config) in every process. */
  clock: Clock;
  /** Where uploaded files go: createObjectStore(config) in every process. */
  storage: ObjectStore;
  /** Where the queue, storage and import job log; default: a logger at LOG_LEVEL. */
  logger?: Logger;
  /** The main files pass the heap trim (whileChunkWrites); a worker's entry file may observe a chunk's commit. */
  chunkHooks?: ChunkHooks;
};

/** An uploaded file that belongs to no import or batch is removed by the daily sweep once this old (uploads take at most an hour). */
const ORPHAN_FILE_AFTER_MS = 24 * 3_600_000;

export async function createDeps(config: Config, options: DepsOptions) {
  const { db, clock, storage } = options;
  const hooks: ChunkHooks = options.chunkHooks ?? {};
  const searchPath = config.dbSearchPath;
  const pooler = config.databasePooler ? { pooler: config.databasePooler } : {};
  let lookupDb: Db | undefined;
  let searchDb: Db | undefined;
  try {
    const repos = createRepositories(db);
    const { today, now } = clock;
    const hashDocument = createDocumentHasher(options.documentHashKey);
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
      lookupDb = await openDb({ kind: 'postgres', url, poolSize: lookupWriters, ...(searchPath ? { searchPath } : {}), ...pooler });
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
        ...pooler,
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
    const audit = createAuditService({
      audit: repos.audit,
      retentionDays: config.auditRetentionDays,
      now,
    });
    const registry = createRegistryService({
      auditTrail: { purge: (actor) => audit.purge(actor), record: (event) => repos.audit.record(event) },
      registry: registryRepository,
      // The daily purge also removes uploaded files whose import or batch has ended (or that have none).
      sweepFiles: () =>
        sweepFiles(storage, (objects, orphanBefore) => repos.imports.endedObjects(objects, orphanBefore), {
          orphanAfterMs: ORPHAN_FILE_AFTER_MS,
        }),
      ...(searches ? { searches } : {}),
      journal: lookupJournal,
      hashDocument,
      identityChecks: { log: repos.identityChecks, policy: { perHour: config.identityMismatchesPerHour, now } },
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
      whileChunkWrites: hooks.whileChunkWrites,
    });
    // Import files are inspected on their way to storage on a thread of their own, started by the first upload.
    const uploadInspection = createUploadInspection({ nice: config.importThreadNice, log });
    const imports = createImportService<RepositoriesTx>({
      repos,
      fileCheck: uploadInspection.check,
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
        await announceImportOutcome(tx, run, importResource(run, now()));
      },
      ...hooks,
    });
    const tokens = createTokenService({
      repos,
      sharedDatabase: db.kind === 'postgres',
      onUsageError: (err) => log.warn({ err }, 'could not record the last use of API tokens; will try again'),
      maxLifetimeDays: config.tokenMaxLifetimeDays,
      now,
    });
    let sealer: Sealer | undefined;
    const sealerOf = () => (sealer ??= createSealer(resolveEncryptionKeys(config)));
    const signIn = createSignInService({
      repos,
      sealer: sealerOf,
      now,
      passwordHashCost: config.passwordHashCost,
      discoverProvider: (issuer) => discoverProvider(issuer, config.oidcAllowPrivate),
      allowPrivateProviders: config.oidcAllowPrivate,
    });
    // Sign-in attempts counted where every server process sees them: Redis, else the database.
    const failureCounter = config.redisUrl
      ? (await import('./workers/redis-failure-counter')).createRedisFailureCounter(config.redisUrl, config.queuePrefix)
      : undefined;
    const signInThrottle = createSignInThrottle({ counter: failureCounter ?? createDatabaseFailureCounter(db, now), now });
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
     * Runs the import and batch look-up jobs inside this process (no REDIS_URL; with it, `npm run
     * worker` does). With `thread` and PostgreSQL each import runs on a thread of its own
     * (import-thread.ts), with its own connections; otherwise on this thread (embedded, PGlite's own
     * thread does the database work). Jobs queued before they start wait for them.
     */
    const startJobRunners = (opts: { thread?: boolean } = {}) => {
      if (importQueue.kind !== 'in-process' || batchQueue.kind !== 'in-process') {
        throw new Error('Jobs run on BullMQ here: npm run worker consumes them.');
      }
      if (opts.thread && db.kind === 'postgres') importThread ??= startImportThread({ config, metrics, log });
      importQueue.start(importThread?.processor ?? importCsvProcessor({ imports, metrics }));
      batchQueue.start(lookupBatches);
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
        now,
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
        passwordHashCost: config.passwordHashCost,
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
        sendOnce: (d) => sendOnce(d, { allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutSeconds * 1000, now }),
        now,
      }),
      startJobRunners,
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
      /** `admin reseal`: TOTP keys and SSO client secrets sealed again with ENCRYPTION_KEY's first key. */
      reseal: () => resealSecrets({ transaction: (fn) => repos.transaction(fn), sealer: sealerOf }),
      signInThrottle,
      /** SESSION_SECRET's list, newest first: the first signs the session cookie, every one verifies it. */
      sessionSecret: () => resolveSessionSecrets(config),
      /** Whether the database answers (/readyz). */
      ping: () => repos.ping(),
      async close() {
        await tokens.close();
        await failureCounter?.close();
        await importQueue.close();
        await batchQueue.close();
        await importThread?.close();
        await uploadInspection.close();
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
