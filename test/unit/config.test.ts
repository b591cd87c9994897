import { describe, expect, it } from 'vitest';

import { ConfigError, defaultMaxConcurrentUploads, loadConfig } from '../../src/config';

const configError = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected loadConfig to fail');
};

const s3 = { S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY: 'access', S3_SECRET_KEY: 'secret-key' };

describe('loadConfig', () => {
  it('has the pressure settings: storage outages waited out 300 s, uploads at once sized to memory, slow senders under 10 kB/s for 30 s cut off', () => {
    expect(loadConfig({})).toMatchObject({
      storageRetrySeconds: 300,
      maxConcurrentUploads: defaultMaxConcurrentUploads(),
      uploadMinBytesPerSecond: 10_240,
      uploadMinRateWindowSeconds: 30,
    });
    const MiB = 1024 * 1024;
    expect([512 * MiB, 2048 * MiB, 8192 * MiB, 65_536 * MiB].map((m) => defaultMaxConcurrentUploads(m))).toEqual([8, 32, 64, 64]);
    expect(defaultMaxConcurrentUploads(128 * MiB)).toBe(4);
    expect(
      loadConfig({
        STORAGE_RETRY_SECONDS: '10',
        MAX_CONCURRENT_UPLOADS: '2',
        UPLOAD_MIN_BYTES_PER_SECOND: '0',
        UPLOAD_MIN_RATE_WINDOW_SECONDS: '5',
      }),
    ).toMatchObject({ storageRetrySeconds: 10, maxConcurrentUploads: 2, uploadMinBytesPerSecond: 0, uploadMinRateWindowSeconds: 5 });
    expect(configError({ MAX_CONCURRENT_UPLOADS: '0', STORAGE_RETRY_SECONDS: '-1' })).toMatch(
      /MAX_CONCURRENT_UPLOADS.*STORAGE_RETRY_SECONDS|STORAGE_RETRY_SECONDS.*MAX_CONCURRENT_UPLOADS/u,
    );
  });

  it('has working defaults with an empty environment: embedded database, UTC, 3-year search window', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      dataDir: './data',
      databaseUrl: undefined,
      dbPoolSize: 10,
      timezone: 'UTC',
      searchHistoryYears: 3,
      documentHashKey: undefined,
      logLevel: 'info',
      redisUrl: undefined,
      s3: undefined,
      importMaxBytes: 10_485_760,
      trustProxy: false,
      sessionIdleMinutes: 30,
      rateLimitPerMinute: 6000,
      authFailuresPerMinute: 60,
      identityMismatchesPerHour: 100,
      webhookRetentionDays: 30,
    });
  });

  it('reads and converts the variables it knows', () => {
    const config = loadConfig({
      PORT: '8080',
      DATABASE_URL: 'postgres://app@db:5432/claims',
      APP_TIMEZONE: 'Europe/Vilnius',
      SEARCH_HISTORY_YEARS: '5',
      TRUST_PROXY: '10.0.0.5, 10.1.0.0/16',
      DOCUMENT_HASH_KEY: 'x'.repeat(32),
    });
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: 'postgres://app@db:5432/claims',
      timezone: 'Europe/Vilnius',
      searchHistoryYears: 5,
      trustProxy: ['10.0.0.5', '10.1.0.0/16'],
      documentHashKey: 'x'.repeat(32),
    });
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', APP_TIMEZONE: '', S3_ENDPOINT: '' })).toMatchObject({ port: 3000, timezone: 'UTC', s3: undefined });
  });

  it('ignores variables it does not know', () => {
    expect(() => loadConfig({ SOMETHING_ELSE: 'x', PATH: '/usr/bin' })).not.toThrow();
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadConfig({}))).toBe(true);
  });

  it('names the variable of a bad value', () => {
    expect(configError({ PORT: 'eighty' })).toMatch(/PORT/);
    expect(configError({ SEARCH_HISTORY_YEARS: '0' })).toMatch(/SEARCH_HISTORY_YEARS/);
    expect(configError({ DATABASE_URL: 'mysql://x' })).toMatch(/DATABASE_URL/);
    expect(configError({ LOG_LEVEL: 'loud' })).toMatch(/LOG_LEVEL/);
    expect(configError({ DOCUMENT_HASH_KEY: 'short' })).toMatch(/DOCUMENT_HASH_KEY/);
    expect(configError({ TRUST_PROXY: 'maybe' })).toMatch(/TRUST_PROXY/);
    // Never "everything": a client could then write its own address.
    expect(configError({ TRUST_PROXY: 'true' })).toMatch(/TRUST_PROXY must be a hop count or the proxies' addresses, never "true"/u);
    expect(configError({ TRUST_PROXY: '10.0.0.0/33' })).toMatch(/TRUST_PROXY/);
    expect(configError({ SESSION_IDLE_MINUTES: '0' })).toMatch(/SESSION_IDLE_MINUTES/);
  });

  it('takes TRUST_PROXY as a hop count or a list of addresses', () => {
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '::1,fd00::/8' }).trustProxy).toEqual(['::1', 'fd00::/8']);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
  });

  it('names every bad variable at once', () => {
    const message = configError({ PORT: 'eighty', DB_POOL_SIZE: '0', LOG_LEVEL: 'loud' });
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/DB_POOL_SIZE/);
    expect(message).toMatch(/LOG_LEVEL/);
  });

  it('names a bad value and a broken combination together', () => {
    const message = configError({ PORT: 'eighty', APP_TIMEZONE: 'Mars/Olympus' });
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/APP_TIMEZONE/);
  });

  it('rejects an unknown time zone', () => {
    expect(configError({ APP_TIMEZONE: 'Mars/Olympus' })).toMatch(/APP_TIMEZONE/);
  });

  it('needs the S3 variables together and names the missing ones', () => {
    const message = configError({ S3_ENDPOINT: s3.S3_ENDPOINT });
    expect(message).toMatch(/S3_ACCESS_KEY/);
    expect(message).toMatch(/S3_SECRET_KEY/);
    expect(configError({ S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' })).toMatch(/S3_ENDPOINT/);
  });

  it('builds the S3 settings from the endpoint URL', () => {
    expect(loadConfig(s3).s3).toEqual({
      endPoint: '127.0.0.1',
      port: 9000,
      useSSL: false,
      accessKey: 'access',
      secretKey: 'secret-key',
      bucket: 'claims-imports',
      region: 'us-east-1',
    });
    expect(loadConfig({ ...s3, S3_ENDPOINT: 'https://s3.example.com' }).s3).toMatchObject({
      endPoint: 's3.example.com',
      port: undefined,
      useSSL: true,
    });
  });

  it('rejects an S3 endpoint that is not a URL with a ConfigError naming it', () => {
    expect(configError({ ...s3, S3_ENDPOINT: 'http://' })).toMatch(/S3_ENDPOINT/);
  });

  it('needs DATABASE_URL when REDIS_URL is set (separate workers cannot share the embedded database)', () => {
    expect(configError({ REDIS_URL: 'redis://127.0.0.1:6379' })).toMatch(/REDIS_URL needs DATABASE_URL/);
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', DATABASE_URL: 'postgres://x@db/claims' }).redisUrl).toBe(
      'redis://127.0.0.1:6379',
    );
  });

  it('takes DATABASE_POOLER=transaction (PgBouncer), and refuses DB_SEARCH_PATH beside it (no session keeps it there)', () => {
    const db = { DATABASE_URL: 'postgres://x@pgbouncer:6432/claims' };
    expect(loadConfig({ ...db, DATABASE_POOLER: 'transaction' }).databasePooler).toBe('transaction');
    expect(loadConfig(db).databasePooler).toBeUndefined();
    expect(configError({ ...db, DATABASE_POOLER: 'session' })).toMatch(/DATABASE_POOLER/);
    expect(configError({ ...db, DATABASE_POOLER: 'transaction', DB_SEARCH_PATH: 'claims' })).toMatch(
      /DB_SEARCH_PATH cannot be kept behind a pooler in transaction mode.*ALTER ROLE/,
    );
  });

  it('takes SEARCH_DATABASE_URL only as a PostgreSQL URL beside DATABASE_URL (a replica of it)', () => {
    expect(configError({ SEARCH_DATABASE_URL: 'postgres://x@replica/claims' })).toMatch(/SEARCH_DATABASE_URL needs DATABASE_URL/);
    expect(configError({ DATABASE_URL: 'postgres://x@db/claims', SEARCH_DATABASE_URL: 'mysql://x@replica/claims' })).toMatch(
      /SEARCH_DATABASE_URL/,
    );
    const config = loadConfig({ DATABASE_URL: 'postgres://x@db/claims', SEARCH_DATABASE_URL: 'postgresql://x@replica/claims' });
    expect(config.searchDatabaseUrl).toBe('postgresql://x@replica/claims');
    expect(loadConfig({ DATABASE_URL: 'postgres://x@db/claims', SEARCH_DATABASE_URL: '' }).searchDatabaseUrl).toBeUndefined();
  });

  it('paces uploads at 50 MB/s beside other requests by default, and never below the slowest rate allowed to all uploads at once', () => {
    expect(loadConfig({}).uploadPaceBytesPerSecond).toBe(50_000_000);
    expect(loadConfig({ UPLOAD_PACE_BYTES_PER_SECOND: '0' }).uploadPaceBytesPerSecond).toBe(0);
    expect(loadConfig({ UPLOAD_PACE_BYTES_PER_SECOND: '40960', MAX_CONCURRENT_UPLOADS: '4' }).uploadPaceBytesPerSecond).toBe(40_960);
    expect(configError({ UPLOAD_PACE_BYTES_PER_SECOND: '40959', MAX_CONCURRENT_UPLOADS: '4' })).toMatch(
      /UPLOAD_PACE_BYTES_PER_SECOND \(40959\) must be 0 or at least UPLOAD_MIN_BYTES_PER_SECOND × MAX_CONCURRENT_UPLOADS \(10240 × 4 = 40960\)/u,
    );
    expect(loadConfig({ UPLOAD_PACE_BYTES_PER_SECOND: '1000', UPLOAD_MIN_BYTES_PER_SECOND: '0' }).uploadPaceBytesPerSecond).toBe(1000);
    expect(configError({ UPLOAD_PACE_BYTES_PER_SECOND: '-1' })).toMatch(/UPLOAD_PACE_BYTES_PER_SECOND/u);
  });

  it('keeps claims at least as long as searches find them (RETENTION_YEARS >= SEARCH_HISTORY_YEARS)', () => {
    expect(configError({ RETENTION_YEARS: '2' })).toMatch(/RETENTION_YEARS \(2\) must be at least SEARCH_HISTORY_YEARS \(3\)/);
    expect(configError({ SEARCH_HISTORY_YEARS: '7' })).toMatch(/RETENTION_YEARS \(6\) must be at least SEARCH_HISTORY_YEARS \(7\)/);
    expect(loadConfig({ RETENTION_YEARS: '3', SEARCH_HISTORY_YEARS: '3' }).retentionYears).toBe(3);
  });

  it('does not put a secret value into its message', () => {
    const message = configError({ S3_SECRET_KEY: 'top-secret-value', SESSION_SECRET: 'hunter2-hunter2' });
    expect(message).not.toContain('top-secret-value');
    expect(message).not.toContain('hunter2-hunter2');
  });
});
