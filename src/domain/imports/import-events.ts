import { enqueueWebhookEvent, type WebhookEventType, type WebhookOutbox } from '../webhooks/webhook-service';
import type { ImportRecord } from './ports';

/**
 * The webhook outbox's side of an import: every move into completed, failed or cancelled writes
 * its event in the same transaction (import-service's `onTerminal`), so none is announced that
 * did not happen and none is lost. `resource`: the import as the API shows it (src/api/import-resource.ts).
 */
export const announceImportOutcome = (tx: { webhooks: WebhookOutbox }, run: ImportRecord, resource: unknown): Promise<void> =>
  enqueueWebhookEvent(tx, {
    companyId: run.companyId,
    type: `import.${run.status}` as WebhookEventType,
    key: `import.${run.status}:${run.id}`,
    payload: resource,
  });
