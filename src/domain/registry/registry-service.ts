import {
  createCheckCounts,
  identityCheckOf,
  identityChecksLimited,
  identityChecksLimitedEvent,
  type IdentityCheckLog,
  type IdentityCheckPolicy,
} from '../clients/identity-checks';
import { CLI_ACTOR, SYSTEM_ACTOR, type AuditActor, type AuditEventInput } from '../audit/audit';
import type { Claim } from '../claims/claim';
import type { DocumentHasher } from '../clients/identity';
import { pageOf, pageRequest } from '../paging';
import { minusYears } from '../dates';
import { AppError, validationError, type FieldErrors } from '../errors';
import { isUuid, newId } from '../ids';
import type { Principal } from '../principal';
import { createTurns } from '../turns';
import {
  indicatorsOf,
  logSince as logSinceAt,
  parsePurpose,
  validatePersonQuery,
  type ClaimLookup,
  MAX_NETWORK_EDGES,
  type Incident,
  type Indicator,
  type Lookup,
  type LookupEntry,
  type LookupKind,
  type Match,
  type Network,
  type Position,
  type PurgeCounts,
  type RegistryRepository,
  type SearchRepository,
} from './registry';
import { lookupLogUnavailable, type LookupJournal } from './lookup-journal';

export type RegistryServiceDeps = {
  registry: RegistryRepository;
  /** Where the matches and person searches read (a replica's, see SearchRepository); default: `registry`. */
  searches?: Pick<SearchRepository, 'matches' | 'searchByPerson' | 'incident' | 'network'>;
  /** Where look-ups are noted; the same journal as the plate search's. */
  journal: LookupJournal;
  hashDocument: DocumentHasher;
  /** Today's date in the service's time zone. */
  today: () => string;
  timeZone: string;
  searchHistoryYears: number;
  retentionYears: number;
  lookupRetentionDays: number;
  /** Days a webhook delivery's body is kept after it was delivered or given up. */
  webhookRetentionDays?: number;
  /** Deletes the dashboard uploads never confirmed, uploaded before the time given (ms); how many. */
  purgeAbandonedUploads?: (before: number) => Promise<number>;
  /** Rows per purge transaction (at most 10,000). */
  purgeBatchSize?: number;
  /** Removes the uploaded files whose import or batch has ended (part of the daily purge); how many. */
  sweepFiles?: () => Promise<number>;
  now?: () => Date;
  /**
   * The audit trail: its own retention (AUDIT_RETENTION_DAYS) runs with the purge, which is then
   * recorded (`data.purged`), as is a subject access export (`subject.exported`).
   */
  auditTrail?: {
    purge(actor: AuditActor): Promise<{ events: number; before: string }>;
    record(event: AuditEventInput | readonly AuditEventInput[]): Promise<void>;
  };
  /**
   * A person search that finds a document with another date of birth (or documents of two
   * persons) is an identity check: recorded in the look-up log and counted against the company's
   * hourly budget, as a submission's mismatch is (DECISIONS, "Person search is an identity check").
   */
  identityChecks?: { log: IdentityCheckLog; policy: IdentityCheckPolicy };
};

export const MAX_PURGE_BATCH = 10_000;
/** A dashboard upload never confirmed ("import this file again?") is deleted this long after it was uploaded. */
export const ABANDONED_UPLOAD_MS = 24 * 3_600_000;

/** What a retention run removed, and its cutoffs. */
export type PurgeResult = PurgeCounts & {
  /** Webhook deliveries whose body was deleted (their records stay). */
  delivery_bodies: number;
  /** Dashboard uploads never confirmed, deleted. */
  uploads: number;
  /** Files the store held for imports and batch look-ups that have ended (or for nothing), deleted. */
  files: number;
  claims_before: string;
  lookups_before: string;
  delivery_bodies_before: string;
  uploads_before: string;
  audit_events: number;
  audit_before: string | null;
};
const notFound = () => new AppError('NOT_FOUND', 'Claim not found.', undefined, 'claim_not_found');

/**
 * The look-up log entry of a cross-company read by this principal, as one object literal: this is
 * on the path of every search, and an object spread with properties added after it costs several
 * microseconds in V8. Its id is time-ordered, so the log's primary key grows at one end instead
 * of at random places.
 */
