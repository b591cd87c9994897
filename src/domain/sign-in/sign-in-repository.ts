/** What the sign-in rules read and write; src/db implements it. Times are passed in (the service's clock). */
export type SecondFactorRow = { sealed: string | null; enabledAt: string | null; lastStep: number | null; remainingCodes: number };
export type SsoSettingsRow = {
  companyId: string;
  issuer: string;
  clientId: string;
  clientSecretSealed: string;
  ssoOnly: boolean;
  /** Every domain the company asked for, approved or not. */
  domains: string[];
  /** Those the operator approved: only these cover sign-ins. */
  approvedDomains: string[];
  /** The provider's discovery document as fetched when the settings were saved; null if saved before it was kept. */
  metadata: Record<string, unknown> | null;
};

export interface SignInRepository {
  secondFactor(userId: string): Promise<SecondFactorRow | undefined>;
  /** Stores a new, not yet confirmed key (only while no factor is enabled). */
  setPendingKey(userId: string, sealed: string): Promise<boolean>;
  /** Confirms the key: enabled, the code's step used, the recovery codes replaced by these hashes. */
  enableKey(userId: string, step: number, codeHashes: string[], at: string): Promise<boolean>;
  /** Records a step as used, if it is later than the last one used; false otherwise (a code used twice). */
  acceptStep(userId: string, step: number): Promise<boolean>;
  /** Marks an unused recovery code used; false when there is no such unused code. */
  useRecoveryCode(userId: string, codeHash: string, at: string): Promise<boolean>;
  disableKey(userId: string): Promise<void>;

  requireSecondFactor(companyId: string): Promise<boolean>;
  setRequireSecondFactor(companyId: string, required: boolean): Promise<void>;

  ssoSettings(companyId: string): Promise<SsoSettingsRow | undefined>;
  /** The provider of the company that holds this domain, approved; undefined when none does. */
  ssoForDomain(domain: string): Promise<SsoSettingsRow | undefined>;
  /**
   * Of the given domains: those another company asked for or holds, and those used by the email
   * of a person of another company or of an operator.
   */
  domainConflicts(companyId: string, domains: string[]): Promise<{ held: string[]; usedByOthers: string[] }>;
  /**
   * Saves the settings; the domains not yet asked for are asked for (not approved), those left
   * out are removed. Returns the domains added and removed; `added` lacks any another company took meanwhile.
   */
  saveSso(s: {
    companyId: string;
    issuer: string;
    clientId: string;
    clientSecretSealed: string | null;
    ssoOnly: boolean;
    domains: string[];
    metadata: Record<string, unknown>;
  }): Promise<{ added: string[]; removed: string[] }>;
  /** Approves a domain the company asked for: 'approved', 'already' (approved before), or undefined (not asked for). */
  approveDomain(companyId: string, domain: string, at: string): Promise<'approved' | 'already' | undefined>;
  /** Removes a domain of the company, asked for or approved; false when it has no such domain. */
  removeDomain(companyId: string, domain: string): Promise<boolean>;
  deleteSso(companyId: string): Promise<void>;

  passwordHash(userId: string): Promise<string | undefined>;
  setPasswordHash(userId: string, hash: string): Promise<void>;
  /** Ends the person's sessions, all of them or all but one (its id's hash). */
  deleteSessions(userId: string, exceptSidHash: string | null): Promise<number>;

  /** A new reset link for the person; their earlier unused links stop working. */
  insertReset(tokenHash: string, userId: string, expiresAt: string): Promise<void>;
  /** The person of an unused, unexpired link, marking it used; undefined otherwise. */
  useReset(tokenHash: string, at: string): Promise<string | undefined>;
  /** The person of an unused, unexpired link without using it (the form's page). */
  findReset(tokenHash: string, at: string): Promise<string | undefined>;
}
