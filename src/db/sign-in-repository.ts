import type { SecondFactorRow, SignInRepository, SsoSettingsRow } from '../domain/sign-in/sign-in-repository';
import type { Queryable } from './db';

type SsoRow = {
  company_id: string;
  issuer: string;
  client_id: string;
  client_secret_sealed: string;
  sso_only: boolean;
  domains: string[] | null;
  approved: string[] | null;
  metadata: Record<string, unknown> | string | null;
};
const ssoOf = (r: SsoRow): SsoSettingsRow => ({
  companyId: r.company_id,
  issuer: r.issuer,
  clientId: r.client_id,
  clientSecretSealed: r.client_secret_sealed,
  ssoOnly: r.sso_only,
  domains: (r.domains ?? []).slice().sort(),
  approvedDomains: (r.approved ?? []).slice().sort(),
  metadata: typeof r.metadata === 'string' ? (JSON.parse(r.metadata) as Record<string, unknown>) : r.metadata,
});
const SSO_SELECT = `SELECT s.company_id, s.issuer, s.client_id, s.client_secret_sealed, s.sso_only, s.metadata,
    (SELECT array_agg(d.domain ORDER BY d.domain) FROM company_sso_domains d WHERE d.company_id = s.company_id) AS domains,
    (SELECT array_agg(d.domain ORDER BY d.domain) FROM company_sso_domains d
      WHERE d.company_id = s.company_id AND d.approved_at IS NOT NULL) AS approved
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
        `${SSO_SELECT} WHERE s.company_id = (SELECT company_id FROM company_sso_domains WHERE domain = lower($1) AND approved_at IS NOT NULL)`,
        [domain],
      );
      return rows[0] && ssoOf(rows[0]);
    },
    async domainConflicts(companyId: string, domains: string[]) {
      const rows = await db.query<{ domain: string; held: boolean; used: boolean }>(
        `SELECT dom AS domain,
                EXISTS (SELECT 1 FROM company_sso_domains d WHERE d.domain = dom AND d.company_id <> $1) AS held,
                EXISTS (SELECT 1 FROM users u WHERE lower(split_part(u.email, '@', 2)) = dom
                          AND (u.company_id IS NULL OR u.company_id <> $1)) AS used
           FROM unnest($2::text[]) AS dom ORDER BY dom`,
        [companyId, domains],
      );
      return { held: rows.filter((r) => r.held).map((r) => r.domain), usedByOthers: rows.filter((r) => r.used).map((r) => r.domain) };
    },
    async saveSso(s) {
      const rows = await db.query<{ domain: string; change: 'added' | 'removed' }>(
        `WITH saved AS (
           INSERT INTO company_sso (company_id, issuer, client_id, client_secret_sealed, sso_only, metadata)
           VALUES ($1, $2, $3, COALESCE($4, ''), $5, $7::text::jsonb)
           ON CONFLICT (company_id) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
             client_secret_sealed = COALESCE($4, company_sso.client_secret_sealed), sso_only = EXCLUDED.sso_only,
             metadata = EXCLUDED.metadata, updated_at = now()
           RETURNING company_id
         ), gone AS (
           DELETE FROM company_sso_domains d USING saved WHERE d.company_id = saved.company_id AND NOT (d.domain = ANY($6::text[]))
           RETURNING d.domain
         ), added AS (
           INSERT INTO company_sso_domains (domain, company_id)
           SELECT dom, saved.company_id FROM saved, unnest($6::text[]) AS dom
            WHERE NOT EXISTS (SELECT 1 FROM company_sso_domains d WHERE d.domain = dom AND d.company_id = saved.company_id)
           ON CONFLICT (domain) DO NOTHING
           RETURNING domain
         )
         SELECT domain, 'added' AS change FROM added UNION ALL SELECT domain, 'removed' FROM gone ORDER BY 1`,
        [s.companyId, s.issuer, s.clientId, s.clientSecretSealed, s.ssoOnly, s.domains, JSON.stringify(s.metadata)],
      );
      return {
        added: rows.filter((r) => r.change === 'added').map((r) => r.domain),
        removed: rows.filter((r) => r.change === 'removed').map((r) => r.domain),
      };
    },
    async approveDomain(companyId: string, domain: string, at: string) {
      const rows = await db.query<{ before: string | null }>(
        `UPDATE company_sso_domains d SET approved_at = COALESCE(d.approved_at, $3)
           FROM company_sso_domains old
          WHERE d.company_id = $1 AND d.domain = $2 AND old.domain = d.domain
          RETURNING old.approved_at::text AS before`,
        [companyId, domain, at],
      );
      if (!rows[0]) return undefined;
      return rows[0].before === null ? 'approved' : 'already';
    },
    async removeDomain(companyId: string, domain: string): Promise<boolean> {
      const rows = await db.query('DELETE FROM company_sso_domains WHERE company_id = $1 AND domain = $2 RETURNING domain', [
        companyId,
        domain,
      ]);
      return rows.length > 0;
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
