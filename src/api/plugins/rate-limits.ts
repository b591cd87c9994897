import { createRequire } from 'node:module';

import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';

import type { CompanyLimits } from '../../domain/companies/company-repository';
import { AppError } from '../../domain/errors';

/**
 * The API's abuse limits, counted by @fastify/rate-limit's stores: in this process's memory, or in
 * Redis with REDIS_URL so that every process counts against the same budgets.
 *
 * - Per API token (its id, not the header's text: `bearer csk_…` and `Bearer  csk_…` are one
 *   budget): RATE_LIMIT_PER_MINUTE, or the company's own limit (`admin company:limits`). Every
 *   answer to a token carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset.
 * - Per client address, requests with a missing, malformed or unknown token:
 *   AUTH_FAILURES_PER_MINUTE. Checked before the token is looked up: an address past its budget
 *   costs no database read, while a token this process has seen valid goes on.
 * - A batch plate look-up takes one request per plate (`takeMany`).
 *
 * In Redis, a process takes a token's requests a share at a time (a lease: a hundredth of the
 * limit, at least 1) and counts them in memory until they are spent or the minute ends, so most
 * requests cost no Redis call. A budget can so be overrun, or fall short, by at most one lease per
 * process; with a limit under 200 every request is counted in Redis.
 */

const WINDOW_MS = 60_000;
/** The start of a token's counter's key (the rest is its id). */
const TOKEN_KEY = 'token:';
/** The start of a company's counter's key, for all its tokens and its dashboard searches together. */
const COMPANY_KEY = 'company:';
/** The counters taken from Redis a lease at a time (the busy ones). */
const leased = (key: string) => key.startsWith(TOKEN_KEY) || key.startsWith(COMPANY_KEY);
/** The request's token and company limits, handed from countRequest to the limiters' `max`. */
const LIMIT = Symbol('rateLimitMax');
const COMPANY_LIMIT = Symbol('companyRateLimitMax');
const COMPANY_LIMIT_OF = Symbol('companyRateLimitKey');
/** How often the companies' own limits are read again (`admin company:limits` takes effect within this). */
const COMPANY_LIMITS_REFRESH_MS = 10_000;

type Counted = { current: number; ttl: number };
type StoreCallback = (err: Error | null, res: Counted) => void;
/** @fastify/rate-limit's store contract (LocalStore, RedisStore). */
type PluginStore = {
  incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void;
  read(key: string, cb: StoreCallback, timeWindow: number, max: number): void;
};
type StoreConstructor = {
  new (continueExceeding: boolean, exponentialBackoff: boolean, ...rest: unknown[]): PluginStore;
};

// The plugin's own stores (its package exports them as files, without types).
const requireHere = createRequire(import.meta.url);
const LocalStore = requireHere('@fastify/rate-limit/store/LocalStore.js') as StoreConstructor;
const RedisStore = requireHere('@fastify/rate-limit/store/RedisStore.js') as StoreConstructor;

/** Adds `n` to a counter at once if that keeps it within `max`, in one Redis call (the store's key and window). */
const TAKE_MANY_LUA = `
  local current = tonumber(redis.call('GET', KEYS[1]) or '0')
  local n = tonumber(ARGV[2])
  if current + n > tonumber(ARGV[3]) then
    local ttl = redis.call('PTTL', KEYS[1])
    return {current, ttl, 0}
  end
  current = redis.call('INCRBY', KEYS[1], n)
  if current == n then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
  return {current, redis.call('PTTL', KEYS[1]), 1}`;

/** Adds n to a counter (its window starting with it), in one Redis call: the count and the window's time left. */
const LEASE_LUA = `
  local current = redis.call('INCRBY', KEYS[1], ARGV[2])
  if current == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
  return {current, redis.call('PTTL', KEYS[1])}`;
/** The requests of a token a process takes from Redis at once: this share of its limit. */
const LEASE_SHARE = 100;
const leaseSize = (max: number) => Math.max(1, Math.floor(max / LEASE_SHARE));
/** Counts `next` up to `last` (requests of the budget this process may number) until `until` (ms). */
type Lease = { next: number; last: number; until: number };