export function lookupOf(
  principal: Principal,
  purpose: string | null,
  kind: LookupKind,
  subject: { vehicleRegistration?: string; clientId?: string | null; claimId?: string },
  claimIds: string[],
  resultCount: number | null = null,
): Omit<LookupEntry, 'at'> {
  return {
    id: newId(),
    companyId: principal.companyId,
    tokenId: principal.tokenId,
    userId: principal.userId,
    purpose,
    kind,
    vehicleRegistration: subject.vehicleRegistration ?? null,
    clientId: subject.clientId ?? null,
    claimId: subject.claimId ?? null,
    claimIds,
    resultCount,
  };
}

/** The optional purpose of a look-up, or a 422 naming the field. */
export function purposeOrThrow(value: unknown): string | null {
  const errors: FieldErrors = {};
  const purpose = parsePurpose(value, errors);
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return purpose;
}

/** A page of look-up log rows, without their positions. */
const page = <T extends { position: Position }>(rows: T[], limit: number) => pageOf(rows, limit, ({ position: _p, ...row }) => row);

export function createRegistryService(deps: RegistryServiceDeps) {
  const { registry, hashDocument, today, timeZone, searchHistoryYears } = deps;
  const searches = deps.searches ?? registry;
  const batchSize = Math.min(deps.purgeBatchSize ?? MAX_PURGE_BATCH, MAX_PURGE_BATCH);
  const windowStart = () => minusYears(today(), searchHistoryYears);
  const logSince = () => logSinceAt(deps.now?.() ?? new Date(), deps.lookupRetentionDays);
  const period = `${searchHistoryYears} year${searchHistoryYears === 1 ? '' : 's'}`;

  /** Claims of all companies sharing the plate or the person with one of the caller's claims, and the indicators. */
  async function matches(principal: Principal, id: string, purposeRaw?: unknown): Promise<{ matches: Match[]; indicators: Indicator[] }> {
    const purpose = purposeOrThrow(purposeRaw);
    if (!isUuid(id)) throw notFound();
    const facts = await searches.matches(id, principal.companyId, windowStart(), timeZone);
    if (!facts) throw notFound();
    await deps.journal.record(
      lookupOf(
        principal,
        purpose,
        'matches',
        { claimId: id },
        facts.matches.map((m) => m.id),
      ),
    );
    return { matches: facts.matches, indicators: indicatorsOf(facts) };
  }

  /**
   * The other companies' claims of one incident with one of the caller's claims: dated at most
   * INCIDENT_DAYS apart, sharing its plate or person, within the search window. A look-up (kind
   * `incident`), durable before it is answered.
   */
  async function incident(principal: Principal, id: string, purposeRaw?: unknown): Promise<Incident> {
    const purpose = purposeOrThrow(purposeRaw);
    if (!isUuid(id)) throw notFound();
    const found = await searches.incident(id, principal.companyId, windowStart());
    if (!found) throw notFound();
    await deps.journal.record(
      lookupOf(
        principal,
        purpose,
        'incident',
        { claimId: id },
        found.claims.map((c) => c.id),
      ),
    );
    return found;
  }

  /**
   * The network around one of the caller's claims (Network). A look-up (kind `network`) whose
   * result count is the network's claims, durable before it is answered.
   */
  async function network(principal: Principal, id: string, purposeRaw?: unknown): Promise<Network> {
    const purpose = purposeOrThrow(purposeRaw);
    if (!isUuid(id)) throw notFound();
    const found = await searches.network(id, principal.companyId, windowStart(), MAX_NETWORK_EDGES);
    if (!found) throw notFound();
    const returned: string[] = [];
    for (const e of found.edges) if (e.claim_id !== id) returned.push(e.claim_id);
    await deps.journal.record(lookupOf(principal, purpose, 'network', { claimId: id }, returned, found.claims));
    return found;
  }

  /**
   * Claims of all companies for the person the documents resolve to, when the date of birth
   * matches. Anything else (unknown document, another date of birth, documents of two persons)
   * is an empty list, answered by the very same statement: neither the answer nor the work
   * done tells whether a document number exists.
   */
  async function searchByPerson(
    principal: Principal,
    body: unknown,
  ): Promise<{ data: Claim[]; meta: { total_claims: number; query_period: string } }> {
    const { value, errors } = validatePersonQuery(body);
    if (!value) throw validationError(errors);
    const checks = deps.identityChecks;
    const at = checks?.policy.now() ?? Date.now();
    const perHour = checks?.policy.perHour ?? 0;
    // Past the company's budget a person search is refused as its submissions are. The checks
    // are entries of the look-up log: when it cannot be read, no look-up is answered.
    if (
      checks &&
      perHour > 0 &&
      ((await onTheLog(() => checkCounts!.used([principal.companyId], at))).get(principal.companyId) ?? 0) >= perHour
    ) {
      throw identityChecksLimited();
    }
    const documents = value.documents.map((d) => ({ type: d.type, hash: hashDocument(d.number) }));
    const { personId, claims, mismatch } = await searches.searchByPerson(documents, value.dateOfBirth, windowStart());
    if (checks && mismatch.length > 0) await onTheLog(() => recordMismatch(principal, at, mismatch));
    await deps.journal.record(
      lookupOf(
        principal,
        value.purpose,
        'person_search',
        { clientId: personId },
        claims.map((c) => c.id),
      ),
    );
    return { data: claims, meta: { total_claims: claims.length, query_period: period } };
  }

  const checkCounts = deps.identityChecks && createCheckCounts(deps.identityChecks.log);

  /** Work on the look-up log: an error of the log (not a refusal) answers as the journal's does, 503. */
  async function onTheLog<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw lookupLogUnavailable();
    }
  }

  /**
   * A person search's mismatch: decided on counts read now, refused (429) when the company has
   * no budget left, else its identity check written (and, when it used the last of the budget,
   * the operator's audit event) before the search is answered.
   */
  async function recordMismatch(principal: Principal, at: number, clientIds: string[]): Promise<void> {
    // One company's mismatches are decided one at a time in this process: parallel guesses
    // cannot each read the same count and together pass the budget.
    return mismatchTurns(principal.companyId, () => admitMismatch(principal, at, clientIds));
  }
  const mismatchTurns = createTurns();

  async function admitMismatch(principal: Principal, at: number, clientIds: string[]): Promise<void> {
    const { log, policy } = deps.identityChecks!;
    const used = (await checkCounts!.used([principal.companyId], at, { fresh: true })).get(principal.companyId) ?? 0;
    if (policy.perHour > 0 && used >= policy.perHour) throw identityChecksLimited();
    await log.append([identityCheckOf(principal, at, clientIds)]);
    checkCounts!.added(principal.companyId, 1);
    if (policy.perHour > 0 && used + 1 === policy.perHour) await deps.auditTrail?.record(identityChecksLimitedEvent(principal.companyId));
  }

  async function listLookups(
    principal: Principal,
    opts: { cursor?: string | undefined; limit: number },
  ): Promise<{ data: Lookup[]; meta: { next_cursor: string | null } }> {
    const rows = await registry.listLookups(principal.companyId, { ...pageRequest(opts), since: logSince() });
    return page(rows, opts.limit);
  }

  async function claimLookups(
    principal: Principal,
    id: string,
    opts: { cursor?: string | undefined; limit: number },
  ): Promise<{ data: ClaimLookup[]; meta: { next_cursor: string | null } }> {
    if (!isUuid(id)) throw notFound();
    const rows = await registry.claimLookups(id, principal.companyId, { ...pageRequest(opts), since: logSince() });
    if (!rows) throw notFound();
    return page(rows, opts.limit);
  }

  /**
   * Retention: claims dated before today minus RETENTION_YEARS go, with their look-up entries and
   * the clients (and documents) they leave with no claim; look-ups older than
   * LOOKUP_RETENTION_DAYS go. Each transaction removes at most `batchSize` claims or look-ups, so
   * submissions wait for one batch at most.
   */
  async function purge(actor: AuditActor = SYSTEM_ACTOR): Promise<PurgeResult> {
    const claimsBefore = minusYears(today(), deps.retentionYears);
    const lookupsBefore = logSince();
    const nowMs = (deps.now?.() ?? new Date()).getTime();
    const bodiesBefore = new Date(nowMs - (deps.webhookRetentionDays ?? 30) * 86_400_000).toISOString();
    const uploadsBefore = new Date(nowMs - ABANDONED_UPLOAD_MS).toISOString();
    const total: PurgeCounts = { claims: 0, clients: 0, lookups: 0, alerts: 0 };
    for (;;) {
      const r = await registry.purgeClaimsBatch(claimsBefore, batchSize);
      total.claims += r.claims;
      total.clients += r.clients;
      total.lookups += r.lookups;
      total.alerts += r.alerts;
      if (r.claims < batchSize) break;
    }
    for (;;) {
      const n = await registry.purgeLookupsBatch(lookupsBefore, batchSize);
      total.lookups += n;
      if (n < batchSize) break;
    }
    let deliveryBodies = 0;
    for (;;) {
      const n = await registry.purgeDeliveryBodiesBatch(bodiesBefore, batchSize);
      deliveryBodies += n;
      if (n < batchSize) break;
    }
    const uploads = (await deps.purgeAbandonedUploads?.(Date.parse(uploadsBefore))) ?? 0;
    const files = deps.sweepFiles ? await deps.sweepFiles() : 0;
    const audit = deps.auditTrail ? await deps.auditTrail.purge(actor) : { events: 0, before: null };
    await deps.auditTrail?.record({
      companyId: null,
      action: 'data.purged',
      actor,
      target: {
        type: 'retention',
        id: null,
        name:
          `${total.claims} claims dated before ${claimsBefore}, ${total.clients} clients, ${total.lookups} look-ups, ` +
          `${total.alerts} alerts, ${audit.events} audit events, ${deliveryBodies} delivery bodies, ${uploads} unconfirmed uploads, ${files} files`,
      },
      ip: null,
      requestId: null,
    });
    return {
      ...total,
      files,
      delivery_bodies: deliveryBodies,
      uploads,
      claims_before: claimsBefore,
      lookups_before: lookupsBefore,
      delivery_bodies_before: bodiesBefore,
      uploads_before: uploadsBefore,
      audit_events: audit.events,
      audit_before: audit.before,
    };
  }

  /** The daily run: only the first process to ask in a day purges. */
  async function purgeIfDue(): Promise<PurgeResult | null> {
    if (!(await registry.claimDailyRun())) return null;
    return purge();
  }

  /**
   * Subject access: what the registry holds about one person, found by date of birth and one
   * identity document. The document number is used only to find the person and is never returned.
   */
  async function subjectExport(q: { dateOfBirth: unknown; idType: unknown; idNumber: unknown }, actor: AuditActor = CLI_ACTOR) {
    const { value, errors } = validatePersonQuery({ date_of_birth: q.dateOfBirth, id_documents: [{ type: q.idType, number: q.idNumber }] });
    if (!value) {
      const renamed: FieldErrors = {};
      for (const [k, v] of Object.entries(errors)) {
        renamed[
          k
            .replace('id_documents.0.type', 'id-type')
            .replace('id_documents.0.number', 'id-number')
            .replace('date_of_birth', 'date-of-birth')
        ] = v;
      }
      throw validationError(renamed);
    }
    const documents = value.documents.map((d) => ({ type: d.type, hash: hashDocument(d.number) }));
    const found = await registry.subject(documents, value.dateOfBirth, logSince());
    // Recorded by the person's id alone: never the document number or the date of birth. The act,
    // and (as every download of personal data) a `data.exported` naming what; one statement.
    const subject = { type: 'subject', id: found?.person?.id ?? null };
    await deps.auditTrail?.record([
      { companyId: null, action: 'subject.exported', actor, target: { ...subject, name: null }, ip: null, requestId: null },
      {
        companyId: null,
        action: 'data.exported',
        actor,
        target: { ...subject, name: 'subject export' },
        ip: null,
        requestId: null,
        data: { what: 'subject export' },
      },
    ]);
    return found ?? { person: null, claims: [], lookups: [], deliveries: [] };
  }

  return { matches, incident, network, searchByPerson, listLookups, claimLookups, purge, purgeIfDue, subjectExport };
}
export type RegistryService = ReturnType<typeof createRegistryService>;
