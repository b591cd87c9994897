import { dateMessage, documentRules, LIMITS, messages, type Claim, type DocumentType } from '../claims/claim';
import { personSearchSchema, type PersonSearchBody } from '../claims/claim-schema';
import { isIsoDate } from '../dates';
import { addFieldError, type FieldErrors } from '../errors';
import type { PageRequest, Position } from '../paging';
import { compileInput, fieldErrorsOf, inSchemaOrder } from '../validation';

export const LOOKUP_KINDS = ['plate_search', 'person_search', 'matches', 'incident', 'network', 'alert', 'identity_check'] as const;
export type LookupKind = (typeof LOOKUP_KINDS)[number];
export const PURPOSE_MAX_LENGTH = LIMITS.purposeMaxLength;

/** Who is looking, and why: the part of a look-up log entry that comes from the caller (lookup-journal.ts). */
export type LookupRecord = {
  id: string;
  companyId: string;
  tokenId: string | null;
  userId: string | null;
  purpose: string | null;
};

/** A look-up log entry as the journal notes it and the repository writes it. */
export type LookupEntry = LookupRecord & {
  kind: LookupKind;
  vehicleRegistration: string | null;
  clientId: string | null;
  claimId: string | null;
  /** The claims the look-up returned (their count is the entry's result count, unless `resultCount` says otherwise). */
  claimIds: string[];
  /** The result count when it is not the number of claimIds (a network: its claims, of which at most 500 edges are returned). */
  resultCount: number | null;
  /** When the look-up read (milliseconds since the epoch). */
  at: number;
};

/** A look-up as GET /lookups lists it. */
export type Lookup = {
  id: string;
  kind: LookupKind;
  vehicle_registration: string | null;
  claim_id: string | null;
  result_count: number;
  purpose: string | null;
  created_at: string;
};

/** A look-up that returned a claim, as its owner sees it: which company, what kind, when; no people. */
export type ClaimLookup = { company_name: string; kind: LookupKind; created_at: string };

export type MatchedOn = 'vehicle_registration' | 'client';
export type Match = Claim & { matched_on: MatchedOn[] };
export const INDICATOR_NAMES = ['repeat_claimant', 'plate_multi_company', 'early_claim', 'duplicate_claim', 'network'] as const;
export type Indicator = { name: (typeof INDICATOR_NAMES)[number]; reason: string };

/** Two claims of two companies are one incident when their claim dates are at most this many days apart (and they share the plate or the person). */
export const INCIDENT_DAYS = 1;
/** The `network` indicator: more than this many persons or plates within two steps of the claim. */
export const NETWORK_THRESHOLD = 10;
/** At most this many edges in a network answer (its counts are never cut). */
export const MAX_NETWORK_EDGES = 500;

/** The other companies' claims of one incident with a claim of the caller's, and the companies involved (the caller's included). */
export type Incident = { claims: Match[]; companies: number };

/** A claim of a network: its id and both its ends, the plate and the person (an id, never a name). */
export type NetworkEdge = { claim_id: string; vehicle_registration: string; client_id: string };

/**
 * The network around a claim: the persons and plates reachable in at most two steps (the claim's
 * person and plate, then the persons and plates of their claims within the search window, any
 * company), the claims that join them (the claim itself included), their companies, and at most
 * MAX_NETWORK_EDGES of those claims as edges (the claim itself first).
 */
export type Network = { persons: number; plates: number; claims: number; companies: number; edges: NetworkEdge[] };

export type { Position } from '../paging';

/** What the matches statement returns about the claim itself, to compute the indicators. */
export type MatchFacts = {
  claimDate: string;
  /** Claims of the person (any company, this one included) dated in the 24 months up to claimDate. */
  personClaims: number;
  /** Companies with a claim on the plate dated in the 12 months up to claimDate. */
  plateCompanies: number;
  /** The date (in APP_TIMEZONE) the person's client record was created. */
  clientSince: string;
  /** Other companies with a claim of the same person on the same plate, dated at most INCIDENT_DAYS apart (within the window). */
  duplicateCompanies: number;
  /** The persons and plates of the claim's network (Network), the claim's own included. */
  networkPersons: number;
  networkPlates: number;
  matches: Match[];
};

/**
 * The first instant the look-up log shows, LOOKUP_RETENTION_DAYS before `now`: the daily purge
 * deletes the look-ups before it, and an alert (which stays an alert) leaves the log then.
 */
