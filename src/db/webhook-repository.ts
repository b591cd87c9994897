import type { Queryable } from './db';
import type { ClaimedDelivery, WebhookDelivery, WebhookEndpoint, WebhookRepository } from '../domain/webhooks/webhook-service';
import { isoTime } from './columns';

const ENDPOINT_COLUMNS = `id, company_id, url, ${isoTime('created_at')} AS created_at`;

/** Webhook endpoints and the deliveries outbox (migration 0005_webhooks.sql). */
export function createWebhookRepository(db: Queryable): WebhookRepository {
  return {
    async insertEndpoint({ companyId, url, secret, createdByUserId }) {
      const rows = await db.query<WebhookEndpoint>(
        `INSERT INTO webhook_endpoints (company_id, url, secret, created_by_user_id) VALUES ($1, $2, $3, $4) RETURNING ${ENDPOINT_COLUMNS}`,
        [companyId, url, secret, createdByUserId ?? null],
      );
      return rows[0]!;
    },

    async listEndpoints(companyId) {
      return db.query<WebhookEndpoint>(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE company_id = $1 ORDER BY created_at DESC, id DESC LIMIT 100`,
        [companyId],
      );
    },

    async deleteEndpoint(companyId, id) {
      const rows = await db.query<{ url: string }>('DELETE FROM webhook_endpoints WHERE id = $1 AND company_id = $2 RETURNING url', [
        id,
        companyId,
      ]);
      return rows[0]?.url;
    },

    async insertEvent({ companyId, eventKey, eventId, eventType, body }) {
      // Set-based: one statement writes a delivery for every endpoint of the company.
      const rows = await db.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (company_id, endpoint_id, event_key, event_id, event_type, body)
         SELECT e.company_id, e.id, $2, $3, $4, $5 FROM webhook_endpoints e WHERE e.company_id = $1
         ON CONFLICT (endpoint_id, event_key) DO NOTHING
         RETURNING id`,
        [companyId, eventKey, eventId, eventType, body],
      );
      return rows.length;
    },

    async listDeliveries(companyId, limit) {
      return db.query<WebhookDelivery>(
        `SELECT d.id, d.endpoint_id, e.url, d.event_id, d.event_type, d.status, d.attempts, d.last_status_code, d.last_error,
                CASE WHEN d.status = 'pending' THEN ${isoTime('d.next_attempt_at')} END AS next_attempt_at,
                ${isoTime('d.created_at')} AS created_at, ${isoTime('d.finished_at')} AS finished_at,
                CASE WHEN d.event_type LIKE 'import.%' THEN d.body::jsonb #>> '{data,id}' END AS import_id
           FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.company_id = d.company_id
          WHERE d.company_id = $1
          ORDER BY d.created_at DESC, d.id DESC
          LIMIT $2`,
        [companyId, limit],
      );
    },

    async endpointTarget(companyId, id) {
      const rows = await db.query<{ url: string; secret: string; previousSecret: string | null; previousSecretUntil: string | null }>(
        `SELECT url, secret, previous_secret AS "previousSecret", ${isoTime('previous_secret_until')} AS "previousSecretUntil"
           FROM webhook_endpoints WHERE company_id = $1 AND id = $2`,
        [companyId, id],
      );
      return rows[0];
    },

    /**
     * Internal (the deliverer): due deliveries of any company. SKIP LOCKED lets several
     * deliverers claim side by side; the lease (locked_until) keeps a claimed one off the others
     * until it is settled, or until the lease runs out when its deliverer died mid-attempt.
     */
    async rotateSecret(companyId, id, secret, previousUntil) {
      const rows = await db.query<{ url: string; companyId: string }>(
        `UPDATE webhook_endpoints SET previous_secret = secret, secret = $3, previous_secret_until = $4::timestamptz
          WHERE ($1::uuid IS NULL OR company_id = $1::uuid) AND id = $2 RETURNING url, company_id AS "companyId"`,
        [companyId, id, secret, previousUntil],
      );
      return rows[0];
    },

    async claimDue(limit, leaseSeconds) {
      const rows = await db.query<{
        id: string;
        url: string;
        secret: string;
        previous_secret: string | null;
        previous_secret_until: string | null;
        body: string;
        event_type: string;
        attempts: number;
      }>(
        `WITH due AS (
           SELECT id FROM webhook_deliveries
            WHERE status = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
            ORDER BY next_attempt_at
            LIMIT $1
            FOR UPDATE SKIP LOCKED
         )
         UPDATE webhook_deliveries d
            SET locked_until = now() + make_interval(secs => $2::int), attempts = d.attempts + 1
           FROM due, webhook_endpoints e
          WHERE d.id = due.id AND e.id = d.endpoint_id AND e.company_id = d.company_id
         RETURNING d.id, e.url, e.secret, e.previous_secret, ${isoTime('e.previous_secret_until')} AS previous_secret_until,
                   d.body, d.event_type, d.attempts`,
        [limit, leaseSeconds],
      );
      return rows.map((r): ClaimedDelivery => ({
        id: r.id,
        url: r.url,
        secret: r.secret,
        previousSecret: r.previous_secret,
        previousSecretUntil: r.previous_secret_until,
        body: r.body,
        eventType: r.event_type,
        attempts: r.attempts,
      }));
    },

    async settle(id, { status, statusCode, error, retryInSeconds }) {
      await db.query(
        `UPDATE webhook_deliveries
            SET status = $2, last_status_code = $3, last_error = $4, locked_until = NULL,
                next_attempt_at = CASE WHEN $2 = 'pending' THEN now() + make_interval(secs => $5::int) ELSE next_attempt_at END,
                finished_at = CASE WHEN $2 = 'pending' THEN NULL ELSE now() END
          WHERE id = $1 AND status = 'pending'`,
        [id, status, statusCode, error, retryInSeconds ?? 0],
      );
    },
  };
}
