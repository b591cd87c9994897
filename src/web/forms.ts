import type { FieldErrors } from '../domain/errors';

export type FormBody = Record<string, unknown>;

/** A single text value of a urlencoded form: the first one if repeated, trimmed; '' when absent. */
export function text(form: FormBody | undefined, name: string, max = 1000): string {
  const raw = form?.[name];
  const value: unknown = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === 'string' ? value.trim().slice(0, max) : '';
}

const orUndefined = (v: string) => (v === '' ? undefined : v);

/** The fields of the "Enter a claim" form, as the page re-shows them after an error (never a document number). */
export type ClaimFormValues = {
  first_name: string;
  last_name: string;
  date_of_birth: string;
  doc0_type: string;
  doc1_type: string;
  claim_date: string;
  vehicle_registration: string;
  claim_type: string;
  amount: string;
  is_at_fault: string;
  status: string;
};

export const emptyClaimForm = (today: string): ClaimFormValues => ({
  first_name: '',
  last_name: '',
  date_of_birth: '',
  doc0_type: 'passport',
  doc1_type: '',
  claim_date: today,
  vehicle_registration: '',
  claim_type: '',
  amount: '',
  is_at_fault: '',
  status: 'filed',
});

/**
 * Turns the form into the JSON shape of POST /api/v1/claims, so the same schema and rules run
 * (src/domain/claims/claim-schema.ts; no limit is repeated here: a value is only cut at text()'s
 * bound, far above any of the schema's) and their dotted field paths (client.first_name,
 * client.id_documents.0.number) point at inputs. The second document is sent only when one of its
 * fields is filled, so indexes stay aligned.
 */
export function claimBodyFromForm(form: FormBody | undefined): { body: Record<string, unknown>; values: ClaimFormValues } {
  const values: ClaimFormValues = {
    first_name: text(form, 'client.first_name'),
    last_name: text(form, 'client.last_name'),
    date_of_birth: text(form, 'client.date_of_birth'),
    doc0_type: text(form, 'client.id_documents.0.type'),
    doc1_type: text(form, 'client.id_documents.1.type'),
    claim_date: text(form, 'claim_date'),
    vehicle_registration: text(form, 'vehicle_registration'),
    claim_type: text(form, 'claim_type'),
    amount: text(form, 'amount'),
    is_at_fault: text(form, 'is_at_fault'),
    status: text(form, 'status'),
  };
  const doc0Number = text(form, 'client.id_documents.0.number');
  const doc1Number = text(form, 'client.id_documents.1.number');
  const documents: Record<string, unknown>[] = [{ type: orUndefined(values.doc0_type), number: orUndefined(doc0Number) }];
  if (values.doc1_type !== '' || doc1Number !== '')
    documents.push({ type: orUndefined(values.doc1_type), number: orUndefined(doc1Number) });
  const body: Record<string, unknown> = {
    client: {
      first_name: orUndefined(values.first_name),
      last_name: orUndefined(values.last_name),
      date_of_birth: orUndefined(values.date_of_birth),
      id_documents: documents,
    },
    claim_date: orUndefined(values.claim_date),
    vehicle_registration: orUndefined(values.vehicle_registration),
    claim_type: orUndefined(values.claim_type),
    amount: orUndefined(values.amount),
    is_at_fault: values.is_at_fault === 'true' ? true : values.is_at_fault === 'false' ? false : undefined,
    status: orUndefined(values.status),
  };
  return { body, values };
}

/** Field errors as a list for the summary at the top of a form: the path (for the link) and each message. */
export function errorSummary(errors: FieldErrors): { path: string; message: string }[] {
  return Object.entries(errors).flatMap(([path, list]) => list.map((message) => ({ path, message })));
}
