import { minusYears } from '../dates';
import { pageOf, pageRequest } from '../paging';
import { isUuid, newId } from '../ids';
import { AppError, RetryableConflict, validationError, type FieldErrors } from '../errors';
import { createGroupCommit } from '../group-commit';
import type { DocumentHasher, DocumentRef, IdentityOutcome, IdentityPlan, KnownDocument } from '../clients/identity';
import type { AuditEventInput } from '../audit/audit';
import { planIdentities } from '../clients/identity';
import {
  admitMismatches,
  createCheckCounts,
  HOUR_MS,
  identityCheckOf,
  identityChecksLimited,
  identityChecksLimitedEvent,
  isMismatch,
  limitedOutcome,
  type IdentityCheck,
  type IdentityCheckLog,
  type IdentityCheckPolicy,
  type Who,
} from '../clients/identity-checks';
import type { Principal } from '../principal';
import type { Claim, ClaimInput, ClaimSource, ClaimStatus } from './claim';
import type { ClaimRepos, NewClaimRow, StoredClaim } from './claim-repository';
import { CLAIM_FIELDS, isPlateText, messages, normalizePlate, validateClaimInput } from './claim';
import { STATUS_ALERT_DAYS } from '../alerts/alerts';
import { parsePurpose } from '../registry/registry';
import { lookupOf } from '../registry/registry-service';
import type { LookupJournal } from '../registry/lookup-journal';
import type { LookupEntry, SearchRepository } from '../registry/registry';
import type { LoggedPlateSearches } from './logged-plate-searches';

export type ClaimServiceDeps = {
  repos: ClaimRepos;
  hashDocument: DocumentHasher;
  /** Today's date in the service's time zone. */
  today: () => string;
  searchHistoryYears: number;
  /** Where plate searches are noted for the look-up log, when `loggedPlateSearches` is not given. */
  journal: Pick<LookupJournal, 'record'>;
  /**
   * Where plate searches read: a replica's (see SearchRepository); default: the store's claims.
   */
  searches?: Pick<SearchRepository, 'searchByPlate'>;
  /**
   * Plate searches with their look-up entries in one statement per batch (logged-plate-searches.ts),
   * when searches and the log are on one database. Without it, a search reads from `searches`,
   * then waits for `journal`.
   */
  loggedPlateSearches?: Pick<LoggedPlateSearches, 'search'>;
  /** Match and status-change alerts (ALERTS_ENABLED); default on. */
  alertsEnabled?: boolean;
  /**
   * Whether a failed write says nothing about the submissions in it (the database unreachable):
   * such a batch fails as a whole; after any other error each of its submissions is written again
   * on its own, so that one submission's fault fails no other. Default: none.
   */
  unavailable?: (err: unknown) => boolean;
  /** Identity checks (identity-checks.ts): the hourly budget and the clock; default: no budget, the real time. */
  identityChecks?: IdentityCheckPolicy;
};

/** A claim submitted on its own, validated, waiting for its batch's write. */
type Submission = { principal: Principal; input: ClaimInput; documents: DocumentRef[]; source: ClaimSource };
/** What the write made of a submission: the claim as stored, or why its person could not be resolved. */
type Submitted =
  | { ok: true; claim: Claim }
  | { ok: false; errors: FieldErrors }
  | { ok: false; failure: unknown }
  /** Refused: the company is past its identity-check budget. */
  | { ok: false; limited: true };

/** The answer's fields that are the write's time: a claim just written takes them from the write (writeTime). */
const WRITE_TIME_FIELDS = ['created_at'] as const satisfies readonly (keyof Claim)[];
type WriteTimeField = (typeof WRITE_TIME_FIELDS)[number];
const isWriteTime = (f: keyof Claim): f is WriteTimeField => (WRITE_TIME_FIELDS as readonly string[]).includes(f);
const writeTime = (at: string) => Object.fromEntries(WRITE_TIME_FIELDS.map((f) => [f, at])) as Record<WriteTimeField, string>;
/** A claim just planned, as it is answered but for the write's time. */
type ShownClaim = Omit<Claim, WriteTimeField>;

/** Too many submissions already wait for a write. */
const submissionsBacklogged = () => new AppError('UNAVAILABLE', 'Too many claims are being submitted right now; try again in a moment.');

