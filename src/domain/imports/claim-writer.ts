import type { ClaimRepository } from '../claims/claim-repository';
import type { ClaimService } from '../claims/claim-service';
import type { AuditRepository } from '../audit/audit';
import type { IdentityCheckLog } from '../clients/identity-checks';
import type { ClaimWriter } from './chunk-writer';

/** No new person: the claims' write of a chunk whose persons were written before it. */
const NO_PERSONS = { newClients: [], newDocuments: [] };

/**
 * The import's ClaimWriter on the claims' own rules: a chunk's documents are looked up (their
 * types are not needed), identities are planned as for a single claim (`planWithinBudget`), and the rows
 * written in one statement. `outside` is a repository on a connection of its own, to look the
 * next chunk up while one is written; none where statements cannot run side by side (embedded
 * PGlite, one session).
 */
export function createImportClaimWriter<
  Tx extends { claims: ClaimRepository; identityChecks: IdentityCheckLog; audit: Pick<AuditRepository, 'record'> },
>(claims: Pick<ClaimService, 'planWithinBudget'>, outside?: ClaimRepository): ClaimWriter<Tx> {
  return {
    lookup: (tx, documents) => tx.claims.findDocuments(documents.flat(), { documentTypes: false }),
    ...(outside ? { lookupOutside: (documents) => outside.findDocuments(documents.flat(), { documentTypes: false }) } : {}),
    write: async (tx, companyId, inputs, importId, documents, known) => {
      // Within the company's identity-check budget; the chunk's identity checks are written in its transaction.
      const who = { companyId, tokenId: null, userId: null };
      const { plan, written, checks, events } = await claims.planWithinBudget(tx, who, inputs, 'bulk_import', importId, documents, known);
      const claimsWritten = tx.claims.insertResolved(plan, written);
      const logged = Promise.all([tx.identityChecks.append(checks), ...events.map((e) => tx.audit.record(e))]);
      return {
        outcomes: plan.outcomes,
        checks,
        events,
        created: plan.newClients.map((c) => c.id),
        written: Promise.all([claimsWritten, logged]),
      };
    },
    writePersons: async (tx, companyId, inputs, importId, documents, known, pendingChecks) => {
      const who = { companyId, tokenId: null, userId: null };
      const { plan, written, checks, events } = await claims.planWithinBudget(
        tx,
        who,
        inputs,
        'bulk_import',
        importId,
        documents,
        known,
        pendingChecks,
      );
      const persons = { newClients: plan.newClients, newDocuments: plan.newDocuments };
      const personsWritten =
        persons.newClients.length + persons.newDocuments.length > 0 ? tx.claims.insertResolved(persons, []) : undefined;
      return {
        outcomes: plan.outcomes,
        claims: written,
        checks,
        events,
        created: plan.newClients.map((c) => c.id),
        written: personsWritten ?? Promise.resolve(),
      };
    },
    writePlanned: (tx, planned) =>
      Promise.all([
        planned.claims.length > 0 ? tx.claims.insertResolved(NO_PERSONS, planned.claims) : undefined,
        tx.identityChecks.append(planned.checks),
        ...planned.events.map((e) => tx.audit.record(e)),
      ]),
  };
}
