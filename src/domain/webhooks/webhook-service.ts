import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';

import { CLI_ACTOR, NO_ORIGIN, type AuditActor, type AuditOrigin, type AuditRepository } from '../audit/audit';
import { AppError, validationError } from '../errors';
import { answerTime } from '../dates';
import { isUuid } from '../ids';
import { isPrivateAddress } from './addresses';

/** The events a company can receive. */
export const WEBHOOK_EVENTS = ['import.completed', 'import.failed', 'import.cancelled', 'alerts.created'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export type WebhookEndpoint = { id: string; company_id: string; url: string; created_at: string };
export type WebhookDelivery = {
  id: string;
  endpoint_id: string;
  url: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  finished_at: string | null;
  /** The import an import.* event is about. */
  import_id: string | null;
};
/** A delivery taken by a deliverer for one attempt (its lease keeps others off it meanwhile). */
export type ClaimedDelivery = {
  id: string;
  url: string;
  secret: string;
  /** The secret a rotation replaced, and until when (ISO 8601) deliveries are signed with it too. */
  previousSecret: string | null;
  previousSecretUntil: string | null;
  body: string;
  eventType: string;
  attempts: number;
};

/** After a secret's rotation, deliveries carry a signature with the old secret too for this long. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000;

/** The secrets a delivery is signed with at `nowMs`: the endpoint's, and the one it replaced while that is still honoured. */
export function signingSecrets(d: Pick<ClaimedDelivery, 'secret' | 'previousSecret' | 'previousSecretUntil'>, nowMs: number): string[] {
  return d.previousSecret !== null && d.previousSecretUntil !== null && nowMs < Date.parse(d.previousSecretUntil)
    ? [d.secret, d.previousSecret]
    : [d.secret];
}

/** The outbox half of the repository: what a status change's transaction writes. */
export interface WebhookOutbox {
  /** One delivery per endpoint of the company; a second write of the same event key is a no-op. */
  insertEvent(event: { companyId: string; eventKey: string; eventId: string; eventType: string; body: string }): Promise<number>;
}

/** What the webhook rules need of storage (src/db/webhook-repository.ts implements it). */
export interface WebhookRepository extends WebhookOutbox {
  insertEndpoint(e: { companyId: string; url: string; secret: string; createdByUserId?: string | null }): Promise<WebhookEndpoint>;
  listEndpoints(companyId: string): Promise<WebhookEndpoint[]>;
  /** Deletes one of the company's endpoints; its url, or undefined when there was none. */
  deleteEndpoint(companyId: string, id: string): Promise<string | undefined>;
  listDeliveries(companyId: string, limit: number): Promise<WebhookDelivery[]>;
  /** The address and signing secret of one of the company's endpoints (for a test event). */
  endpointTarget(
    companyId: string,
    id: string,
  ): Promise<{ url: string; secret: string; previousSecret: string | null; previousSecretUntil: string | null } | undefined>;
  /**
   * Replaces an endpoint's secret by `secret` (of the company's endpoints; null: any company's, the
   * command line), keeping the one it replaces as the previous secret until `previousUntil` (ISO
   * 8601); its url and company, or undefined when there is none.
   */
  rotateSecret(
    companyId: string | null,
    id: string,
    secret: string,
    previousUntil: string,
  ): Promise<{ url: string; companyId: string } | undefined>;
  /** Takes up to `limit` due deliveries for `leaseSeconds`, counting the attempt. */
  claimDue(limit: number, leaseSeconds: number): Promise<ClaimedDelivery[]>;
  /** Records an attempt's result: delivered, to be retried after `retryInSeconds`, or failed for good. */
  settle(
    id: string,
    result: { status: 'delivered' | 'pending' | 'failed'; statusCode: number | null; error: string | null; retryInSeconds?: number },
  ): Promise<void>;
}

export const webhookMessages = {
  url: 'The url must be a valid URL.',
  https: 'The url must use https.',
  credentials: 'The url must not contain a user name or password.',
  privateTarget: 'The url must not point to a loopback, private or link-local address.',
  tooLong: 'The url may not be greater than 2000 characters.',
  notFound: 'Webhook not found.',
} as const;

/**
 * Writes an event to the outbox inside the caller's transaction (`tx` is that transaction's
 * repositories): it is delivered only if the status change commits, and is never lost once it has.
 * `key` makes a repeated write of the same event (a job that reports a failure twice) a no-op.
 */
export async function enqueueWebhookEvent(
  tx: { webhooks: WebhookOutbox },
  event: { companyId: string; type: WebhookEventType; payload: unknown; key?: string },
): Promise<void> {
  const eventId = randomUUID();
  const body = JSON.stringify({
    id: eventId,
    type: event.type,
    created_at: answerTime(new Date()),
    data: event.payload,
  });
  await tx.webhooks.insertEvent({ companyId: event.companyId, eventKey: event.key ?? eventId, eventId, eventType: event.type, body });
}

/**
 * `Claims-Signature` of a body: `t=<unix seconds>,v1=<hex HMAC-SHA-256 of "<t>.<body>">`, one
 * `v1` per secret (during a rotation's 24 hours: the new secret's, then the old one's).
 */
export function signatureHeader(secrets: string | readonly string[], body: string, unixSeconds: number): string {
  const macs = (typeof secrets === 'string' ? [secrets] : secrets).map(
    (secret) => `v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`,
  );
  return `t=${unixSeconds},${macs.join(',')}`;
}

/**
 * Seconds until the next attempt after `attempts` failed ones, or undefined when none is left (the
 * delivery is then failed for good). The schedule is WEBHOOK_RETRY_SCHEDULE (src/config.ts).
 */
export function nextRetryIn(schedule: readonly number[], attempts: number): number | undefined {
  return schedule[attempts - 1];
}

/** Checks a webhook URL as a company gives it (the address it resolves to is checked at each delivery). */
export function checkWebhookUrl(raw: unknown, allowPrivate: boolean): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw validationError({ url: ['The url field is required.'] });
  const text = raw.trim();
  if (text.length > 2000) throw validationError({ url: [webhookMessages.tooLong] });
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw validationError({ url: [webhookMessages.url] });
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw validationError({ url: [webhookMessages.https] });
  if (url.username || url.password) throw validationError({ url: [webhookMessages.credentials] });
  const host = url.hostname.replace(/^\[|\]$/gu, '');
  if (!allowPrivate && (host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) !== 0 && isPrivateAddress(host)))) {
    throw validationError({ url: [webhookMessages.privateTarget] });
  }
  return url.toString();
}