/** A token's counter taken from Redis a lease at a time (see the top of this file); one Redis call at a time per key. */
function leasedCounter(redis: Redis, namespace: string) {
  const leases = new Map<string, Lease>();
  const taking = new Map<string, Promise<void>>();
  const take = async (key: string, n: number) => {
    const [current, ttl] = (await redis.eval(LEASE_LUA, 1, namespace + key, WINDOW_MS, n)) as [number, number];
    leases.set(key, { next: current - n + 1, last: current, until: Date.now() + Math.max(0, ttl) });
  };
  return async (key: string, max: number): Promise<Counted> => {
    for (;;) {
      const now = Date.now();
      const lease = leases.get(key);
      if (lease && lease.until > now && lease.next <= lease.last) return { current: lease.next++, ttl: lease.until - now };
      if (lease) leases.delete(key);
      let pending = taking.get(key);
      if (!pending) {
        pending = take(key, leaseSize(max)).finally(() => taking.delete(key));
        taking.set(key, pending);
      }
      await pending;
    }
  };
}

/**
 * The store handed to @fastify/rate-limit: its LocalStore or RedisStore, one for every limiter
 * (the keys say which budget), and `takeMany` for the batch look-up.
 */
function countingStore(redis: Redis | undefined, namespace: string) {
  const inner: PluginStore = redis ? new RedisStore(false, false, redis, namespace) : new LocalStore(false, false, 50_000);
  const lease = redis && leasedCounter(redis, namespace);
  const call = (method: 'incr' | 'read', key: string, max: number) =>
    new Promise<Counted>((resolve, reject) => inner[method](key, (err, res) => (err ? reject(err) : resolve(res)), WINDOW_MS, max));
  return {
    incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void {
      if (!lease || !leased(key)) return inner.incr(key, cb, timeWindow, max);
      lease(key, max).then(
        (counted) => cb(null, counted),
        (err: Error) => cb(err, { current: 0, ttl: 0 }),
      );
    },
    read: inner.read.bind(inner),
    child() {
      return this;
    },
    /** Takes `n` requests of the budget `key` at once, or none when fewer than `n` remain. */
    async takeMany(key: string, n: number, max: number): Promise<Counted & { taken: boolean }> {
      if (redis) {
        const r = (await redis.eval(TAKE_MANY_LUA, 1, namespace + key, WINDOW_MS, n, max)) as [number, number, number];
        return { current: r[0], ttl: Math.max(0, r[1]), taken: r[2] === 1 };
      }
      const now = await call('read', key, max);
      if (now.current + n > max) return { ...now, taken: false };
      let last = now;
      for (let i = 0; i < n; i++) last = await call('incr', key, max);
      return { ...last, taken: true };
    },
  };
}

export type RateLimits = {
  /** 429 when the request's address has used up its budget of failed authentications (no database read). */
  refuseFailingAddress(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** Counts a failed authentication of the request's address, with that budget's RateLimit headers. */
  countFailure(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** The RateLimit headers of the address's failure budget, without counting (an expired token's 401). */
  failureHeaders(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /**
   * Counts a request of the authenticated token against its own budget and its company's, sets
   * the RateLimit headers of whichever has less left; 429 past either.
   */
  countRequest(request: FastifyRequest, reply: FastifyReply, opts?: { increment?: boolean }): Promise<void>;
  /** Counts `n` requests of the authenticated token (and its company) at once (a batch look-up's plates); 429 when they do not fit. */
  countMany(request: FastifyRequest, reply: FastifyReply, n: number): Promise<void>;
  /** Counts a signed-in person's dashboard request (SESSION_RATE_LIMIT_PER_MINUTE); 429 past it. */
  countSession(request: FastifyRequest, reply: FastifyReply, userId: string): Promise<void>;
  /** Counts a dashboard search against its company's budget, as the API's are; 429 past it. */
  countCompany(request: FastifyRequest, reply: FastifyReply, companyId: string): Promise<void>;
  /** Reads the companies' own limits now (they are read every 10 seconds anyway). */
  refreshCompanyLimits(): Promise<void>;
};

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits;
  }
  interface FastifyContextConfig {
    /** The route counts its requests itself, one per plate (the batch look-up), not one per request. */
    countsPerPlate?: boolean;
  }
}

const limited = (message = 'Too many requests. Try again later.') => new AppError('TOO_MANY_REQUESTS', message, undefined, 'rate_limited');

