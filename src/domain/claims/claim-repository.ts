import type { AlertWriter } from '../alerts/alerts';
import type { DocumentRef, IdentityPlan, KnownDocument } from '../clients/identity';
import type { AuditRepository } from '../audit/audit';
import type { IdentityCheckLog } from '../clients/identity-checks';
import type { PageRequest, Position } from '../paging';
import type { LookupEntry } from '../registry/registry';
import type { Claim, ClaimInput, ClaimSource, ClaimStatus } from './claim';

/** A claim as stored: the public Claim plus its owner and its place in the newest-first order. */
export type StoredClaim = Claim & { companyId: string; position: Position };

/** A plate search (the normalized plate, the window's first day) and the look-up entry it writes. */
export type LoggedPlateSearch = { plate: string; fromDate: string; entry: LookupEntry };

/** A claim to write, its client already resolved: the submission as validated (`input`), and what the service adds. */
export type NewClaimRow = {
  input: ClaimInput;
  id: string;
  clientId: string;
  companyId: string;
  source: ClaimSource;
  importId: string | null;
};

/** Who changed a status: an API token or a signed-in person. */
export type StatusActor = { tokenId: string | null; userId: string | null };

/**
 * The outcome of a status change: the company's own claim (with its status before), a claim that
 * exists but belongs to another company (the contract answers 403 there, not 404), or none.
 */
export type StatusUpdate = { found: 'own'; previous: ClaimStatus } | { found: 'other' } | { found: 'none' };

export type StatusChange = {
  from_status: ClaimStatus;
  to_status: ClaimStatus;
  changed_by_token_id: string | null;
  changed_by_user_id: string | null;
};

/**
 * What the claims rules need from storage; src/db implements it. Every read or write of a
 * company's claims takes that company's id. Clients and their identity documents are shared by
 * all companies (one person, one client), and the plate search reads every company's claims on
 * purpose: that is what the registry is for.
 */
export interface ClaimRepository {
  /**
   * The stored documents among `refs`, each with its person. `documentTypes: false` leaves out the
   * person's document types (KnownDocument), which only a single claim's answer shows.
   */
  findDocuments(refs: DocumentRef[], opts?: { documentTypes?: boolean }): Promise<KnownDocument[]>;
  /**
   * Writes a batch's new persons, their documents and its claims in one statement. With
   * `matchAlerts`, the same statement makes the claims' match alerts (AlertWriter.matchClaims):
   * `fromDate` is the window's first day, `clients` each claim's client as the API shows it,
   * keyed by claim id.
   */
  insertResolved(
    plan: Pick<IdentityPlan, 'newClients' | 'newDocuments'>,
    claims: NewClaimRow[],
    matchAlerts?: { fromDate: string; clients: Record<string, Claim['client']> },
  ): Promise<{ createdAt: string | null }>;
  findById(companyId: string, id: string): Promise<StoredClaim | undefined>;
  listByCompany(companyId: string, opts: { status?: ClaimStatus | undefined } & PageRequest): Promise<StoredClaim[]>;
  /** Claims in the API's shape only (what every company may see of them). */
  searchByPlate(plate: string, fromDate: string): Promise<Claim[]>;
  /**
   * Several plate searches, each with its look-up log entry, committed together before this
   * resolves: each search's claims, in the order of `searches`. The entries' claim ids are the
   * claims found (whatever `entry.claimIds` holds is ignored).
   */
  searchByPlateLogged(searches: readonly LoggedPlateSearch[]): Promise<Claim[][]>;
  updateStatus(companyId: string, id: string, status: ClaimStatus, actor: StatusActor): Promise<StatusUpdate>;
  statusHistory(companyId: string, id: string): Promise<StatusChange[]>;
}

/** The claims repository, and a transaction over it (with the alerts a claim's write makes). */
export type ClaimRepos = {
  claims: ClaimRepository;
  identityChecks: IdentityCheckLog;
  transaction<T>(
    fn: (tx: {
      claims: ClaimRepository;
      alerts: AlertWriter;
      identityChecks: IdentityCheckLog;
      audit: Pick<AuditRepository, 'record'>;
    }) => Promise<T>,
  ): Promise<T>;
};
