import os from 'node:os';
import { isIP } from 'node:net';

import { Ajv } from 'ajv';
import type { FromSchema } from 'json-schema-to-ts';

/**
 * The only reader of process.env. Every setting is validated here once, at start, and a bad
 * value stops the process with one line naming every offending variable.
 */
const envSchema = {
  type: 'object',
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    HOST: { type: 'string', minLength: 1, default: '0.0.0.0' },
    DATA_DIR: { type: 'string', minLength: 1, default: './data' },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    SEARCH_DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    DB_POOL_SIZE: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
    DB_SEARCH_PATH: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
    DATABASE_POOLER: { type: 'string', enum: ['transaction'] },
    APP_TIMEZONE: { type: 'string', minLength: 1, default: 'UTC' },
    SEARCH_HISTORY_YEARS: { type: 'integer', minimum: 1, maximum: 100, default: 3 },
    DOCUMENT_HASH_KEY: { type: 'string', minLength: 32 },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    S3_ENDPOINT: { type: 'string', pattern: '^https?://' },
    S3_ACCESS_KEY: { type: 'string', minLength: 1 },
    S3_SECRET_KEY: { type: 'string', minLength: 1 },
    S3_BUCKET: { type: 'string', minLength: 3, default: 'claims-imports' },
    S3_REGION: { type: 'string', minLength: 1, default: 'us-east-1' },
    IMPORT_MAX_BYTES: { type: 'integer', minimum: 1, default: 10_485_760 },
    // Default: 1000 with PostgreSQL, 500 embedded (see importChunkSize below).
    IMPORT_CHUNK_SIZE: { type: 'integer', minimum: 1, maximum: 50_000 },
    // Chunk transactions of one import in flight at a time, on PostgreSQL (embedded: always 1).
    // Why 2: docs/import-pipeline.md#chunks-side-by-side-import_writers.
    IMPORT_WRITERS: { type: 'integer', minimum: 1, maximum: 16, default: 2 },
    // The server's import thread yields the cores to requests (Linux nice value; 0: the process's own).
    IMPORT_THREAD_NICE: { type: 'integer', minimum: 0, maximum: 19, default: 10 },
    IMPORT_WAIT_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 60 },
    WORKER_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 64, default: 2 },
    WORKER_LOCK_SECONDS: { type: 'integer', minimum: 2, maximum: 600, default: 30 },
    IMPORT_ATTEMPTS: { type: 'integer', minimum: 1, maximum: 20, default: 3 },
    IMPORT_UPLOAD_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 120 },
    // How long a job waits out an outage of the file storage before its import or batch fails.
    STORAGE_RETRY_SECONDS: { type: 'integer', minimum: 0, maximum: 86_400, default: 300 },
    // Uploads read at once by one process; default: one per 64 MiB of the machine's memory, 4 to 64 (see maxConcurrentUploads).
    MAX_CONCURRENT_UPLOADS: { type: 'integer', minimum: 1, maximum: 10_000 },
    // An upload sending less than this on average over UPLOAD_MIN_RATE_WINDOW_SECONDS is cut off (408); 0: never.
    UPLOAD_MIN_BYTES_PER_SECOND: { type: 'integer', minimum: 0, default: 10_240 },
    UPLOAD_MIN_RATE_WINDOW_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 30 },
    // All uploads together are read at most this fast for a second after any other request arrived; 0: never paced.
    UPLOAD_PACE_BYTES_PER_SECOND: { type: 'integer', minimum: 0, default: 50_000_000 },
    QUEUE_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', default: 'bull' },
    SESSION_SECRET: { type: 'string', minLength: 32 },
    // A hop count or a comma-separated list of addresses/CIDR ranges (Fastify's trustProxy forms); never "true".
    TRUST_PROXY: { type: 'string', maxLength: 2000 },
    // The key that seals secrets stored in the database (TOTP keys, SSO client secrets).
    ENCRYPTION_KEY: { type: 'string', minLength: 32 },
    SESSION_IDLE_MINUTES: { type: 'integer', minimum: 1, maximum: 480, default: 30 },
    // Requests per minute per API token on /api/v1 (0: off); a company's own by `admin company:limits`.
    RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 0, default: 6000 },
    // Requests per minute of all of a company's API tokens together (0: off); a company's own by `admin company:limits`.
    COMPANY_RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 0, default: 30_000 },
    // Dashboard requests per minute per signed-in person (0: off).
    SESSION_RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 0, default: 600 },
    // Requests with a missing, malformed or unknown token per client address and minute (0: off).
    AUTH_FAILURES_PER_MINUTE: { type: 'integer', minimum: 0, default: 60 },
    // Identity mismatches a company may be told per hour (0: off); past it, submissions are 429.
    IDENTITY_MISMATCHES_PER_HOUR: { type: 'integer', minimum: 0, default: 100 },
    // Days a webhook delivery's body is kept after it was delivered or given up.
    WEBHOOK_RETENTION_DAYS: { type: 'integer', minimum: 1, maximum: 36_500, default: 30 },
    // log2 of scrypt's N for dashboard passwords. 15 (32 MiB a hash) is the floor: no setting goes under it.
    PASSWORD_HASH_COST: { type: 'integer', minimum: 15, maximum: 17, default: 15 },
    RETENTION_YEARS: { type: 'integer', minimum: 1, maximum: 100, default: 6 },
    LOOKUP_RETENTION_DAYS: { type: 'integer', minimum: 1, maximum: 36_500, default: 730 },
    AUDIT_RETENTION_DAYS: { type: 'integer', minimum: 1, maximum: 36_500, default: 730 },
    // The longest lifetime a new API token may have; 0 = no limit (then "never expires" is offered).
    TOKEN_MAX_LIFETIME_DAYS: { type: 'integer', minimum: 0, maximum: 36_500, default: 366 },
    METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535 },
    WORKER_METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535 },
    PROCESS_NAME: { type: 'string', pattern: '^[A-Za-z0-9_.:@/-]{1,100}$' },
    WEBHOOK_ALLOW_PRIVATE: { type: 'boolean', default: false },
    // Single sign-on providers over http and on loopback or private addresses (tests, closed networks).
    OIDC_ALLOW_PRIVATE: { type: 'boolean', default: false },
    WEBHOOK_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 60, default: 10 },
    WEBHOOK_RETRY_SCHEDULE: { type: 'string', pattern: '^\\d{1,6}(,\\d{1,6}){0,19}$', default: '60,300,1800,7200,43200' },
    ALERTS_ENABLED: { type: 'boolean', default: true },
  },
} as const;

