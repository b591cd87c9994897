import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import type { Config } from './config';

/** A process cannot start with this configuration or database; the message says why (no stack). */
export class StartupError extends Error {}

/**
 * A secret from its variable, or in embedded mode one generated once into DATA_DIR and reused.
 * PostgreSQL mode requires the variable: several processes must share the same value.
 */
function resolveSecret(config: Config, given: string | undefined, variable: string, fileName: string, sharedBy: string): string {
  if (given) return given;
  if (config.databaseUrl) {
    throw new StartupError(`${variable} must be set when DATABASE_URL is set (at least 32 characters, the same for every ${sharedBy}).`);
  }
  const file = path.join(config.dataDir, fileName);
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return fs.readFileSync(file, 'utf8').trim();
}

/** The key of the identity documents' HMAC (DOCUMENT_HASH_KEY). */
export const resolveDocumentHashKey = (config: Config) =>
  resolveSecret(config, config.documentHashKey, 'DOCUMENT_HASH_KEY', 'document-hash.key', 'process');

/**
 * The dashboard's cookie-signing secret (SESSION_SECRET). Resolved when the dashboard is
 * registered, so the worker and the admin CLI do not need it.
 */
export const resolveSessionSecret = (config: Config) =>
  resolveSecret(config, config.sessionSecret, 'SESSION_SECRET', 'session-secret.key', 'server process');

/**
 * The key that seals secrets kept in the database (ENCRYPTION_KEY): TOTP keys and SSO client
 * secrets. Resolved when a secret is first sealed or opened, so processes that never do (the
 * worker, most admin commands) do not need it.
 */
export const resolveEncryptionKey = (config: Config) =>
  resolveSecret(config, config.encryptionKey, 'ENCRYPTION_KEY', 'encryption.key', 'server process');