export const logSince = (now: Date, lookupRetentionDays: number) =>
  new Date(now.getTime() - lookupRetentionDays * 86_400_000).toISOString();

export type PurgeCounts = { claims: number; clients: number; lookups: number; alerts: number };

/**
 * The three cross-company reads: a plate search, a person search, the matches of a company's
 * claim. With SEARCH_DATABASE_URL they are answered by a replica of the database (src/db routes
 * them, and to the primary while the replica is unreachable); everything else reads the primary.
 */
export interface SearchRepository {
  searchByPlate(plate: string, fromDate: string): Promise<Claim[]>;
  matches: RegistryRepository['matches'];
  searchByPerson: RegistryRepository['searchByPerson'];
  incident: RegistryRepository['incident'];
  network: RegistryRepository['network'];
}

/** The reads and writes of the registry features; src/db implements it. */
export interface RegistryRepository {
  /** undefined: no visible claim with this id belongs to the company (nothing is logged then). */
  matches(claimId: string, companyId: string, fromDate: string, timeZone: string): Promise<MatchFacts | undefined>;
  /** The incident of the company's claim (undefined: not a visible claim of the company). Claims dated on or after `fromDate`. */
  incident(claimId: string, companyId: string, fromDate: string): Promise<Incident | undefined>;
  /** The network of the company's claim, through claims dated on or after `fromDate`, at most `maxEdges` edges (undefined: not theirs). */
  network(claimId: string, companyId: string, fromDate: string, maxEdges: number): Promise<Network | undefined>;
  /**
   * Runs the same statement whether or not the documents and date of birth match anyone;
   * `personId` is the client they resolved to (for the look-up log), or null; `mismatch` the
   * persons whose documents were found when they did not resolve (a document known with another
   * date of birth, or documents of two persons): an identity check, empty otherwise.
   */
  searchByPerson(
    documents: { type: DocumentType; hash: string }[],
    dateOfBirth: string,
    fromDate: string,
  ): Promise<{ personId: string | null; claims: Claim[]; mismatch: string[] }>;
  /** Writes a batch of look-up log entries in one statement. */
  appendLookups(entries: LookupEntry[]): Promise<void>;
  /**
   * The company's look-up log, newest first: its look-ups and the alerts it was told (each alert
   * is its entry, kind `alert`), those created at or after `since` (LOOKUP_RETENTION_DAYS ago).
   */
  listLookups(companyId: string, opts: PageRequest & { since: string }): Promise<(Lookup & { position: Position })[]>;
  /** undefined: not a visible claim of the company. Look-ups and alerts created at or after `since`. */
  claimLookups(
    claimId: string,
    companyId: string,
    opts: PageRequest & { since: string },
  ): Promise<(ClaimLookup & { position: Position })[] | undefined>;
  /**
   * One transaction: at most `batchSize` expired claims, their matches look-ups, their alerts (in
   * both roles), and clients left with no claim.
   */
  purgeClaimsBatch(claimsBefore: string, batchSize: number): Promise<PurgeCounts>;
  /** One transaction: at most `batchSize` look-ups created before the cutoff, with their result rows. */
  purgeLookupsBatch(before: string, batchSize: number): Promise<number>;
  /** One transaction: the bodies of at most `batchSize` deliveries delivered or given up before the cutoff are deleted (the records stay). */
  purgeDeliveryBodiesBatch(before: string, batchSize: number): Promise<number>;
  /** Marks today's retention run as taken; false when another process already took it within the last 23 hours. */
  claimDailyRun(): Promise<boolean>;
  /**
   * The person, their claims, the look-ups and alerts created at or after `since` that returned
   * one of them, the identity checks that matched their documents, and the webhook deliveries
   * whose body still carries them.
   */
  subject(documents: { type: DocumentType; hash: string }[], dateOfBirth: string, since: string): Promise<SubjectRecord | undefined>;
}

export type SubjectRecord = {
  person: {
    id: string;
    first_name: string;
    last_name: string;
    date_of_birth: string;
    id_documents: { type: DocumentType }[];
    created_at: string;
  };
  claims: Claim[];
  /** Also the identity checks that matched one of the person's documents (kind identity_check, no claim). */
  lookups: { company_name: string; kind: LookupKind; claim_id: string | null; created_at: string }[];
  /** The webhook deliveries whose body carries the person (the body itself is not shown). */
  deliveries: {
    company_name: string;
    event_type: string;
    status: string;
    created_at: string;
    finished_at: string | null;
  }[];
};

