import type { ClaimRepository } from '../claims/claim-repository';
import type { ClaimService } from '../claims/claim-service';
import type { ClaimWriter } from './chunk-writer';

/**
 * The import's ClaimWriter on the claims' own rules: a chunk's documents are looked up (their
 * types are not needed), identities are planned as for a single claim (`planBatch`), and the rows
 * written in one statement. `outside` is a repository on a connection of its own, to look the
 * next chunk up while one is written; none where statements cannot run side by side (embedded
 * PGlite, one session).
 */
export function createImportClaimWriter<Tx extends { claims: ClaimRepository }>(
  claims: Pick<ClaimService, 'planBatch'>,
  outside?: ClaimRepository,
): ClaimWriter<Tx> {
  return {
    lookup: (tx, documents) => tx.claims.findDocuments(documents.flat(), { documentTypes: false }),
    ...(outside ? { lookupOutside: (documents) => outside.findDocuments(documents.flat(), { documentTypes: false }) } : {}),
    write: (tx, companyId, inputs, importId, documents, known) => {
      const { plan, written } = claims.planBatch({ companyId }, inputs, 'bulk_import', importId, documents, known);
      return { outcomes: plan.outcomes, written: tx.claims.insertResolved(plan, written) };
    },
  };
}
