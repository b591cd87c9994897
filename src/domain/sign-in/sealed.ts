import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets kept in the database that the service itself must read again (a TOTP key, an SSO
 * client secret) are sealed with AES-256-GCM under a key from the environment (ENCRYPTION_KEY):
 * a copy of the database alone does not reveal them. `v1.<iv>.<ciphertext>.<tag>`, base64url.
 *
 * ENCRYPTION_KEY may list several keys, newest first (a rotation): the first seals, every one
 * opens (GCM's tag tells which one sealed a value); `admin reseal` seals again with the first
 * what another one sealed, after which the others can be removed.
 */
export type Sealer = {
  seal(plain: string): string;
  open(sealed: string): string;
  /** Whether the first key sealed this value (false: an older key did, and it needs resealing). */
  sealedByFirst(sealed: string): boolean;
};

const keyOf = (keyText: string) => createHash('sha256').update(`claims-registry sealed secrets\0${keyText}`, 'utf8').digest();

/** The plain text, or undefined when this key did not seal the value (the tag does not verify). */
function openWith(key: Buffer, sealed: string): string | undefined {
  const [version, iv, body, tag] = sealed.split('.');
  if (version !== 'v1' || !iv || body === undefined || !tag) throw new Error('not a sealed value');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** `keyTexts`: ENCRYPTION_KEY's list, newest first (each text of at least 32 characters; its SHA-256 is the 256-bit key). */
export function createSealer(keyTexts: readonly string[]): Sealer {
  const keys = keyTexts.map(keyOf);
  if (keys.length === 0) throw new Error('no sealing key');
  const first = keys[0]!;
  return {
    seal(plain: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', first, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
    },
    open(sealed: string): string {
      for (const key of keys) {
        const plain = openWith(key, sealed);
        if (plain !== undefined) return plain;
      }
      throw new Error('no key of ENCRYPTION_KEY opens this sealed value');
    },
    sealedByFirst: (sealed) => openWith(first, sealed) !== undefined,
  };
}