/** The environment after validation: defaulted variables are present. */
type Env = FromSchema<typeof envSchema>;

export type Config = Readonly<{
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /**
   * A streaming replica of DATABASE_URL for the cross-company reads (plate search, person search,
   * matches); everything else, and those reads while it is unreachable, use DATABASE_URL.
   */
  searchDatabaseUrl: string | undefined;
  dbPoolSize: number;
  /** Test/ops setting: the PostgreSQL schema to work in (search_path), e.g. a test's own schema. */
  dbSearchPath: string | undefined;
  /**
   * 'transaction': DATABASE_URL (and SEARCH_DATABASE_URL) reach PostgreSQL through a pooler in
   * transaction mode (PgBouncer): no prepared statements, no session settings.
   */
  databasePooler: 'transaction' | undefined;
  timezone: string;
  searchHistoryYears: number;
  documentHashKey: string | undefined;
  logLevel: string;
  redisUrl: string | undefined;
  s3:
    | { endPoint: string; port: number | undefined; useSSL: boolean; accessKey: string; secretKey: string; bucket: string; region: string }
    | undefined;
  importMaxBytes: number;
  importChunkSize: number;
  importWriters: number;
  importThreadNice: number;
  importWaitSeconds: number;
  workerConcurrency: number;
  /** How long a worker's lock on a job lasts without renewal; a killed worker's job is retried after about this long. */
  workerLockSeconds: number;
  importAttempts: number;
  importUploadTimeoutSeconds: number;
  /** How long an import or batch job waits out an outage of the file storage (STORAGE_RETRY_SECONDS) before it fails. */
  storageRetrySeconds: number;
  /** Uploads (imports, batch look-ups, the dashboard's) read at once by this process; more are answered 503 at once. */
  maxConcurrentUploads: number;
  /** An upload whose sender keeps under this rate for `uploadMinRateWindowSeconds` is cut off with a 408 (0: never). */
  uploadMinBytesPerSecond: number;
  uploadMinRateWindowSeconds: number;
  /** The uploads together are read at most this fast while other requests arrive (0: never paced; src/upload-guard.ts). */
  uploadPaceBytesPerSecond: number;
  queuePrefix: string;
  sessionSecret: string | undefined;
  /** Whom X-Forwarded-* is believed from: false, a hop count, or addresses and CIDR ranges (TRUST_PROXY). */
  trustProxy: false | number | string[];
  /** The key sealing secrets kept in the database (ENCRYPTION_KEY); embedded mode generates one. */
  encryptionKey: string | undefined;
  /** A dashboard session ends after this many minutes without a request (SESSION_IDLE_MINUTES). */
  sessionIdleMinutes: number;
  /** Requests per minute per API token on /api/v1 (0: off); a company's own limit replaces it. */
  rateLimitPerMinute: number;
  /** Requests per minute of all of a company's tokens together (0: off); a company's own limit replaces it. */
  companyRateLimitPerMinute: number;
  /** Dashboard requests per minute per signed-in person (0: off). */
  sessionRateLimitPerMinute: number;
  /** Requests with a missing, malformed or unknown token per client address and minute (0: off). */
  authFailuresPerMinute: number;
  /** Identity mismatches per company and hour (0: off). */
  identityMismatchesPerHour: number;
  /** Days a webhook delivery's body is kept after it was delivered or given up. */
  webhookRetentionDays: number;
  /** log2 of scrypt's N for new password hashes (PASSWORD_HASH_COST, at least 15). */
  passwordHashCost: number;
  /** Claims dated before today minus this many years are deleted by the retention purge. */
  retentionYears: number;
  /** Look-up log entries older than this many days are deleted by the retention purge. */
  lookupRetentionDays: number;
  /** Audit events older than this many days go in the daily purge. */
  auditRetentionDays: number;
  /** The longest lifetime of a new API token, in days; 0: no limit. */
  tokenMaxLifetimeDays: number;
  /** Prometheus /metrics port of the API server (unset: no metrics served). */
  metricsPort: number | undefined;
  /** Prometheus /metrics port of `npm run worker` (unset: no metrics served). */
  workerMetricsPort: number | undefined;
  /** The `process` label on every metric of this process (PROCESS_NAME; unset: `<hostname>:<pid>`). */
  processName: string | undefined;
  /** Webhook targets may be http and resolve to loopback, private or link-local addresses (tests, private networks). */
  webhookAllowPrivate: boolean;
  /** An SSO issuer may use http and a loopback or private address (OIDC_ALLOW_PRIVATE). */
  oidcAllowPrivate: boolean;
  /** Time limit of one webhook delivery attempt. */
  webhookTimeoutSeconds: number;
  /** Seconds to wait after each failed delivery attempt; after the last one the delivery fails. */
  webhookRetrySchedule: readonly number[];
  /** Match and status-change alerts are made (ALERTS_ENABLED, default true; off only to measure their cost). */
  alertsEnabled: boolean;
}>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true });
  const validate = ajv.compile(envSchema);
  // Only the variables we know; empty strings count as unset so `.env` templates stay harmless.
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(envSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const problems: string[] = [];
  if (!validate(input)) {
    for (const e of validate.errors ?? []) problems.push(`${e.instancePath.slice(1)} ${e.message ?? 'is invalid'}`);
  }
  // The variables as the schema describes them (defaults filled in). When the schema failed, the
  // process stops below with every problem named, before any value is used.
  const v = input as Env;
  // Checked even when the schema failed, so that one start names every bad variable.
  if (!isValidTimeZone(v.APP_TIMEZONE)) problems.push(`APP_TIMEZONE is not a known IANA time zone`);
  if (typeof input.S3_ENDPOINT === 'string' && !hasHost(input.S3_ENDPOINT)) problems.push('S3_ENDPOINT is not a valid URL');
  const s3Keys = ['S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY'] as const;
  const s3Given = s3Keys.filter((k) => input[k] !== undefined);
  if (s3Given.length > 0 && s3Given.length < s3Keys.length) {
    problems.push(`${s3Keys.filter((k) => input[k] === undefined).join(', ')} must be set together with ${s3Given.join(', ')}`);
  }
  if (input.REDIS_URL !== undefined && input.DATABASE_URL === undefined) {
    problems.push(
      'REDIS_URL needs DATABASE_URL: the embedded database can be opened by one process only, so separate workers could not reach it (unset REDIS_URL to run imports inside the server)',
    );
  }
  if (input.DATABASE_POOLER !== undefined && input.DB_SEARCH_PATH !== undefined) {
    problems.push(
      'DB_SEARCH_PATH cannot be kept behind a pooler in transaction mode (DATABASE_POOLER=transaction): each transaction may run on another session. Set it on the role instead (ALTER ROLE … SET search_path = …) and unset DB_SEARCH_PATH',
    );
  }
  if (input.SEARCH_DATABASE_URL !== undefined && input.DATABASE_URL === undefined) {
    problems.push('SEARCH_DATABASE_URL needs DATABASE_URL: it names a replica of that PostgreSQL (the embedded database has none)');
  }
  if (typeof v.RETENTION_YEARS === 'number' && typeof v.SEARCH_HISTORY_YEARS === 'number' && v.RETENTION_YEARS < v.SEARCH_HISTORY_YEARS) {
    problems.push(
      `RETENTION_YEARS (${v.RETENTION_YEARS}) must be at least SEARCH_HISTORY_YEARS (${v.SEARCH_HISTORY_YEARS}): a claim is found by searches and alerts for SEARCH_HISTORY_YEARS, so it is kept at least that long`,
    );
  }
  if (
    typeof v.UPLOAD_PACE_BYTES_PER_SECOND === 'number' &&
    typeof v.UPLOAD_MIN_BYTES_PER_SECOND === 'number' &&
    v.UPLOAD_PACE_BYTES_PER_SECOND > 0
  ) {
    const uploads = typeof v.MAX_CONCURRENT_UPLOADS === 'number' ? v.MAX_CONCURRENT_UPLOADS : defaultMaxConcurrentUploads();
    const slowest = v.UPLOAD_MIN_BYTES_PER_SECOND * uploads;
    if (v.UPLOAD_PACE_BYTES_PER_SECOND < slowest) {
      problems.push(
        `UPLOAD_PACE_BYTES_PER_SECOND (${v.UPLOAD_PACE_BYTES_PER_SECOND}) must be 0 or at least UPLOAD_MIN_BYTES_PER_SECOND × MAX_CONCURRENT_UPLOADS (${v.UPLOAD_MIN_BYTES_PER_SECOND} × ${uploads} = ${slowest}): paced below that, uploads would be cut off as too slow`,
      );
    }
  }
  const trustProxy = parseTrustProxy(input.TRUST_PROXY);
  if (typeof trustProxy === 'object' && !Array.isArray(trustProxy)) problems.push(trustProxy.error);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);

  let s3: Config['s3'];
  // All three or none (checked above).
  if (v.S3_ENDPOINT && v.S3_ACCESS_KEY && v.S3_SECRET_KEY) {
    const url = new URL(v.S3_ENDPOINT);
    s3 = {
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      useSSL: url.protocol === 'https:',
      accessKey: v.S3_ACCESS_KEY,
      secretKey: v.S3_SECRET_KEY,
      bucket: v.S3_BUCKET,
      region: v.S3_REGION,
    };
  }
  return Object.freeze({
    port: v.PORT,
    host: v.HOST,
    dataDir: v.DATA_DIR,
    databaseUrl: v.DATABASE_URL,
    searchDatabaseUrl: v.SEARCH_DATABASE_URL,
    dbPoolSize: v.DB_POOL_SIZE,
    dbSearchPath: v.DB_SEARCH_PATH,
    databasePooler: v.DATABASE_POOLER,
    timezone: v.APP_TIMEZONE,
    searchHistoryYears: v.SEARCH_HISTORY_YEARS,
    documentHashKey: v.DOCUMENT_HASH_KEY,
    logLevel: v.LOG_LEVEL,
    redisUrl: v.REDIS_URL,
    s3,
    importMaxBytes: v.IMPORT_MAX_BYTES,
    // PostgreSQL: a chunk costs a fixed four round trips and its documents are looked up while the
    // previous one is written, so 1000-row chunks are as fast as larger ones and hold less memory.
    // Embedded, PGlite has one session and a request's statement waits for the chunk ahead of it:
    // smaller chunks keep the server answering (docs/import-pipeline.md#chunks).
    importChunkSize: v.IMPORT_CHUNK_SIZE ?? (v.DATABASE_URL ? 1000 : 500),
    // PGlite has one session: chunks side by side would only take turns (docs/import-pipeline.md#chunks).
    importWriters: v.DATABASE_URL ? v.IMPORT_WRITERS : 1,
    importThreadNice: v.IMPORT_THREAD_NICE,
    importWaitSeconds: v.IMPORT_WAIT_SECONDS,
    workerConcurrency: v.WORKER_CONCURRENCY,
    workerLockSeconds: v.WORKER_LOCK_SECONDS,
    importAttempts: v.IMPORT_ATTEMPTS,
    importUploadTimeoutSeconds: v.IMPORT_UPLOAD_TIMEOUT_SECONDS,
    storageRetrySeconds: v.STORAGE_RETRY_SECONDS,
    maxConcurrentUploads: v.MAX_CONCURRENT_UPLOADS ?? defaultMaxConcurrentUploads(),
    uploadMinBytesPerSecond: v.UPLOAD_MIN_BYTES_PER_SECOND,
    uploadMinRateWindowSeconds: v.UPLOAD_MIN_RATE_WINDOW_SECONDS,
    uploadPaceBytesPerSecond: v.UPLOAD_PACE_BYTES_PER_SECOND,
    queuePrefix: v.QUEUE_PREFIX,
    sessionSecret: v.SESSION_SECRET,
    trustProxy: trustProxy as Config['trustProxy'],
    encryptionKey: v.ENCRYPTION_KEY,
    sessionIdleMinutes: v.SESSION_IDLE_MINUTES,
    rateLimitPerMinute: v.RATE_LIMIT_PER_MINUTE,
    companyRateLimitPerMinute: v.COMPANY_RATE_LIMIT_PER_MINUTE,
    sessionRateLimitPerMinute: v.SESSION_RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: v.AUTH_FAILURES_PER_MINUTE,
    identityMismatchesPerHour: v.IDENTITY_MISMATCHES_PER_HOUR,
    webhookRetentionDays: v.WEBHOOK_RETENTION_DAYS,
    passwordHashCost: v.PASSWORD_HASH_COST,
    retentionYears: v.RETENTION_YEARS,
    lookupRetentionDays: v.LOOKUP_RETENTION_DAYS,
    auditRetentionDays: v.AUDIT_RETENTION_DAYS,
    tokenMaxLifetimeDays: v.TOKEN_MAX_LIFETIME_DAYS,
    metricsPort: v.METRICS_PORT,
    workerMetricsPort: v.WORKER_METRICS_PORT,
    processName: v.PROCESS_NAME,
    webhookAllowPrivate: v.WEBHOOK_ALLOW_PRIVATE,
    oidcAllowPrivate: v.OIDC_ALLOW_PRIVATE,
    webhookTimeoutSeconds: v.WEBHOOK_TIMEOUT_SECONDS,
    webhookRetrySchedule: Object.freeze(String(v.WEBHOOK_RETRY_SCHEDULE).split(',').map(Number)),
    alertsEnabled: v.ALERTS_ENABLED,
  });
}

