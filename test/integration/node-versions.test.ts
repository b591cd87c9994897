import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * The supported Node.js versions are named in files that nothing else ties together: the version
 * the containers run (the Dockerfile's tag, .nvmrc, the one CI runs the whole suite on), the oldest
 * one package.json's engines allow (the one CI's fresh-clone check runs on), and the engines every
 * installed package declares, which must accept every version ours do (else npm warns EBADENGINE
 * there, and the package may rely on what that Node.js lacks).
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
const oldest = semver.minVersion(engines)?.version;
const current = read('.nvmrc').trim();
const ci = read('.ci/run');

type LockEntry = { version?: string; engines?: { node?: string } | string[] };
const lockPackages = (JSON.parse(read('package-lock.json')) as { packages: Record<string, LockEntry> }).packages;

describe('supported Node.js versions', () => {
  it('.nvmrc names the exact version the Dockerfile builds the image on, one that engines allow', () => {
    expect(current).toMatch(/^\d+\.\d+\.\d+$/u);
    const tag = /^FROM\s+node:(\d+\.\d+\.\d+)-/mu.exec(read('Dockerfile'))?.[1];
    expect(tag).toBe(current);
    expect(semver.satisfies(current, engines)).toBe(true);
  });

  it('CI runs the whole suite on the .nvmrc version and the fresh-clone check on the oldest version engines allow', () => {
    expect(ci).toMatch(/^NODE_CURRENT="\$\(cat \.nvmrc\)"$/mu);
    expect(/^NODE_OLDEST=(\S+)$/mu.exec(ci)?.[1]).toBe(oldest);
  });

  it('every installed package runs on every version engines allow', () => {
    const refusing = Object.entries(lockPackages).flatMap(([where, entry]) => {
      const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined;
      if (where === '' || !range || semver.subset(engines, range)) return [];
      return [`${where}@${entry.version} wants node ${range}, not all of ${engines}`];
    });
    expect(refusing).toEqual([]);
  });
});
