import { createHmac } from 'node:crypto';

import type { DocumentType } from '../claims/claim';
import { messages } from '../claims/claim';
import { newId as timeOrderedId } from '../ids';

/**
 * Document numbers are stored only as a keyed hash: matching works on the hash, and a copied
 * database does not reveal anyone's passport number.
 */
export type DocumentHasher = (normalizedNumber: string) => string;

export function createDocumentHasher(key: string): DocumentHasher {
  return (normalizedNumber) => createHmac('sha256', key).update(normalizedNumber, 'utf8').digest('hex');
}

/** A fingerprint of the key, stored in the database so a process started with another key refuses to run. */
export function keyFingerprint(key: string): string {
  return createHmac('sha256', key).update('claims-registry/document-hash-key/v1').digest('hex').slice(0, 16);
}

export type DocumentRef = { type: DocumentType; hash: string };

/**
 * What the database knows about a document that was looked up. `documentTypes` (all of the person's
 * document types) is absent when the look-up left them out: an import reports no person.
 */
export type KnownDocument = DocumentRef & {
  clientId: string;
  client: { firstName: string; lastName: string; dateOfBirth: string; documentTypes?: DocumentType[] | undefined };
};

export type IdentityRow = {
  firstName: string;
  lastName: string;
  dateOfBirth: string;
  documents: DocumentRef[];
};

export type ResolvedClient = {
  id: string;
  firstName: string;
  lastName: string;
  dateOfBirth: string;
  /** The person's document types: all of them when the look-up gave them (see KnownDocument). */
  documentTypes: DocumentType[];
};

/** One object literal: this runs for every row of an import, and a spread with properties after it is slow in V8. */
const resolvedClient = (
  id: string,
  c: { firstName: string; lastName: string; dateOfBirth: string },
  documentTypes: DocumentType[],
): ResolvedClient => ({ id, firstName: c.firstName, lastName: c.lastName, dateOfBirth: c.dateOfBirth, documentTypes });

/**
 * A row's person, or why it has none: a mismatch (`clientIds`: the persons whose documents it
 * matched, for the identity check it is), or `row` when its company is past its identity-check
 * budget (identity-checks.ts).
 */
export type IdentityOutcome =
  | { ok: true; client: ResolvedClient }
  | { ok: false; field: 'client.date_of_birth' | 'client.id_documents' | 'row'; message: string; clientIds: string[] };

export type IdentityPlan = {
  outcomes: IdentityOutcome[];
  newClients: { id: string; firstName: string; lastName: string; dateOfBirth: string }[];
  newDocuments: (DocumentRef & { clientId: string })[];
};

/**
 * Resolves the client of each row, in order, against the documents already on record and those
 * created by earlier rows of the same batch (a person created by row 2 is found by row 9).
 *
 * - No document known: a new client with all the documents.
 * - All known documents on one client with the same date of birth: that client; unknown
 *   documents are added to it. Names on record are not overwritten.
 * - Date of birth differs, or documents on two clients: a data-quality error; nothing is written.
 *
 * Pure: the caller looks the documents up (under a lock) and writes the plan. New clients get
 * time-ordered ids (UUIDv7), as claims do: rows written together land on neighbouring index pages,
 * which makes large imports cheaper to write than random ids would.
 */
export function planIdentities(rows: IdentityRow[], known: KnownDocument[], newId: () => string = timeOrderedId): IdentityPlan {
  // The owner of each document, by type and then by hash (no key string to build per document).
  const owners = new Map<DocumentType, Map<string, string>>();
  const ownersOf = (type: DocumentType) => {
    let m = owners.get(type);
    if (!m) owners.set(type, (m = new Map<string, string>()));
    return m;
  };
  const clients = new Map<string, ResolvedClient>();
  for (const doc of known) {
    ownersOf(doc.type).set(doc.hash, doc.clientId);
    if (!clients.has(doc.clientId))
      clients.set(doc.clientId, resolvedClient(doc.clientId, doc.client, [...(doc.client.documentTypes ?? [])]));
  }
  const plan: IdentityPlan = { outcomes: [], newClients: [], newDocuments: [] };

  for (const row of rows) {
    let matched: string | undefined;
    let other: string | undefined;
    for (const doc of row.documents) {
      const id = owners.get(doc.type)?.get(doc.hash);
      if (id === undefined) continue;
      if (matched === undefined) matched = id;
      else if (matched !== id) other ??= id;
    }
    if (other !== undefined) {
      plan.outcomes.push({
        ok: false,
        field: 'client.id_documents',
        message: messages.documentsOfDifferentClients,
        clientIds: [matched!, other],
      });
      continue;
    }
    let client: ResolvedClient;
    if (matched !== undefined) {
      client = clients.get(matched)!;
      if (client.dateOfBirth !== row.dateOfBirth) {
        plan.outcomes.push({ ok: false, field: 'client.date_of_birth', message: messages.dobMismatch, clientIds: [matched] });
        continue;
      }
    } else {
      client = { id: newId(), firstName: row.firstName, lastName: row.lastName, dateOfBirth: row.dateOfBirth, documentTypes: [] };
      clients.set(client.id, client);
      plan.newClients.push({ id: client.id, firstName: row.firstName, lastName: row.lastName, dateOfBirth: row.dateOfBirth });
    }
    for (const doc of row.documents) {
      const byHash = ownersOf(doc.type);
      if (byHash.has(doc.hash)) continue;
      byHash.set(doc.hash, client.id);
      plan.newDocuments.push({ type: doc.type, hash: doc.hash, clientId: client.id });
      if (!client.documentTypes.includes(doc.type)) client.documentTypes.push(doc.type);
    }
    plan.outcomes.push({ ok: true, client: resolvedClient(client.id, client, [...client.documentTypes].sort()) });
  }
  return plan;
}
