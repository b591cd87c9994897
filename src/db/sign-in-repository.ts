import type { SecondFactorRow, SignInRepository, SsoSettingsRow } from '../domain/sign-in/sign-in-repository';
import type { Queryable } from './db';

type SsoRow = {
  company_id: string;
  issuer: string;
  client_id: string;
  client_secret_sealed: string;
  sso_only: boolean;
  domains: string[] | null;
};
const ssoOf = (r: SsoRow): SsoSettingsRow => ({
  companyId: r.company_id,
  issuer: r.issuer,
  clientId: r.client_id,
  clientSecretSealed: r.client_secret_sealed,
  ssoOnly: r.sso_only,
  domains: (r.domains ?? []).slice().sort(),
});
const SSO_SELECT = `SELECT s.company_id, s.issuer, s.client_id, s.client_secret_sealed, s.sso_only,
    (SELECT array_agg(d.domain ORDER BY d.domain) FROM company_sso_domains d WHERE d.company_id = s.company_id) AS domains
  FROM company_sso s`;

/** Second factors, company sign-in settings, and password resets (sign-in-service.ts). */
export function createSignInRepository(db: Queryable): SignInRepository {
  return {
    async secondFactor(userId: string): Promise<SecondFactorRow | undefined> {
      const rows = await db.query<{ sealed: string | null; enabled_at: string | null; last_step: string | null; remaining: number }>(
        `SELECT totp_secret_sealed AS sealed, totp_enabled_at::text AS enabled_at, totp_last_step::text AS last_step,
                (SELECT count(*)::int FROM user_recovery_codes c WHERE c.user_id = u.id AND c.used_at IS NULL) AS remaining
           FROM users u WHERE u.id = $1`,
        [userId],
      );
      const r = rows[0];
      return (
        r && {
          sealed: r.sealed,
          enabledAt: r.enabled_at,
          lastStep: r.last_step === null ? null : Number(r.last_step),
          remainingCodes: Number(r.remaining),
        }
      );
    },
    async setPendingKey(userId: string, sealed: string): Promise<boolean> {
      const rows = await db.query(
        'UPDATE users SET totp_secret_sealed = $2, totp_last_step = NULL WHERE id = $1 AND totp_enabled_at IS NULL RETURNING id',
        [userId, sealed],
      );
      return rows.length > 0;
    },
    async enableKey(userId: string, step: number, codeHashes: string[], at: string): Promise<boolean> {
      const rows = await db.query<{ id: string }>(
        `WITH u AS (
           UPDATE users SET totp_enabled_at = $3, totp_last_step = $2
            WHERE id = $1 AND totp_enabled_at IS NULL AND totp_secret_sealed IS NOT NULL RETURNING id
         ), gone AS (
           DELETE FROM user_recovery_codes c USING u WHERE c.user_id = u.id
         ), added AS (
           INSERT INTO user_recovery_codes (user_id, code_hash) SELECT u.id, h FROM u, unnest($4::text[]) AS h
         )
         SELECT id FROM u`,
        [userId, step, at, codeHashes],
      );
      return rows.length > 0;
    },
    async acceptStep(userId: string, step: number): Promise<boolean> {
      const rows = await db.query(
        `UPDATE users SET totp_last_step = $2
          WHERE id = $1 AND totp_enabled_at IS NOT NULL AND (totp_last_step IS NULL OR totp_last_step < $2) RETURNING id`,
        [userId, step],
      );
      return rows.length > 0;
    },
    async useRecoveryCode(userId: string, codeHash: string, at: string): Promise<boolean> {
      const rows = await db.query(
        'UPDATE user_recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING user_id',
        [userId, codeHash, at],
      );
      return rows.length > 0;
    },
    async disableKey(userId: string): Promise<void> {
      await db.query(
        `WITH gone AS (DELETE FROM user_recovery_codes WHERE user_id = $1)
         UPDATE users SET totp_secret_sealed = NULL, totp_enabled_at = NULL, totp_last_step = NULL WHERE id = $1`,
        [userId],
      );
    },

    async requireSecondFactor(companyId: string): Promise<boolean> {
      const rows = await db.query<{ r: boolean }>('SELECT require_second_factor AS r FROM companies WHERE id = $1', [companyId]);
      return rows[0]?.r === true;
    },
    async setRequireSecondFactor(companyId: string, required: boolean): Promise<void> {
      await db.query('UPDATE companies SET require_second_factor = $2 WHERE id = $1', [companyId, required]);
    },

    async ssoSettings(companyId: string): Promise<SsoSettingsRow | undefined> {
      const rows = await db.query<SsoRow>(`${SSO_SELECT} WHERE s.company_id = $1`, [companyId]);
      return rows[0] && ssoOf(rows[0]);
    },
    async ssoForDomain(domain: string): Promise<SsoSettingsRow | undefined> {
      const rows = await db.query<SsoRow>(
        `${SSO_SELECT} WHERE s.company_id = (SELECT company_id FROM company_sso_domains WHERE domain = lower($1))`,
        [domain],
      );
      return rows[0] && ssoOf(rows[0]);
    },
    async domainsOfOthers(companyId: string, domains: string[]): Promise<string[]> {
      const rows = await db.query<{ domain: string }>(
        'SELECT domain FROM company_sso_domains WHERE domain = ANY($2::text[]) AND company_id <> $1 ORDER BY domain',
        [companyId, domains],
      );
      return rows.map((r) => r.domain);
    },
    async saveSso(s): Promise<void> {
      await db.query(
        `WITH saved AS (
           INSERT INTO company_sso (company_id, issuer, client_id, client_secret_sealed, sso_only)
           VALUES ($1, $2, $3, COALESCE($4, ''), $5)
           ON CONFLICT (company_id) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
             client_secret_sealed = COALESCE($4, company_sso.client_secret_sealed), sso_only = EXCLUDED.sso_only, updated_at = now()
           RETURNING company_id
         ), gone AS (
           DELETE FROM company_sso_domains d USING saved WHERE d.company_id = saved.company_id AND NOT (d.domain = ANY($6::text[]))
         )
         INSERT INTO company_sso_domains (domain, company_id) SELECT dom, saved.company_id FROM saved, unnest($6::text[]) AS dom
         ON CONFLICT (domain) DO NOTHING`,
        [s.companyId, s.issuer, s.clientId, s.clientSecretSealed, s.ssoOnly, s.domains],
      );
    },
    async deleteSso(companyId: string): Promise<void> {
      await db.query('DELETE FROM company_sso WHERE company_id = $1', [companyId]);
    },

    async passwordHash(userId: string): Promise<string | undefined> {
      const rows = await db.query<{ h: string }>('SELECT password_hash AS h FROM users WHERE id = $1', [userId]);
      return rows[0]?.h;
    },
    async setPasswordHash(userId: string, hash: string): Promise<void> {
      await db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [userId, hash]);
    },
    async deleteSessions(userId: string, exceptSidHash: string | null): Promise<number> {
      const rows = await db.query(
        'DELETE FROM web_sessions WHERE user_id = $1 AND ($2::text IS NULL OR sid_hash <> $2) RETURNING sid_hash',
        [userId, exceptSidHash],
      );
      return rows.length;
    },

    async insertReset(tokenHash: string, userId: string, expiresAt: string): Promise<void> {
      await db.query(
        `WITH gone AS (DELETE FROM password_resets WHERE user_id = $2)
         INSERT INTO password_resets (token_hash, user_id, expires_at) VALUES ($1, $2, $3)`,
        [tokenHash, userId, expiresAt],
      );
    },
    async useReset(tokenHash: string, at: string): Promise<string | undefined> {
      const rows = await db.query<{ user_id: string }>(
        'UPDATE password_resets SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id',
        [tokenHash, at],
      );
      return rows[0]?.user_id;
    },
    async findReset(tokenHash: string, at: string): Promise<string | undefined> {
      const rows = await db.query<{ user_id: string }>(
        'SELECT user_id FROM password_resets WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
        [tokenHash, at],
      );
      return rows[0]?.user_id;
    },
  };
}
