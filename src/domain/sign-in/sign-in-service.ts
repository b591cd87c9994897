import { createHash, randomBytes } from 'node:crypto';

import { secondFactorNeeded } from '../access/access';
import { recordAudit, type AuditActor, type AuditEventInput, type AuditOrigin, type AuditRepository } from '../audit/audit';
import type { CompanyRepository, UserRecord } from '../companies/company-repository';
import { PASSWORD_MIN_LENGTH } from '../companies/company-service';
import { AppError, validationError, type FieldErrors } from '../errors';
import { isUuid } from '../ids';
import { hashPassword, verifyPassword } from '../passwords';
import type { Sealer } from './sealed';
import type { SignInRepository } from './sign-in-repository';
import { hashRecoveryCode, looksLikeRecoveryCode, newRecoveryCodes, newTotpKey, totpStep, totpUri } from './totp';

/** A one-time password reset link is valid this long. */
export const RESET_LINK_MS = 60 * 60 * 1000;
/** Stored instead of a password hash for people who came by single sign-on: no password matches it. */
export const NO_PASSWORD = '!no-password';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const DOMAIN = /^(?=.{3,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/u;

/**
 * An issuer URL as the settings accept it: https (and http with `allowPrivate`, OIDC_ALLOW_PRIVATE);
 * no query, fragment or credentials. Whether its host is a public address is checked where it is
 * fetched (src/oidc.ts), on the address connected to.
 */
export function checkIssuer(raw: string, allowPrivate: boolean): string | { error: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: 'The issuer must be a URL, for example https://login.example.com/realms/staff.' };
  }
  if (url.search || url.hash || url.username || url.password) return { error: 'The issuer must have no query, fragment or credentials.' };
  if (url.protocol === 'https:' || (allowPrivate && url.protocol === 'http:')) return raw.replace(/\/+$/u, '');
  return { error: 'The issuer must use https.' };
}

/** Normalizes a domain as typed (case, a leading @), or null when it is no email domain. */
export function normalizeDomain(raw: string): string | null {
  const d = raw.trim().toLowerCase().replace(/^@/u, '');
  return DOMAIN.test(d) ? d : null;
}

/** Who did an act, and where the request came from (null for the command line). */
export type ActBy = { actor: AuditActor; origin: AuditOrigin };

export type SsoSettingsInput = { issuer: string; clientId: string; clientSecret: string; domains: string; ssoOnly: boolean };

export type SignInServiceDeps = {
  repos: {
    signIn: SignInRepository;
    companies: CompanyRepository;
    transaction<T>(
      fn: (tx: { signIn: SignInRepository; companies: CompanyRepository; audit: Pick<AuditRepository, 'record'> }) => Promise<T>,
    ): Promise<T>;
  };
  /** The key for sealed secrets, resolved when first needed. */
  sealer: () => Sealer;
  now: () => number;
  passwordHashCost: number;
  /** Fetches an issuer's discovery document (src/oidc.ts); a failure is a VALIDATION_FAILED naming the issuer. */
  discoverProvider: (issuer: string) => Promise<Record<string, unknown>>;
  /** OIDC_ALLOW_PRIVATE: http issuers, and private or loopback addresses, are allowed. */
  allowPrivateProviders: boolean;
};

/**
 * The audit events of an act, recorded in the act's own transaction (audit.ts): each event, or a
 * function making it from what the act returned.
 */
type Events = AuditEventInput[];