export const rateLimitsPlugin = fp(
  async (app: FastifyInstance) => {
    const { config, companies } = app.deps;
    let redis: Redis | undefined;
    if (config.redisUrl) {
      const { Redis: RedisClient } = await import('ioredis');
      // No offline queue: while Redis is unreachable a count fails at once and is skipped (skipOnError below).
      redis = new RedisClient(config.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: false, lazyConnect: false });
      redis.on('error', (err) => app.log.warn({ err }, 'rate limit counters: Redis error'));
      app.addHook('onClose', async () => {
        await redis!.quit().catch(() => redis!.disconnect());
      });
    }
    const counters = countingStore(redis, `${config.queuePrefix}:rate-limit:`);
    await app.register(rateLimit, {
      global: false,
      // Redis unreachable: the counters are skipped (logged by the client) rather than every
      // request answered 500; the limits hold again as soon as it answers.
      skipOnError: true,
      store: class {
        constructor() {
          return counters;
        }
      } as never,
    });

    // The companies' own limits (few rows), read at start and every COMPANY_LIMITS_REFRESH_MS: no
    // request waits for a read of them.
    let companyLimits = new Map<string, CompanyLimits>();
    const refresh = async () => {
      try {
        companyLimits = await companies.rateLimits();
      } catch (err) {
        app.log.warn({ err }, "could not read the companies' rate limits; the ones read before stay in use");
      }
    };
    const timer = setInterval(() => void refresh(), COMPANY_LIMITS_REFRESH_MS);
    timer.unref();
    app.addHook('onReady', refresh);
    app.addHook('onClose', async () => clearInterval(timer));
    const limitOf = (companyId: string): number => companyLimits.get(companyId)?.perToken ?? config.rateLimitPerMinute;
    const companyLimitOf = (companyId: string): number => companyLimits.get(companyId)?.perCompany ?? config.companyRateLimitPerMinute;

    const failures = app.createRateLimit({
      max: config.authFailuresPerMinute,
      timeWindow: WINDOW_MS,
      keyGenerator: (request) => `auth-failures:${request.ip}`,
    });
    const perToken = app.createRateLimit({
      // Read once per request by limitOf in countRequest and handed over on the request.
      max: (request) => (request as FastifyRequest & { [LIMIT]?: number })[LIMIT] ?? config.rateLimitPerMinute,
      timeWindow: WINDOW_MS,
      keyGenerator: (request) => `${TOKEN_KEY}${request.principal.tokenId ?? request.principal.userId}`,
    });
    const perCompany = app.createRateLimit({
      max: (request) => (request as FastifyRequest & { [COMPANY_LIMIT]?: number })[COMPANY_LIMIT] ?? config.companyRateLimitPerMinute,
      timeWindow: WINDOW_MS,
      keyGenerator: (request) => `${COMPANY_KEY}${(request as FastifyRequest & { [COMPANY_LIMIT_OF]?: string })[COMPANY_LIMIT_OF]}`,
    });
    const perPerson = app.createRateLimit({
      max: config.sessionRateLimitPerMinute,
      timeWindow: WINDOW_MS,
      keyGenerator: (request) => `person:${request.webUser?.id ?? request.ip}`,
    });
    type Budget = { max: number; remaining: number; ttlInSeconds: number; isExceeded: boolean };
    type Checked = Awaited<ReturnType<typeof perToken>>;
    /** A limiter's answer as a budget (an allow-listed request has all of it left). */
    const budgetOf = (max: number, r: Checked): Budget =>
      r.isAllowed ? { max, remaining: max, ttlInSeconds: WINDOW_MS / 1000, isExceeded: false } : { ...r, max };
    /** The company's budget: the request carries which company and its limit to the limiter. */
    const countCompanyOf = async (request: FastifyRequest, companyId: string, increment: boolean): Promise<Budget | undefined> => {
      const max = companyLimitOf(companyId);
      if (max === 0) return undefined;
      const r = request as FastifyRequest & { [COMPANY_LIMIT]?: number; [COMPANY_LIMIT_OF]?: string };
      r[COMPANY_LIMIT] = max;
      r[COMPANY_LIMIT_OF] = companyId;
      return budgetOf(max, await perCompany(request, { increment }));
    };

    const setHeaders = (reply: FastifyReply, max: number, remaining: number, resetSeconds: number) => {
      reply.header('ratelimit-limit', max);
      reply.header('ratelimit-remaining', Math.max(0, remaining));
      reply.header('ratelimit-reset', resetSeconds);
    };
    const refuse = (reply: FastifyReply, resetSeconds: number, message?: string): never => {
      reply.header('retry-after', Math.max(1, resetSeconds));
      throw limited(message);
    };

    const limits: RateLimits = {
      async refuseFailingAddress(request, reply) {
        if (config.authFailuresPerMinute === 0) return;
        const r = await failures(request, { increment: false });
        if (!r.isAllowed && r.remaining <= 0) refuse(reply, r.ttlInSeconds);
      },
      async countFailure(request, reply) {
        if (config.authFailuresPerMinute === 0) return;
        const r = await failures(request);
        if (!r.isAllowed) setHeaders(reply, config.authFailuresPerMinute, r.remaining, r.ttlInSeconds);
      },
      async failureHeaders(request, reply) {
        if (config.authFailuresPerMinute === 0) return;
        const r = await failures(request, { increment: false });
        if (!r.isAllowed) setHeaders(reply, config.authFailuresPerMinute, r.remaining, r.ttlInSeconds);
      },
      async countRequest(request, reply, opts = {}) {
        const increment = opts.increment !== false;
        const counted: Budget[] = [];
        const max = limitOf(request.principal.companyId);
        if (max !== 0) {
          (request as FastifyRequest & { [LIMIT]?: number })[LIMIT] = max;
          counted.push(budgetOf(max, await perToken(request, { increment })));
        }
        const company = await countCompanyOf(request, request.principal.companyId, increment);
        if (company) counted.push(company);
        if (counted.length === 0) return;
        // The headers of whichever budget has less left (DECISIONS, "Limits everywhere").
        const tightest = counted.reduce((a, b) => (b.remaining < a.remaining ? b : a));
        setHeaders(reply, tightest.max, tightest.remaining, tightest.ttlInSeconds);
        const over = counted.find((c) => c.isExceeded || (!increment && c.remaining <= 0));
        if (over) refuse(reply, over.ttlInSeconds);
      },
      async countSession(request, reply, _userId) {
        if (config.sessionRateLimitPerMinute === 0) return;
        const r = await perPerson(request);
        if (!r.isAllowed && r.isExceeded)
          refuse(reply, r.ttlInSeconds, 'Too many requests from your session. Wait a minute, then try again.');
      },
      async countCompany(request, reply, companyId) {
        const r = await countCompanyOf(request, companyId, true);
        if (r?.isExceeded)
          refuse(reply, r.ttlInSeconds, "Your company's searches have passed its limit for this minute. Wait a minute, then try again.");
      },
      async countMany(request, reply, n) {
        const { companyId } = request.principal;
        const budgets = [
          { who: 'this token', key: `${TOKEN_KEY}${request.principal.tokenId ?? request.principal.userId}`, max: limitOf(companyId) },
          { who: 'your company', key: `${COMPANY_KEY}${companyId}`, max: companyLimitOf(companyId) },
        ].filter((b) => b.max !== 0);
        let tightest: { max: number; remaining: number; reset: number } | undefined;
        // The token's budget, then the company's: a batch the company's refuses has still used the token's.
        for (const b of budgets) {
          let r: Counted & { taken: boolean };
          try {
            r = await counters.takeMany(b.key, n, b.max);
          } catch (err) {
            // As the other limiters (skipOnError): an unreachable Redis does not refuse the batch.
            request.log.warn({ err }, 'rate limit counters unavailable; the batch is not counted');
            return;
          }
          const counted = { max: b.max, remaining: b.max - r.current, reset: Math.ceil(r.ttl / 1000) };
          if (!tightest || counted.remaining < tightest.remaining) tightest = counted;
          if (r.taken) continue;
          setHeaders(reply, counted.max, counted.remaining, counted.reset);
          if (n > b.max) {
            reply.header('retry-after', Math.max(1, counted.reset));
            throw limited(`This batch has ${n} plates; each counts as a request, and ${b.who} may make ${b.max} a minute.`);
          }
          refuse(reply, counted.reset);
        }
        if (tightest) setHeaders(reply, tightest.max, tightest.remaining, tightest.reset);
      },
      refreshCompanyLimits: refresh,
    };
    app.decorate('rateLimits', limits);
  },
  { name: 'rate-limits', dependencies: ['error-handler'] },
);
