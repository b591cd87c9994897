import { messages } from '../domain/claims/claim';
import { isIsoDate } from '../domain/dates';
import type { FieldErrors } from '../domain/errors';
import { webhookMessages } from '../domain/webhooks/webhook-service';

/**
 * The dashboard's wording of a few domain messages. The API's messages are pinned by its contract
 * and its clients; a person at a form gets a message about what they typed instead.
 */

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

/** "1990-02-30" written correctly but not on the calendar: says so, and how many days the month has. */
export function impossibleDateMessage(fieldLabel: string, value: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/u.exec(value);
  if (!m || isIsoDate(value)) return undefined;
  const [year, month] = [Number(m[1]), Number(m[2])];
  if (month < 1 || month > 12) return `The ${fieldLabel} ${value} does not exist: there is no month ${m[2]}.`;
  return `The ${fieldLabel} ${value} does not exist: ${MONTHS[month - 1]} ${year} has ${daysIn(year, month)} days.`;
}

/** Replaces the format message of the given date fields by impossibleDateMessage where it applies. */
export function withDateMessages(errors: FieldErrors, values: Record<string, string>): FieldErrors {
  const out: FieldErrors = { ...errors };
  for (const [field, value] of Object.entries(values)) {
    const better = impossibleDateMessage(messages.label(field), value);
    const list = out[field];
    if (better && list) out[field] = list.map((message) => (message === messages.date(field) ? better : message));
  }
  return out;
}

const WEBHOOK_URL_MESSAGES: Record<string, string> = {
  [webhookMessages.url]: 'Enter the endpoint URL as a full web address, such as https://claims.example.com/hooks/registry.',
  [webhookMessages.https]: 'The endpoint URL must start with https:// (an encrypted connection).',
  [webhookMessages.credentials]: 'The endpoint URL must not contain a user name or password.',
  [webhookMessages.privateTarget]: 'The endpoint URL must be an address on the internet, not a loopback, private or link-local one.',
  [webhookMessages.tooLong]: 'The endpoint URL must not be longer than 2,000 characters.',
};

export const webhookUrlMessage = (message: string) => WEBHOOK_URL_MESSAGES[message] ?? message;

export const noFileChosen = 'Choose a CSV file to upload: no file was chosen.';