export function createSignInService({ repos, sealer, now, passwordHashCost, discoverProvider, allowPrivateProviders }: SignInServiceDeps) {
  const iso = (t = now()) => new Date(t).toISOString();
  const recordAll = async (tx: { audit: Pick<AuditRepository, 'record'> }, events: Events) => {
    for (const event of events) await recordAudit(tx, event);
  };

  /** The second factor's state of a person: enabled, and recovery codes left. */
  async function secondFactor(userId: string) {
    const row = await repos.signIn.secondFactor(userId);
    return { enabled: Boolean(row?.enabledAt), remainingCodes: row?.remainingCodes ?? 0 };
  }

  /** Whether the person must have a second factor: operators always, a company's people when it requires one. */
  async function secondFactorRequired(user: { role: string; companyId: string | null }): Promise<boolean> {
    if (user.role === 'operator' || user.companyId === null) return secondFactorNeeded({ type: 'operator' });
    return secondFactorNeeded({ type: 'person', companyRequiresSecondFactor: await repos.signIn.requireSecondFactor(user.companyId) });
  }

  /** A new key for enrolment (stored sealed, not yet in force), with what the page shows. */
  async function startEnrolment(user: { id: string; email: string }) {
    const key = newTotpKey();
    if (!(await repos.signIn.setPendingKey(user.id, sealer().seal(key)))) {
      throw new AppError('CONFLICT', 'A second factor is already set up. Turn it off first to set up another.');
    }
    return { key, uri: totpUri(key, user.email) };
  }

  /** The pending key of an enrolment under way (the page shown again after a wrong code). */
  async function pendingEnrolment(user: { id: string; email: string }) {
    const row = await repos.signIn.secondFactor(user.id);
    if (!row?.sealed || row.enabledAt) return undefined;
    const key = sealer().open(row.sealed);
    return { key, uri: totpUri(key, user.email) };
  }

  /** Confirms enrolment with one code; returns the 10 recovery codes (shown once), or undefined for a wrong code. */
  async function confirmEnrolment(userId: string, code: string, events: Events = []): Promise<string[] | undefined> {
    const row = await repos.signIn.secondFactor(userId);
    if (!row?.sealed || row.enabledAt) throw new AppError('CONFLICT', 'There is no set-up under way. Start again.');
    const step = totpStep(sealer().open(row.sealed), code, now());
    if (step === null) return undefined;
    const codes = newRecoveryCodes();
    const ok = await repos.transaction(async (tx) => {
      if (!(await tx.signIn.enableKey(userId, step, codes.map(hashRecoveryCode), iso()))) return false;
      await recordAll(tx, events);
      return true;
    });
    return ok ? codes : undefined;
  }

  /**
   * Checks a code at sign-in or before a change: a TOTP code (one step either side, never one
   * already used) or an unused recovery code (used up by this). 'totp', 'recovery' or null.
   */
  async function checkCode(userId: string, code: string): Promise<'totp' | 'recovery' | null> {
    const row = await repos.signIn.secondFactor(userId);
    if (!row?.sealed || !row.enabledAt) return null;
    const trimmed = code.trim().slice(0, 64);
    if (/^\d[\d\s]*$/u.test(trimmed)) {
      const step = totpStep(sealer().open(row.sealed), trimmed, now());
      return step !== null && (await repos.signIn.acceptStep(userId, step)) ? 'totp' : null;
    }
    if (looksLikeRecoveryCode(trimmed)) {
      return (await repos.signIn.useRecoveryCode(userId, hashRecoveryCode(trimmed), iso())) ? 'recovery' : null;
    }
    return null;
  }

  /** Turns the second factor off, with a current code; refused while one is required. */
  async function disable(
    user: { id: string; role: string; companyId: string | null },
    code: string,
    events: Events = [],
  ): Promise<boolean> {
    if (await secondFactorRequired(user)) {
      throw new AppError('FORBIDDEN', 'A second factor is required for you, so it cannot be turned off.');
    }
    if (!(await checkCode(user.id, code))) return false;
    await repos.transaction(async (tx) => {
      await tx.signIn.disableKey(user.id);
      await recordAll(tx, events);
    });
    return true;
  }

  function checkNewPassword(password: string, confirm: string, field = 'new_password'): FieldErrors | undefined {
    if (password.length < PASSWORD_MIN_LENGTH || password.length > 200) {
      return { [field]: [`The new password must be between ${PASSWORD_MIN_LENGTH} and 200 characters.`] };
    }
    if (password !== confirm) return { confirm_password: ['The two new passwords are not the same.'] };
    return undefined;
  }

  /** Changes the person's password (the current one required) and ends their other sessions. */
  async function changePassword(
    userId: string,
    input: { current: string; next: string; confirm: string },
    keepSid: string,
    events: Events = [],
  ) {
    const stored = await repos.signIn.passwordHash(userId);
    if (!stored || !(await verifyPassword(input.current.slice(0, 200), stored))) {
      throw validationError({ current_password: ['The current password is not right.'] });
    }
    const problems = checkNewPassword(input.next, input.confirm);
    if (problems) throw validationError(problems);
    const hash = await hashPassword(input.next, passwordHashCost);
    await repos.transaction(async (tx) => {
      await tx.signIn.setPasswordHash(userId, hash);
      await tx.signIn.deleteSessions(userId, sha256(keepSid));
      await recordAll(tx, events);
    });
  }

  /** An admin's reset of one of the company's people: a one-time link token, valid 1 hour; their sessions end. */
  async function createResetLink(companyId: string, personId: string, eventFor: (person: UserRecord) => Events = () => []) {
    const person = isUuid(personId) ? await repos.companies.findUserById(personId) : undefined;
    if (!person || person.company_id !== companyId) throw new AppError('NOT_FOUND', 'Person not found.');
    const token = randomBytes(32).toString('base64url');
    const expiresAt = iso(now() + RESET_LINK_MS);
    await repos.transaction(async (tx) => {
      await tx.signIn.insertReset(sha256(token), person.id, expiresAt);
      await tx.signIn.setPasswordHash(person.id, NO_PASSWORD);
      await tx.signIn.deleteSessions(person.id, null);
      await recordAll(tx, eventFor(person));
    });
    return { token, expiresAt, person };
  }

  /** Whether a reset link may still be used (the form's page); its person, or undefined. */
  const resetLinkPerson = (token: string) =>
    token.length > 20 && token.length < 100 ? repos.signIn.findReset(sha256(token), iso()) : Promise.resolve(undefined);

  /** Sets a new password with a reset link, once; the link is used up. Returns the person, or undefined for a used or expired link. */
  async function resetPassword(
    token: string,
    input: { next: string; confirm: string },
    eventFor: (person: UserRecord) => Events = () => [],
  ): Promise<UserRecord | undefined> {
    const problems = checkNewPassword(input.next, input.confirm);
    if (problems) throw validationError(problems);
    if (!(await resetLinkPerson(token))) return undefined;
    const hash = await hashPassword(input.next, passwordHashCost);
    return repos.transaction(async (tx) => {
      const userId = await tx.signIn.useReset(sha256(token), iso());
      if (!userId) return undefined;
      await tx.signIn.setPasswordHash(userId, hash);
      await tx.signIn.deleteSessions(userId, null);
      const person = await tx.companies.findUserById(userId);
      if (person) await recordAll(tx, eventFor(person));
      return person;
    });
  }

  /** The company's sign-in settings as its page shows them (never the client secret). */
  async function companySettings(companyId: string) {
    const [requireSecondFactor, sso] = await Promise.all([
      repos.signIn.requireSecondFactor(companyId),
      repos.signIn.ssoSettings(companyId),
    ]);
    return {
      requireSecondFactor,
      sso: sso
        ? { issuer: sso.issuer, clientId: sso.clientId, ssoOnly: sso.ssoOnly, domains: sso.domains, approvedDomains: sso.approvedDomains }
        : null,
    };
  }

  /** An event about one of the company's SSO domains, naming it. */
  const domainEvent = (
    companyId: string,
    action: 'company.sso_domain_requested' | 'company.sso_domain_approved' | 'company.sso_domain_removed',
    domain: string,
    by: ActBy,
  ): AuditEventInput => ({
    companyId,
    action,
    actor: by.actor,
    target: { type: 'sso_domain', id: null, name: domain },
    ...by.origin,
  });

  /** The domains another company holds or asked for, or whose emails are someone's outside the company: field errors, or undefined. */
  async function domainProblems(companyId: string, domains: string[]): Promise<string[] | undefined> {
    if (domains.length === 0) return undefined;
    const { held, usedByOthers } = await repos.signIn.domainConflicts(companyId, domains);
    const problems = [
      ...held.map((d) => `${d}: another company has asked for this domain or holds it.`),
      ...usedByOthers.filter((d) => !held.includes(d)).map((d) => `${d}: people outside your company have email addresses of this domain.`),
    ];
    return problems.length > 0 ? problems : undefined;
  }

  /**
   * Saves the company's single sign-on; a blank secret keeps the stored one. Field errors name the
   * field. The domains not asked for before are asked for: they cover nobody until the operator
   * approves them. The provider's discovery document is fetched now and kept (a sign-in never
   * fetches it).
   */
  async function saveSso(companyId: string, input: SsoSettingsInput, by: ActBy) {
    const errors: FieldErrors = {};
    const issuer = checkIssuer(input.issuer.trim(), allowPrivateProviders);
    if (typeof issuer !== 'string') errors.issuer = [issuer.error];
    const clientId = input.clientId.trim();
    if (!clientId || clientId.length > 255) errors.client_id = ['The client id is required (at most 255 characters).'];
    const typed = [...new Set(input.domains.split(/[\s,;]+/u).filter((d) => d.trim()))];
    const domains = [...new Set(typed.map(normalizeDomain).filter((d): d is string => d !== null))];
    const bad = typed.filter((d) => normalizeDomain(d) === null);
    if (typed.length === 0) errors.domains = ['Name at least one email domain, for example example.com.'];
    else if (bad.length > 0) errors.domains = [`Not an email domain: ${bad.slice(0, 3).join(', ')}.`];
    else if (domains.length > 50) errors.domains = ['At most 50 domains.'];
    const existing = await repos.signIn.ssoSettings(companyId);
    const secret = input.clientSecret.trim();
    if (!secret && !existing) errors.client_secret = ['The client secret is required.'];
    if (secret.length > 1000) errors.client_secret = ['The client secret is at most 1000 characters.'];
    const asked = domains.filter((d) => !existing?.domains.includes(d));
    if (!errors.domains) {
      const problems = await domainProblems(companyId, asked);
      if (problems) errors.domains = problems;
    }
    if (Object.keys(errors).length > 0) throw validationError(errors);
    // Fetched outside the transaction (no network inside one); a failure is a 422 on the issuer.
    const metadata = await discoverProvider(issuer as string);
    const clientSecretSealed = secret ? sealer().seal(secret) : null;
    await repos.transaction(async (tx) => {
      const saved = await tx.signIn.saveSso({
        companyId,
        issuer: issuer as string,
        clientId,
        clientSecretSealed,
        ssoOnly: input.ssoOnly,
        domains,
        metadata,
      });
      const taken = asked.filter((d) => !saved.added.includes(d));
      if (taken.length > 0) {
        throw validationError({ domains: taken.map((d) => `${d}: another company has asked for this domain or holds it.`) });
      }
      await recordAll(tx, [
        {
          companyId,
          action: 'company.settings_changed',
          actor: by.actor,
          target: { type: 'company', id: companyId, name: 'single sign-on' },
          ...by.origin,
        },
        ...saved.added.map((d) => domainEvent(companyId, 'company.sso_domain_requested', d, by)),
        ...saved.removed.map((d) => domainEvent(companyId, 'company.sso_domain_removed', d, by)),
      ]);
    });
    return { asked };
  }

  /**
   * The operator approves a domain the company asked for; from then on it covers sign-ins. Refused
   * when emails of people outside the company use it (they would be sent to this company's provider).
   */
  async function approveDomain(
    companyId: string,
    rawDomain: string,
    by: ActBy,
  ): Promise<{ domain: string; approved: 'approved' | 'already' }> {
    const domain = normalizeDomain(rawDomain);
    if (!domain) throw validationError({ domain: [`Not an email domain: ${rawDomain.slice(0, 100)}.`] });
    const problems = await domainProblems(companyId, [domain]);
    if (problems) throw validationError({ domain: problems });
    const approved = await repos.transaction(async (tx) => {
      const done = await tx.signIn.approveDomain(companyId, domain, iso());
      if (done === 'approved') await recordAudit(tx, domainEvent(companyId, 'company.sso_domain_approved', domain, by));
      return done;
    });
    if (!approved) throw new AppError('NOT_FOUND', `The company has not asked for the domain ${domain}.`);
    return { domain, approved };
  }

  /** Withdraws a domain (asked for or approved): its people sign in with their passwords again. */
  async function removeDomain(companyId: string, rawDomain: string, by: ActBy): Promise<{ domain: string }> {
    const domain = normalizeDomain(rawDomain);
    if (!domain) throw validationError({ domain: [`Not an email domain: ${rawDomain.slice(0, 100)}.`] });
    const removed = await repos.transaction(async (tx) => {
      if (!(await tx.signIn.removeDomain(companyId, domain))) return false;
      await recordAudit(tx, domainEvent(companyId, 'company.sso_domain_removed', domain, by));
      return true;
    });
    if (!removed) throw new AppError('NOT_FOUND', `The company has no single sign-on domain ${domain}.`);
    return { domain };
  }

  /** The provider covering this email's domain (approved by the operator), with its client secret opened, or undefined. */
  async function ssoForEmail(email: string) {
    const domain = email.trim().toLowerCase().split('@')[1];
    if (!domain) return undefined;
    const row = await repos.signIn.ssoForDomain(domain);
    return row && { ...row, clientSecret: () => sealer().open(row.clientSecretSealed) };
  }

  /** The company's provider with its client secret opened, or undefined. */
  async function ssoForCompany(companyId: string) {
    const row = await repos.signIn.ssoSettings(companyId);
    return row && { ...row, clientSecret: () => sealer().open(row.clientSecretSealed) };
  }

  /**
   * The person an SSO sign-in of `email` (a verified claim of the company's provider) is: an
   * existing person of that company, or a new `member` on their first sign-in. undefined when the
   * email is not covered by this company, or belongs to someone of another company or the operator.
   */
  async function ssoPerson(
    companyId: string,
    email: string,
    createdEvent: (user: UserRecord) => AuditEventInput,
  ): Promise<{ user: UserRecord; created: boolean } | undefined> {
    const normalized = email.trim().toLowerCase();
    const sso = await ssoForEmail(normalized);
    if (!sso || sso.companyId !== companyId) return undefined;
    const found = await repos.companies.findUserByEmail(normalized);
    if (found) {
      const { password_hash: _p, ...user } = found;
      return user.company_id === companyId ? { user, created: false } : undefined;
    }
    const user = await repos.transaction(async (tx) => {
      const made = await tx.companies.insertUser({ companyId, email: normalized, passwordHash: NO_PASSWORD, role: 'member' });
      if (made) await recordAudit(tx, createdEvent(made));
      return made;
    });
    if (user) return { user, created: true };
    // Created by a sign-in of the same person at the same moment.
    const raced = await repos.companies.findUserByEmail(normalized);
    if (!raced || raced.company_id !== companyId) return undefined;
    const { password_hash: _p, ...user2 } = raced;
    return { user: user2, created: false };
  }

  return {
    secondFactor,
    secondFactorRequired,
    startEnrolment,
    pendingEnrolment,
    confirmEnrolment,
    checkCode,
    disable,
    changePassword,
    createResetLink,
    resetLinkPerson,
    resetPassword,
    companySettings,
    setRequireSecondFactor: (companyId: string, required: boolean, events: Events = []) =>
      repos.transaction(async (tx) => {
        await tx.signIn.setRequireSecondFactor(companyId, required);
        await recordAll(tx, events);
      }),
    saveSso,
    approveDomain,
    removeDomain,
    deleteSso: (companyId: string, events: Events = []) =>
      repos.transaction(async (tx) => {
        await tx.signIn.deleteSso(companyId);
        await recordAll(tx, events);
      }),
    ssoForEmail,
    ssoForCompany,
    /** Who an email belongs to (for the failed sign-in's event: the company that sees it), or undefined. */
    async personByEmail(email: string) {
      const found = await repos.companies.findUserByEmail(email.trim());
      return found && { id: found.id, email: found.email, companyId: found.company_id };
    },
    ssoPerson,
  };
}
export type SignInService = ReturnType<typeof createSignInService>;
