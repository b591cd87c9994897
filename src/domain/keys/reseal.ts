import { CLI_ACTOR, recordAudit, type AuditActor, type AuditRepository } from '../audit/audit';

/** A value sealed with ENCRYPTION_KEY (sealed.ts) where it is kept: a person's TOTP key or a company's SSO client secret. */
export type SealedValue = { kind: 'totp' | 'sso'; id: string; sealed: string };

/** What resealing needs from storage (src/db/sealed-secrets-repository.ts). */
export interface SealedSecretsRepository {
  /** Every sealed value kept, locked against a concurrent change until the transaction ends. */
  lockAll(): Promise<SealedValue[]>;
  /** Replaces each value still equal to `sealed` by `resealed`, set-based; how many were replaced. */
  replace(values: (SealedValue & { resealed: string })[]): Promise<number>;
}

export type ResealDeps = {
  transaction<T>(fn: (tx: { sealedSecrets: SealedSecretsRepository; audit: Pick<AuditRepository, 'record'> }) => Promise<T>): Promise<T>;
  sealer: () => { seal(plain: string): string; open(sealed: string): string; sealedByFirst(sealed: string): boolean };
};

/**
 * `admin reseal` (DECISIONS, Keys rotate without downtime): every TOTP key and SSO client secret
 * sealed by an older key of ENCRYPTION_KEY's list is sealed again with the first, in one
 * transaction with its audit event; the older keys can then be removed. Values already sealed by
 * the first key are left as they are. Never reveals a secret: it counts them.
 */
export async function resealSecrets(
  deps: ResealDeps,
  actor: AuditActor = CLI_ACTOR,
): Promise<{ totp: number; sso: number; total: number }> {
  const sealer = deps.sealer();
  return deps.transaction(async (tx) => {
    const all = await tx.sealedSecrets.lockAll();
    const stale = all.filter((v) => !sealer.sealedByFirst(v.sealed));
    // open() fails for a value no listed key opens: the whole reseal stops with nothing changed.
    const resealed = stale.map((v) => ({ ...v, resealed: sealer.seal(sealer.open(v.sealed)) }));
    await tx.sealedSecrets.replace(resealed);
    const totp = resealed.filter((v) => v.kind === 'totp').length;
    const sso = resealed.length - totp;
    await recordAudit(tx, {
      companyId: null,
      action: 'keys.resealed',
      actor,
      target: { type: 'encryption_key', id: null, name: `${totp} TOTP keys, ${sso} SSO client secrets sealed again with the first key` },
      ip: null,
      requestId: null,
    });
    return { totp, sso, total: all.length };
  });
}
