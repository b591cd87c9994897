import { webhookMessages } from '../domain/webhooks/webhook-service';

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