/** One signed POST, now, outside the outbox: the answer's status code, or why there was none. */
export type SendOnce = (d: ClaimedDelivery) => Promise<{ ok: boolean; statusCode: number | null; error?: string }>;

/** Who acts on a webhook, for its audit event (default: the command line). */
export type WebhookActBy = { actor?: AuditActor; origin?: AuditOrigin; userId?: string | null };
type WebhookTx = { webhooks: WebhookRepository; audit: Pick<AuditRepository, 'record'> };

const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

export function createWebhookService(deps: {
  webhooks: WebhookRepository;
  /** Runs an act and its audit event in one transaction. */
  transaction: <T>(fn: (tx: WebhookTx) => Promise<T>) => Promise<T>;
  allowPrivate: boolean;
  sendOnce?: SendOnce;
  /** The service's clock (ms): when a rotated secret stops being honoured. */
  now: () => number;
}) {
  const { webhooks, allowPrivate } = deps;
  const audit = (
    tx: WebhookTx,
    companyId: string,
    action: 'webhook.created' | 'webhook.deleted' | 'webhook.secret_rotated',
    id: string,
    url: string,
    by: WebhookActBy,
  ) => {
    const origin = by.origin ?? NO_ORIGIN;
    return tx.audit.record({
      companyId,
      action,
      actor: by.actor ?? CLI_ACTOR,
      target: { type: 'webhook', id, name: url },
      ip: origin.ip,
      requestId: origin.requestId,
    });
  };
  return {
    /** A new endpoint, with its audit event; its secret is returned here only. */
    async createEndpoint(companyId: string, rawUrl: unknown, by: WebhookActBy = {}): Promise<WebhookEndpoint & { secret: string }> {
      const url = checkWebhookUrl(rawUrl, allowPrivate);
      const secret = newSecret();
      const endpoint = await deps.transaction(async (tx) => {
        const e = await tx.webhooks.insertEndpoint({ companyId, url, secret, createdByUserId: by.userId ?? null });
        await audit(tx, companyId, 'webhook.created', e.id, e.url, by);
        return e;
      });
      return { ...endpoint, secret };
    },
    listEndpoints: (companyId: string) => webhooks.listEndpoints(companyId),
    async deleteEndpoint(companyId: string, id: string, by: WebhookActBy = {}): Promise<void> {
      const deleted =
        isUuid(id) &&
        (await deps.transaction(async (tx) => {
          const url = await tx.webhooks.deleteEndpoint(companyId, id);
          if (url !== undefined) await audit(tx, companyId, 'webhook.deleted', id, url, by);
          return url !== undefined;
        }));
      if (!deleted) throw new AppError('NOT_FOUND', webhookMessages.notFound);
    },
    listDeliveries: (companyId: string, limit = 50) => webhooks.listDeliveries(companyId, limit),

    /**
     * A new signing secret for one of the company's endpoints, with its audit event; returned here
     * only. For 24 hours (the service's clock) deliveries carry a signature with the old secret
     * too, so that the receiver can switch without losing one.
     */
    async rotateSecret(
      companyId: string | null,
      id: string,
      by: WebhookActBy = {},
    ): Promise<{ id: string; company_id: string; url: string; secret: string; previous_valid_until: string }> {
      const secret = newSecret();
      const until = new Date(deps.now() + PREVIOUS_SECRET_MS).toISOString();
      const rotated =
        isUuid(id) &&
        (await deps.transaction(async (tx) => {
          const r = await tx.webhooks.rotateSecret(companyId, id, secret, until);
          if (r !== undefined) await audit(tx, r.companyId, 'webhook.secret_rotated', id, r.url, by);
          return r;
        }));
      if (!rotated) throw new AppError('NOT_FOUND', webhookMessages.notFound);
      return { id, company_id: rotated.companyId, url: rotated.url, secret, previous_valid_until: until };
    },

    /**
     * Sends a signed `ping` event to one of the company's endpoints at once, signed and sent as
     * deliveries are, and returns the answer. Not stored and not retried: it tests the receiver.
     */
    async sendTestEvent(companyId: string, id: string) {
      const target = isUuid(id) ? await webhooks.endpointTarget(companyId, id) : undefined;
      if (!target || !deps.sendOnce) throw new AppError('NOT_FOUND', webhookMessages.notFound);
      const eventId = randomUUID();
      const body = JSON.stringify({
        id: eventId,
        type: 'ping',
        created_at: answerTime(new Date()),
        data: { endpoint_id: id },
      });
      return deps.sendOnce({ id: eventId, body, eventType: 'ping', attempts: 0, ...target });
    },
  };
}
export type WebhookService = ReturnType<typeof createWebhookService>;