/**
 * The advisory indicators of a claim, each counted on claim dates in a period that ends on the
 * claim's own date (both ends inclusive), over all companies, the claim itself included.
 * They never reject anything; each carries its reason in words.
 */
export function indicatorsOf(
  f: Pick<
    MatchFacts,
    'claimDate' | 'personClaims' | 'plateCompanies' | 'clientSince' | 'duplicateCompanies' | 'networkPersons' | 'networkPlates'
  >,
): Indicator[] {
  const out: Indicator[] = [];
  if (f.personClaims >= 3) {
    out.push({
      name: 'repeat_claimant',
      reason: `The person has ${f.personClaims} claims dated in the 24 months up to ${f.claimDate} (3 or more), this one included.`,
    });
  }
  if (f.plateCompanies >= 2) {
    out.push({
      name: 'plate_multi_company',
      reason: `The vehicle has claims from ${f.plateCompanies} companies dated in the 12 months up to ${f.claimDate} (2 or more).`,
    });
  }
  const days = daysBetween(f.clientSince, f.claimDate);
  if (days >= 0 && days <= 30) {
    out.push({
      name: 'early_claim',
      reason: `The claim is dated ${days} day${days === 1 ? '' : 's'} after the person was first recorded in the registry on ${f.clientSince} (within 30 days).`,
    });
  }
  if (f.duplicateCompanies > 0) {
    const n = f.duplicateCompanies;
    out.push({
      name: 'duplicate_claim',
      reason: `${n} other compan${n === 1 ? 'y has a claim' : 'ies have claims'} of the same person on the same vehicle dated at most ${INCIDENT_DAYS} day from this one.`,
    });
  }
  if (f.networkPersons > NETWORK_THRESHOLD || f.networkPlates > NETWORK_THRESHOLD) {
    out.push({
      name: 'network',
      reason: `Within two steps of this claim there are ${f.networkPersons} person${f.networkPersons === 1 ? '' : 's'} and ${f.networkPlates} vehicle${f.networkPlates === 1 ? '' : 's'} (more than ${NETWORK_THRESHOLD} persons or vehicles).`,
    });
  }
  return out;
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/** The optional `purpose` of a look-up: text of at most 200 characters; empty or absent means none. */
export function parsePurpose(value: unknown, errors: FieldErrors, field = 'purpose'): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') {
    addFieldError(errors, field, messages.string(field));
    return null;
  }
  if ([...value].length > PURPOSE_MAX_LENGTH) {
    addFieldError(errors, field, messages.maxLength(field, PURPOSE_MAX_LENGTH));
    return null;
  }
  if (/[\p{Cc}\p{Cs}]/u.test(value.replace(/[\t\n\r]/gu, ' '))) {
    addFieldError(errors, field, messages.characters(field));
    return null;
  }
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

export type PersonQuery = { dateOfBirth: string; documents: { type: DocumentType; number: string }[]; purpose: string | null };

const checkPersonSearchShape = compileInput<PersonSearchBody>(personSearchSchema);

/**
 * The body of a search by person: `date_of_birth` and `id_documents` as in a submission (the same
 * schema, numbers normalized by the same rules), and an optional `purpose`.
 */
export function validatePersonQuery(body: unknown): { value?: PersonQuery; errors: FieldErrors } {
  const rejected = checkPersonSearchShape(body) ? undefined : fieldErrorsOf(checkPersonSearchShape.errors ?? []);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { errors: rejected ?? {} };
  const fields = body as Record<string, unknown>;
  const errors: FieldErrors = { ...rejected };
  const accepted = (field: string) => rejected === undefined || !(field in rejected);

  let dateOfBirth: string | undefined;
  const dob = fields.date_of_birth;
  if (typeof dob === 'string' && accepted('date_of_birth')) {
    if (dob === '') addFieldError(errors, 'date_of_birth', messages.required('date_of_birth'));
    else if (!isIsoDate(dob)) addFieldError(errors, 'date_of_birth', dateMessage('date_of_birth', dob));
    else dateOfBirth = dob;
  }
  const documents: PersonQuery['documents'] = [];
  documentRules(fields.id_documents, 'id_documents', documents, errors, rejected);
  const purpose = accepted('purpose') ? parsePurpose(fields.purpose, errors) : null;
  if (Object.keys(errors).length > 0) return { errors: inSchemaOrder(personSearchSchema, errors) };
  return { errors, value: { dateOfBirth: dateOfBirth!, documents, purpose } };
}
