import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets kept in the database that the service itself must read again (a TOTP key, an SSO
 * client secret) are sealed with AES-256-GCM under a key from the environment (ENCRYPTION_KEY):
 * a copy of the database alone does not reveal them. `v1.<iv>.<ciphertext>.<tag>`, base64url.
 */
export type Sealer = { seal(plain: string): string; open(sealed: string): string };

export function createSealer(keyText: string): Sealer {
  // The variable is text of at least 32 characters; its SHA-256 is the 256-bit key.
  const key = createHash('sha256').update(`claims-registry sealed secrets\0${keyText}`, 'utf8').digest();
  return {
    seal(plain: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
    },
    open(sealed: string): string {
      const [version, iv, body, tag] = sealed.split('.');
      if (version !== 'v1' || !iv || body === undefined || !tag) throw new Error('not a sealed value');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