const notFound = () => new AppError('NOT_FOUND', 'Claim not found.', undefined, 'claim_not_found');

export function toPublic({ companyId: _c, position: _p, ...claim }: StoredClaim): Claim {
  return claim;
}

export function createClaimService({
  repos,
  hashDocument,
  today,
  searchHistoryYears,
  journal,
  searches = repos.claims,
  loggedPlateSearches,
  alertsEnabled = true,
  unavailable = () => false,
  identityChecks: policy = { perHour: 0, now: Date.now },
}: ClaimServiceDeps) {
  /** The first day of the search window, worked out once per day. */
  let window = { today: '', from: '' };
  const windowStart = (day: string): string => {
    if (window.today !== day) window = { today: day, from: minusYears(day, searchHistoryYears) };
    return window.from;
  };
  const checkCounts = createCheckCounts(repos.identityChecks);
  /** A claim's identity documents as stored: type and keyed hash of the number (CPU work, no I/O). */
  const documentsOf = (input: ClaimInput): DocumentRef[] =>
    input.client.documents.map((d) => ({ type: d.type, hash: hashDocument(d.number) }));

  /**
   * Resolves the identities of a batch in row order against `known`
   * (its documents as looked up with `findDocuments`) and builds the claim rows to write with
   * `insertResolved`: `claims` has one entry per input (null for a row that failed), `written`
   * the rows to write.
   */
  function planBatch(
    principal: Pick<Principal, 'companyId'>,
    inputs: ClaimInput[],
    source: ClaimSource,
    importId: string | null,
    documents: DocumentRef[][],
    known: KnownDocument[],
  ): { plan: IdentityPlan; claims: (NewClaimRow | null)[]; written: NewClaimRow[] } {
    const owner = { companyId: principal.companyId, source };
    return planOwned(inputs, () => owner, importId, documents, known);
  }

  /** planBatch for rows of several companies or sources: `ownerOf(i)` gives row i's. */
  function planOwned(
    inputs: ClaimInput[],
    ownerOf: (i: number) => { companyId: string; source: ClaimSource },
    importId: string | null,
    documents: DocumentRef[][],
    known: KnownDocument[],
  ): { plan: IdentityPlan; claims: (NewClaimRow | null)[]; written: NewClaimRow[] } {
    // Plain object literals, no spreads: this runs for every row of an import, inside its chunk's transaction.
    const rows = inputs.map(({ client: c }, i) => ({
      firstName: c.firstName,
      lastName: c.lastName,
      dateOfBirth: c.dateOfBirth,
      documents: documents[i]!,
    }));
    const plan = planIdentities(rows, known);
    const written: NewClaimRow[] = [];
    const claims = plan.outcomes.map((o, i): NewClaimRow | null => {
      if (!o.ok) return null;
      const owner = ownerOf(i);
      const row: NewClaimRow = {
        input: inputs[i]!,
        id: newId(),
        clientId: o.client.id,
        companyId: owner.companyId,
        source: owner.source,
        importId,
      };
      written.push(row);
      return row;
    });
    return { plan, claims, written };
  }

  /**
   * Writes a batch of submissions (of any companies) as one: one look-up of all their documents,
   * their persons resolved in arrival order (as if submitted one after the other: a person the
   * first creates, the second finds), and one statement writing the persons, the claims and the
   * alerts they make, between each other too. A submission whose person cannot be resolved is
   * answered its error and written nowhere; the others are written. A batch whose write fails (but
   * for the database being unreachable) is written again one submission at a time, so that the
   * one the database refuses fails alone.
   */
  async function writeSubmissions(batch: Submission[]): Promise<Submitted[]> {
    try {
      return await writeTogether(batch);
    } catch (err) {
      if (batch.length === 1 || unavailable(err)) throw err;
      const alone: Submitted[] = [];
      for (const s of batch)
        alone.push(
          await writeTogether([s]).then(
            (r) => r[0]!,
            (failure: unknown) => ({ ok: false, failure }),
          ),
        );
      return alone;
    }
  }

  async function writeTogether(batch: Submission[]): Promise<Submitted[]> {
    const from = windowStart(today());
    return withRetries(async () => {
      const at = policy.now();
      const companyOf = (i: number) => batch[i]!.principal.companyId;
      const companies = [...new Set(batch.map((s) => s.principal.companyId))];
      // The companies' identity checks of the last hour (as last read, within a second), beside the documents.
      const [known, cached] = await Promise.all([
        repos.claims.findDocuments(batch.flatMap((s) => s.documents)),
        policy.perHour > 0 ? checkCounts.used(companies, at) : undefined,
      ]);
      let usedBefore = cached;
      let exact = false;
      // Submissions of a company past its budget are refused; a mismatch that takes a company past
      // it refuses that submission and the company's later ones of the batch, which is planned again
      // without them (their persons must not be created). A batch with a mismatch is decided on
      // counts read now.
      const limited = new Set<number>();
      for (;;) {
        const refused = new Set(limited);
        if (usedBefore) batch.forEach((s, i) => (usedBefore!.get(s.principal.companyId) ?? 0) >= policy.perHour && refused.add(i));
        const active = batch.map((_s, i) => i).filter((i) => !refused.has(i));
        const { plan, claims, written } = planOwned(
          active.map((i) => batch[i]!.input),
          (j) => ({ companyId: companyOf(active[j]!), source: batch[active[j]!]!.source }),
          null,
          active.map((i) => batch[i]!.documents),
          known,
        );
        if (usedBefore && !exact && plan.outcomes.some(isMismatch)) {
          usedBefore = await checkCounts.used(companies, at, { fresh: true });
          exact = true;
          continue;
        }
        const { admitted, limitedFrom, exhausted } = admitMismatches(
          plan.outcomes,
          (j) => companyOf(active[j]!),
          new Map(usedBefore),
          policy.perHour,
        );
        if (limitedFrom.size > 0) {
          for (const [company, j0] of limitedFrom)
            for (let j = j0; j < active.length; j++) if (companyOf(active[j]!) === company) limited.add(active[j]!);
          continue;
        }
        const checks = admitted.map((j) => {
          const o = plan.outcomes[j]!;
          return identityCheckOf(batch[active[j]!]!.principal, at, o.ok ? [] : o.clientIds);
        });
        const shown = plan.outcomes.map((o, j) =>
          o.ok ? shownClaim(batch[active[j]!]!.principal, claims[j]!, o.client, batch[active[j]!]!.source) : null,
        );
        const createdAt = await write(plan, written, shown, from, checks, exhausted.map(identityChecksLimitedEvent));
        for (const c of checks) checkCounts.added(c.companyId, 1);
        const results: Submitted[] = batch.map(() => ({ ok: false, limited: true }));
        plan.outcomes.forEach((o, j) => {
          results[active[j]!] = o.ok
            ? { ok: true, claim: { ...shown[j]!, ...writeTime(createdAt!) } }
            : { ok: false, errors: { [o.field]: [o.message] } };
        });
        return results;
      }
    });
  }

  /**
   * The batch's persons and claims (with their match alerts) in one statement, and its identity
   * checks with them in one transaction when there are any: a mismatch is answered only once its
   * look-up log entry is committed. The claims' creation time.
   */
  async function write(
    plan: IdentityPlan,
    written: NewClaimRow[],
    shown: (ShownClaim | null)[],
    from: string,
    checks: IdentityCheck[],
    events: AuditEventInput[],
  ): Promise<string | null> {
    const clients: Record<string, Claim['client']> = {};
    for (const c of shown) if (c) clients[c.id] = c.client;
    const matchAlerts = alertsEnabled ? { fromDate: from, clients } : undefined;
    if (checks.length === 0) {
      if (written.length === 0) return null;
      return (await repos.claims.insertResolved(plan, written, matchAlerts)).createdAt;
    }
    return repos.transaction(async (tx) => {
      const claimsWritten = written.length > 0 ? tx.claims.insertResolved(plan, written, matchAlerts) : undefined;
      // Sent behind the claims' statement; both are awaited before the commit.
      claimsWritten?.catch(() => {});
      await tx.identityChecks.append(checks);
      for (const event of events) await tx.audit.record(event);
      return (await claimsWritten)?.createdAt ?? null;
    });
  }

  /**
   * planBatch for the rows of one company (an import chunk, a dry run's), within its
   * identity-check budget, read in `tx`: when the company is past it, every row fails with the
   * budget's message; a mismatch that takes it past fails that row and every later one (the rows
   * before it are planned again alone, so that no later row's person is created). `checks` are the
   * identity checks of the admitted mismatches, and `events` the audit event when one of them used
   * the budget up, to write in the same transaction.
   */
  async function planWithinBudget(
    tx: { identityChecks: IdentityCheckLog },
    who: Who,
    inputs: ClaimInput[],
    source: ClaimSource,
    importId: string | null,
    documents: DocumentRef[][],
    known: KnownDocument[],
    /** Identity checks of the company's made but not yet committed (an import's chunks in flight). */
    pendingChecks = 0,
  ): Promise<{
    plan: IdentityPlan;
    claims: (NewClaimRow | null)[];
    written: NewClaimRow[];
    checks: IdentityCheck[];
    events: AuditEventInput[];
  }> {
    const at = policy.now();
    const used = policy.perHour > 0 ? await tx.identityChecks.countSince([who.companyId], at - HOUR_MS) : new Map<string, number>();
    if (pendingChecks > 0) used.set(who.companyId, (used.get(who.companyId) ?? 0) + pendingChecks);
    let cut = (used.get(who.companyId) ?? 0) >= policy.perHour && policy.perHour > 0 ? 0 : inputs.length;
    let planned = planBatch(who, inputs.slice(0, cut), source, importId, documents.slice(0, cut), known);
    let admission = admitMismatches(planned.plan.outcomes, () => who.companyId, new Map(used), policy.perHour);
    const from = admission.limitedFrom.get(who.companyId);
    if (from !== undefined) {
      cut = from;
      planned = planBatch(who, inputs.slice(0, cut), source, importId, documents.slice(0, cut), known);
      admission = admitMismatches(planned.plan.outcomes, () => who.companyId, new Map(used), policy.perHour);
    }
    const { admitted, exhausted } = admission;
    const { plan, claims, written } = planned;
    const checks = admitted.map((i) => {
      const o = plan.outcomes[i]!;
      return identityCheckOf(who, at, o.ok ? [] : o.clientIds);
    });
    for (let i = cut; i < inputs.length; i++) {
      plan.outcomes.push(limitedOutcome);
      claims.push(null);
    }
    return { plan, claims, written, checks, events: exhausted.map(identityChecksLimitedEvent) };
  }

  /**
   * Submissions by group commit: those that arrive while a batch is being written go together as
   * the next batch (writeSubmissions). A lone submission is written at once; under load a batch
   * shares one look-up, one statement and one commit. Each is answered once its batch has
   * committed. One batch at a time: each sees every claim the process wrote before it, so the
   * alerts between this process's submissions are exact (two writes at once would not see each
   * other's claims). A batch that fails because the database is unreachable rejects each of its
   * submissions with that error, having written nothing.
   */
  const submissions = createGroupCommit<Submission, Submitted>({
    lanes: 1,
    maxBatch: 100,
    maxBacklog: 5_000,
    failed: (cause) => (cause instanceof Error ? cause : submissionsBacklogged()),
    run: writeSubmissions,
  });

  async function submit(principal: Principal, body: unknown, source: ClaimSource = 'api'): Promise<Claim> {
    const { value, errors } = validateClaimInput(body, today());
    if (!value) throw validationError(errors);
    const written = await submissions.submit({ principal, input: value, documents: documentsOf(value), source });
    if (written.ok) return written.claim;
    if ('errors' in written) throw validationError(written.errors);
    if ('limited' in written) throw identityChecksLimited();
    throw written.failure;
  }

  /**
   * A claim just written as it is answered (claim-schema.ts), but for the write's time
   * (WRITE_TIME_FIELDS): the submitted fields as validated, in the declaration's order.
   */
  function shownClaim(
    principal: Pick<Principal, 'companyName'>,
    row: NewClaimRow,
    c: Extract<IdentityOutcome, { ok: true }>['client'],
    source: ClaimSource,
  ): ShownClaim {
    const client: Claim['client'] = {
      id: c.id,
      first_name: c.firstName,
      last_name: c.lastName,
      date_of_birth: c.dateOfBirth,
      id_documents: c.documentTypes.map((type) => ({ type })),
    };
    const claim: Record<string, unknown> = {};
    for (const f of CLAIM_FIELDS) {
      if (isWriteTime(f)) continue;
      switch (f) {
        case 'id':
          claim[f] = row.id;
          break;
        case 'client':
          claim[f] = client;
          break;
        case 'source':
          claim[f] = source;
          break;
        case 'company_name':
          claim[f] = principal.companyName;
          break;
        default:
          // A field the submission sets (claim.ts SubmittedFields): another field the answer gains is a compile error here.
          claim[f] = row.input[f];
      }
    }
    return claim as ShownClaim;
  }

  /** A claim of the caller's company; another company's claim is "not found" here. */
  async function get(principal: Principal, id: string): Promise<Claim> {
    if (!isUuid(id)) throw notFound();
    const claim = await repos.claims.findById(principal.companyId, id);
    if (!claim) throw notFound();
    return toPublic(claim);
  }

  async function list(principal: Principal, opts: { status?: ClaimStatus | undefined; cursor?: string | undefined; limit: number }) {
    const rows = await repos.claims.listByCompany(principal.companyId, { status: opts.status, ...pageRequest(opts) });
    return pageOf(rows, opts.limit, toPublic);
  }

  /** `status` is one of CLAIM_STATUSES: the callers' input schemas check that. */
  async function updateStatus(principal: Principal, id: string, status: ClaimStatus): Promise<Claim> {
    if (!isUuid(id)) throw notFound();
    const result = await repos.transaction(async (tx) => {
      const r = await tx.claims.updateStatus(principal.companyId, id, status, {
        tokenId: principal.tokenId,
        userId: principal.userId,
      });
      if (r.found !== 'own') return r.found;
      // Setting the same status again is no change, and tells nobody.
      if (alertsEnabled && r.previous !== status) await tx.alerts.statusChanged(id, r.previous, status, STATUS_ALERT_DAYS);
      return tx.claims.findById(principal.companyId, id);
    });
    if (result === 'other') throw new AppError('FORBIDDEN', 'This action is unauthorized.');
    if (result === 'none' || !result) throw notFound();
    return toPublic(result);
  }

  /** A plate search, answered once its look-up entry (whose claim ids it fills in) is committed. */
  async function plateSearch(plate: string, fromDate: string, entry: Omit<LookupEntry, 'at'>): Promise<Claim[]> {
    if (loggedPlateSearches) return loggedPlateSearches.search(plate, fromDate, entry);
    const claims = await searches.searchByPlate(plate, fromDate);
    entry.claimIds = claims.map((c) => c.id);
    await journal.record(entry);
    return claims;
  }

  /**
   * `plate` is a string of at most 20 characters (the callers' input schemas check that); what
   * is left after normalization must be letters and digits. Every search is noted in the
   * look-up log (who, when, the plate, which claims, why).
   */
  async function searchByPlate(principal: Principal, plate: string, purposeRaw?: string | null) {
    const errors: FieldErrors = {};
    const field = 'vehicle_registration';
    const normalized = normalizePlate(plate);
    if (normalized === '') errors[field] = [messages.required(field)];
    else if (!isPlateText(normalized)) errors[field] = [messages.plateCharacters];
    const purpose = parsePurpose(purposeRaw, errors);
    if (Object.keys(errors).length > 0) throw validationError(errors);
    const from = windowStart(today());
    // Answered only once its look-up log entry is committed (group commit).
    const claims = await plateSearch(
      normalized,
      from,
      lookupOf(principal, purpose, 'plate_search', { vehicleRegistration: normalized }, []),
    );
    return {
      data: claims,
      meta: { total_claims: claims.length, query_period: `${searchHistoryYears} year${searchHistoryYears === 1 ? '' : 's'}` },
    };
  }

  return {
    submit,
    get,
    list,
    updateStatus,
    searchByPlate,
    planBatch,
    planWithinBudget,
    documentsOf,
    flush: submissions.flush,
  };
}
export type ClaimService = ReturnType<typeof createClaimService>;

/** Runs fn again when it lost a race; a handful of attempts always suffices in practice. */
export async function withRetries<T>(fn: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof RetryableConflict) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}