/**
 * Uploads read at once when MAX_CONCURRENT_UPLOADS is not set: one per 64 MiB of the machine's
 * memory, at least 4 and at most 64. An upload holds up to one S3 part (5 MiB) and the parser's
 * buffers (what each took, measured: docs/performance.md); the rest is for the process itself.
 */
export function defaultMaxConcurrentUploads(totalMemory = os.totalmem()): number {
  return Math.min(64, Math.max(4, Math.floor(totalMemory / (64 * 1024 * 1024))));
}

/** An address or a CIDR range of one (`10.0.0.0/8`, `::1`, `fd00::/8`). */
function isAddressOrRange(text: string): boolean {
  const [address = '', bits, ...rest] = text.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return bits === undefined || (/^\d{1,3}$/u.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}

/**
 * TRUST_PROXY: unset, empty or "false" trusts no proxy; a whole number trusts that many hops in
 * front of the server; otherwise a comma-separated list of the proxies' addresses or CIDR ranges.
 * "true" (every address) is refused: any client could then write its own address.
 */
function parseTrustProxy(raw: unknown): false | number | string[] | { error: string } {
  if (typeof raw !== 'string' || raw === '' || raw === 'false' || raw === '0') return false;
  const text = raw.trim();
  if (/^\d{1,2}$/u.test(text)) return Number(text);
  if (text === 'true' || text === '*') {
    return {
      error:
        'TRUST_PROXY must be a hop count or the proxies\' addresses, never "true" (every address: a client could write its own address in X-Forwarded-For)',
    };
  }
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const bad = parts.filter((p) => !isAddressOrRange(p));
  if (parts.length === 0 || bad.length > 0) {
    return {
      error: `TRUST_PROXY must be a hop count or a comma-separated list of addresses or CIDR ranges (not: ${bad.join(', ') || text})`,
    };
  }
  return parts;
}

function hasHost(url: string): boolean {
  try {
    return new URL(url).hostname !== '';
  } catch {
    return false;
  }
}

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
