import { webhookMessages, type WebhookEventType } from '../domain/webhooks/webhook-service';

/**
 * The dashboard's wording of a few domain messages. The API's messages are pinned by its contract
 * and its clients; a person at a form gets a message about what they typed instead.
 */

const WEBHOOK_URL_MESSAGES: Record<string, string> = {
  [webhookMessages.url]: 'Enter the endpoint URL as a full web address, such as https://claims.example.com/hooks/registry.',
  [webhookMessages.https]: 'The endpoint URL must start with https:// (an encrypted connection).',
  [webhookMessages.credentials]: 'The endpoint URL must not contain a user name or password.',
  [webhookMessages.privateTarget]: 'The endpoint URL must be an address on the internet, not a loopback, private or link-local one.',
  [webhookMessages.tooLong]: 'The endpoint URL must not be longer than 2,000 characters.',
};

export const webhookUrlMessage = (message: string) => WEBHOOK_URL_MESSAGES[message] ?? message;

export const noFileChosen = 'Choose a CSV file to upload: no file was chosen.';

/**
 * What each webhook event tells, for Settings › Webhooks, which lists every event of
 * WEBHOOK_EVENTS: a new event type does not compile until it is worded here.
 */
export const WEBHOOK_EVENT_WORDS: Record<WebhookEventType, string> = {
  'import.completed': 'an import finished; the body has its summary (rows imported and failed)',
  'import.failed': 'an import failed for good after its retries, leaving no claim',
  'import.cancelled': 'an import was cancelled, leaving no claim',
  'alerts.created':
    'another company stored a claim on the plate or the person of one of your claims, or changed the status of a claim your company looked at (at most 100 alerts a delivery)',
};
