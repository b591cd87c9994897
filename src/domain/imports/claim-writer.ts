import type { ClaimRepository } from '../claims/claim-repository';
import type { ClaimService } from '../claims/claim-service';
import type { AuditRepository } from '../audit/audit';
import type { IdentityCheckLog } from '../clients/identity-checks';
import type { ClaimWriter } from './chunk-writer';

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
      return { outcomes: plan.outcomes, checks, events, written: Promise.all([claimsWritten, logged]) };
    },
  };
}
