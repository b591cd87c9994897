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
 * A variable that may list several secrets, comma-separated, newest first (a rotation: the first
 * signs or seals, every one verifies or opens). Each must be at least 32 characters.
 */
export function secretList(value: string, variable: string): string[] {
  const list = value.split(',').map((s) => s.trim());
  if (list.some((s) => s.length < 32)) {
    throw new StartupError(`${variable} must be one secret, or several separated by commas, each at least 32 characters.`);
  }
  return list;
}

/**
 * The dashboard's cookie-signing secrets (SESSION_SECRET, newest first: the first signs, every
 * one verifies). Resolved when the dashboard is registered, so the worker and the admin CLI do
 * not need it.
 */
export const resolveSessionSecrets = (config: Config): string[] =>
  secretList(resolveSecret(config, config.sessionSecret, 'SESSION_SECRET', 'session-secret.key', 'server process'), 'SESSION_SECRET');

/**
 * The keys that seal secrets kept in the database (ENCRYPTION_KEY, newest first: the first seals,
 * every one opens): TOTP keys and SSO client secrets. Resolved when a secret is first sealed or
 * opened, so processes that never do (the worker, most admin commands) do not need it.
 */
export const resolveEncryptionKeys = (config: Config): string[] =>
  secretList(resolveSecret(config, config.encryptionKey, 'ENCRYPTION_KEY', 'encryption.key', 'server process'), 'ENCRYPTION_KEY');
