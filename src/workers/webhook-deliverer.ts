import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import type { Logger } from 'pino';

import { isPrivateAddress, literalAddress } from '../domain/webhooks/addresses';
import {
  nextRetryIn,
  signatureHeader,
  signingSecrets,
  type ClaimedDelivery,
  type WebhookRepository,
} from '../domain/webhooks/webhook-service';
import type { WebhookMetrics } from '../metrics';

export type WebhookDelivererOptions = {
  webhooks: Pick<WebhookRepository, 'claimDue' | 'settle'>;
  /** Deliver to loopback/private/link-local addresses and over http (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Seconds to wait after each failed attempt; after the last, the delivery fails for good. */
  retrySchedule: readonly number[];
  /** Time limit of one attempt (10 s by default). */
  timeoutMs: number;
  /** How often to look for due deliveries when there were none. */
  pollMs?: number;
  metrics?: WebhookMetrics;
  log: Logger;
  /** The service's clock (ms): the signature's time, and whether a rotated secret still signs too. */
  now: () => number;
};

class RefusedTarget extends Error {
  constructor() {
    super('The target resolves to a loopback, private or link-local address (set WEBHOOK_ALLOW_PRIVATE=true to allow it).');
    this.name = 'RefusedTarget';
  }
}

/**
 * Resolves the host for the connection itself and refuses private addresses there: the address
 * checked is the address connected to, so a DNS answer that changes in between cannot slip through.
 */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses;
      if (!allowPrivate && (list.length === 0 || list.some((a) => isPrivateAddress(a.address))))
        return callback(new RefusedTarget(), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

type AttemptResult = { ok: true; statusCode: number } | { ok: false; statusCode: number | null; error: string; refused: boolean };

/** One POST of the stored body, signed now, within the time limit. */
function post(d: ClaimedDelivery, opts: Pick<WebhookDelivererOptions, 'allowPrivate' | 'timeoutMs' | 'now'>): Promise<AttemptResult> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(d.url);
    } catch {
      return resolve({ ok: false, statusCode: null, error: 'The endpoint URL is invalid.', refused: true });
    }
    if (url.protocol !== 'https:' && !(opts.allowPrivate && url.protocol === 'http:')) {
      return resolve({ ok: false, statusCode: null, error: 'The endpoint URL must use https.', refused: true });
    }
    // A host written as an IP address is connected to without any look-up (guardedLookup never
    // runs): it is checked here, at each delivery, as a resolved address is.
    const literal = literalAddress(url.hostname);
    if (literal !== undefined && !opts.allowPrivate && isPrivateAddress(literal)) {
      return resolve({ ok: false, statusCode: null, error: new RefusedTarget().message, refused: true });
    }
    const nowMs = opts.now();
    const t = Math.floor(nowMs / 1000);
    const body = Buffer.from(d.body, 'utf8');
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(url, {
      method: 'POST',
      lookup: guardedLookup(opts.allowPrivate),
      headers: {
        'content-type': 'application/json',
        'content-length': body.length,
        'user-agent': 'claims-registry-webhooks/1',
        'claims-event': d.eventType,
        'claims-delivery': d.id,
        'claims-signature': signatureHeader(signingSecrets(d, nowMs), d.body, t),
      },
      timeout: opts.timeoutMs,
    });
    const timer = setTimeout(() => req.destroy(new Error(`No answer within ${opts.timeoutMs / 1000} s.`)), opts.timeoutMs);
    const done = (r: AttemptResult) => {
      clearTimeout(timer);
      resolve(r);
    };
    req.on('timeout', () => req.destroy(new Error(`No answer within ${opts.timeoutMs / 1000} s.`)));
    req.on('error', (err) =>
      done({
        ok: false,
        statusCode: null,
        error: err instanceof RefusedTarget ? err.message : `Request failed: ${err.message.slice(0, 200)}`,
        refused: err instanceof RefusedTarget,
      }),
    );
    req.on('response', (res) => {
      res.resume(); // the answer's body is not needed
      const status = res.statusCode ?? 0;
      res.on('end', () =>
        done(
          status >= 200 && status < 300
            ? { ok: true, statusCode: status }
            : { ok: false, statusCode: status, error: `HTTP ${status}`, refused: false },
        ),
      );
      res.on('error', () => done({ ok: false, statusCode: status, error: `HTTP ${status}, answer cut short`, refused: false }));
    });
    req.end(body);
  });
}

/** One attempt of a delivery, now (the dashboard's test event): the same checks, signature and time limit. */
export async function sendOnce(d: ClaimedDelivery, opts: Pick<WebhookDelivererOptions, 'allowPrivate' | 'timeoutMs' | 'now'>) {
  const r = await post(d, opts);
  return r.ok ? { ok: true, statusCode: r.statusCode } : { ok: false, statusCode: r.statusCode, error: r.error };
}

/**
 * Delivers the webhook outbox: claims due deliveries (with a lease a little longer than one
 * attempt), POSTs each, and records the outcome: delivered on a 2xx, else retried on the schedule
 * and then failed; a target that resolves to a private address is refused (failed at once).
 * A deliverer killed mid-attempt leaves the delivery pending; its lease runs out and the next
 * deliverer sends it (a receiver may so see an event twice: the event id tells them apart).
 */
export function startWebhookDeliverer(opts: WebhookDelivererOptions) {
  const { webhooks, retrySchedule, timeoutMs, metrics, log } = opts;
  const pollMs = opts.pollMs ?? 1000;
  const leaseSeconds = Math.ceil(timeoutMs / 1000) + 5;
  let stopped = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function attempt(d: ClaimedDelivery): Promise<void> {
    const result = await post(d, opts);
    if (result.ok) {
      await webhooks.settle(d.id, { status: 'delivered', statusCode: result.statusCode, error: null });
      metrics?.delivery('delivered');
      return;
    }
    const retryIn = result.refused ? undefined : nextRetryIn(retrySchedule, d.attempts);
    if (retryIn === undefined) {
      await webhooks.settle(d.id, { status: 'failed', statusCode: result.statusCode, error: result.error });
      metrics?.delivery(result.refused ? 'refused' : 'failed');
      log.warn(
        { deliveryId: d.id, attempts: d.attempts, statusCode: result.statusCode, refused: result.refused },
        'webhook delivery failed for good',
      );
    } else {
      await webhooks.settle(d.id, { status: 'pending', statusCode: result.statusCode, error: result.error, retryInSeconds: retryIn });
      metrics?.delivery('retry_scheduled');
      log.info(
        { deliveryId: d.id, attempts: d.attempts, statusCode: result.statusCode, retryIn },
        'webhook delivery failed; retry scheduled',
      );
    }
  }

  const loop = (async () => {
    while (!stopped) {
      let claimed: ClaimedDelivery[];
      try {
        claimed = await webhooks.claimDue(10, leaseSeconds);
        await Promise.all(
          claimed.map((d) => attempt(d).catch((err: unknown) => log.error({ err, deliveryId: d.id }, 'webhook delivery error'))),
        );
      } catch (err) {
        log.warn({ err }, 'webhook outbox unavailable; retrying');
        claimed = [];
      }
      if (claimed.length === 0 && !stopped) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, pollMs);
        });
        wake = undefined;
      }
    }
  })();

  return {
    /** Looks for due deliveries now rather than at the next poll. */
    poke() {
      wake?.();
    },
    /** Stops claiming; resolves once the attempts in progress are settled. */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}
export type WebhookDeliverer = ReturnType<typeof startWebhookDeliverer>;
