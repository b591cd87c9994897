import type { Actor } from '../access/access';
import type { LookupKind } from '../registry/registry';
import type { Claim, ClaimSource, ClaimStatus, DocumentType } from '../claims/claim';
import type { UserRole } from '../companies/company-repository';

/** A person as the per-request look-up reads them. */
export type SignedInUserRecord = {
  id: string;
  email: string;
  role: UserRole;
  companyId: string | null;
  companyName: string | null;
  /** A second factor (TOTP) is set up and confirmed. */
  secondFactor: boolean;
  /** Their company requires one of all its people. */
  companyRequiresSecondFactor: boolean;
  companySuspended: boolean;
};

/** The signed-in person, with what access.ts makes of them. */
export type SignedInUser = SignedInUserRecord & {
  /** A second factor is required: operators always, a company's people when the company requires it. */
  secondFactorRequired: boolean;
  /** Who acts, for access.ts's decisions and the audit trail. */
  actor: Actor;
};

/** What the claims list is narrowed to; every part optional, all of them combined. */
export type ClaimListFilter = {
  status?: ClaimStatus | undefined;
  /** A normalized plate, or its beginning. */
  plate?: string | undefined;
  /** Words that each begin the client's first or last name (any case). */
  name?: string | undefined;
  /** Claim dates from and to (YYYY-MM-DD, both included). */
  from?: string | undefined;
  to?: string | undefined;
  source?: ClaimSource | undefined;
};
export type ClaimListSort = 'claim_date' | 'registered';
/** A row's place in the list: its claim date, registration time (microseconds, UTC) and id. */
export type ClaimListKey = { date: string; ts: string; id: string };
/**
 * Which page: the first, the last, or the rows after (older than) or before (newer than) a key,
 * skipping `skip` rows first (a jump of a few pages from the current one).
 */
export type ClaimListSeek = { kind: 'first' } | { kind: 'last' } | { kind: 'after' | 'before'; key: ClaimListKey; skip: number };
/**
 * A row of the claims list and of its CSV export: the claim's fields of the answer (claim-schema.ts)
 * but its company's name, its client's name and birth date, and its place in the list.
 */
export type ClaimListRow = Omit<Claim, 'client' | 'company_name'> &
  Pick<Claim['client'], 'first_name' | 'last_name' | 'date_of_birth'> & {
    key: ClaimListKey;
    /** The client's first document type (alphabetical); the export's id_type. */
    id_type: DocumentType | null;
  };

/** A status change of a claim with who made it: a person's email or a token's name (null once removed). */
export type StatusHistoryEntry = {
  from_status: ClaimStatus;
  to_status: ClaimStatus;
  changed_at: string;
  user_email: string | null;
  token_name: string | null;
};

/** What the look-up log page is narrowed to. `from`/`to` are days in the service's time zone. */
export type LookupLogFilter = {
  kind?: LookupKind | undefined;
  userId?: string | undefined;
  tokenId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
};
/** A look-up with who made it and how many of the claims it returned were other companies'. */
export type LookupLogRow = {
  id: string;
  kind: LookupKind;
  vehicle_registration: string | null;
  claim_id: string | null;
  result_count: number;
  /** Returned claims of other companies: 0 means the look-up showed only the company's own claims. */
  other_company_claims: number;
  purpose: string | null;
  created_at: string;
  user_email: string | null;
  token_name: string | null;
  key: { ts: string; id: string };
};
export type LookupActor = { kind: 'user' | 'token'; id: string; name: string };

/** An earlier import of the same file (same SHA-256) that stored or will store claims. */
export type EarlierImport = { id: string; file_name: string; created_at: string; status: string; imported: number | null };

/** A company as the operator's list shows it. */
export type CompanyCounts = { id: string; claims: number; imports: number; tokens: number; people: number };
/** An import of any company, for the operator. */
export type OperatorImport = {
  id: string;
  company_name: string;
  file_name: string;
  status: string;
  rows_total: number;
  imported: number | null;
  failed: number | null;
  created_at: string;
  finished_at: string | null;
};

/** Reads behind the dashboard's pages and its sessions; src/db implements them. */
export interface DashboardRepository {
  findSignedInUser(userId: string): Promise<SignedInUserRecord | undefined>;
  claimsPerMonth(companyId: string, fromDate: string, toDate: string): Promise<{ month: string; claims: number }[]>;
  countsByStatus(companyId: string): Promise<{ status: ClaimStatus; claims: number }[]>;
  peopleCountByCompany(): Promise<Map<string, number>>;
  /** Claims (visible), imports, live tokens and people of every company, in one statement. */
  companyCounts(): Promise<CompanyCounts[]>;
  /** The newest imports of all companies. */
  recentImports(limit: number): Promise<OperatorImport[]>;
  /** A page of the company's visible claims, newest first in the sort's order (whatever the seek). */
  listClaims(companyId: string, filter: ClaimListFilter, sort: ClaimListSort, seek: ClaimListSeek, limit: number): Promise<ClaimListRow[]>;
  countClaims(companyId: string, filter: ClaimListFilter): Promise<number>;
  /** The status changes of one of the company's claims, newest first. */
  statusHistory(companyId: string, claimId: string): Promise<StatusHistoryEntry[]>;
  /** The company's look-up log (its look-ups and the alerts it was told), newest first, after a key, created at or after `since`. */
  listLookups(
    companyId: string,
    filter: LookupLogFilter,
    timeZone: string,
    since: string,
    after: { ts: string; id: string } | undefined,
    limit: number,
  ): Promise<LookupLogRow[]>;
  /** The newest import of the company since `since` (RFC 3339) with this file hash, not failed or cancelled. */
  earlierImportOfFile(companyId: string, sha256: string, since: string): Promise<EarlierImport | undefined>;
  /** The company's people and tokens (revoked ones too): who can have made a look-up. */
  lookupActors(companyId: string): Promise<LookupActor[]>;
}

/** Rows of dashboard sessions, by the hash of the session id. */
export interface SessionRepository {
  find(sidHash: string): Promise<string | undefined>;
  upsert(s: { sidHash: string; userId: string | null; data: string; expiresAt: Date }): Promise<void>;
  delete(sidHash: string): Promise<void>;
  deleteExpired(): Promise<number>;
}
