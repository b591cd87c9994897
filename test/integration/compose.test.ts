import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * No Docker engine runs where the tests run, so docker-compose.yml is checked statically: it
 * validates against the Compose Specification's JSON Schema (a copy with its licence in
 * test/fixtures/compose-spec/) and every `npm start` / `npm run X` it runs exists in package.json.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const schemaFile = path.join(root, 'test', 'fixtures', 'compose-spec', 'compose-spec.json');

type Service = {
  command?: string | string[];
  entrypoint?: string | string[];
  healthcheck?: { test?: string | string[] };
  deploy?: { replicas?: number };
  environment?: Record<string, string> | string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  image?: string;
  build?: unknown;
};
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const scripts = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

const words = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join(' ') : (v ?? ''));

describe('docker-compose.yml', () => {
  it('validates against the Compose Specification schema', () => {
    const ajv = addFormats.default(new Ajv({ allErrors: true, strict: false }));
    // The file names its draft-07 meta-schema by an https URL that ajv knows under http: drop it.
    const { $schema: _draft, ...schema } = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as Record<string, unknown>;
    const validate = ajv.compile(schema);
    // The schema checks the file as written (merge keys resolved, as Compose does).
    const valid = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
  });

  it('runs only npm scripts that exist in package.json', () => {
    const used: string[] = [];
    for (const service of Object.values(compose.services)) {
      for (const part of [service.command, service.entrypoint, service.healthcheck?.test]) {
        const text = words(part);
        for (const m of text.matchAll(/\bnpm\s+(?:run(?:-script)?\s+([\w:.-]+)|(start|test))\b/gu)) used.push(m[1] ?? m[2]!);
      }
    }
    expect(used.length).toBeGreaterThan(0);
    for (const script of used) expect(scripts, `npm script "${script}"`).toHaveProperty(script);
    // The image runs the same scripts.
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    for (const m of dockerfile.matchAll(/"npm",\s*"(?:run",\s*")?([\w:.-]+)"/gu)) expect(scripts).toHaveProperty(m[1]!);
  });

  it('has the api, two workers, PostgreSQL, Redis without eviction and with persistence, and MinIO with the bucket', () => {
    const { services } = compose;
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['api', 'worker', 'postgres', 'redis', 'minio', 'minio-init']));
    expect(words(services.api!.command)).toBe('npm start');
    expect(words(services.worker!.command)).toBe('npm run worker');
    expect(services.worker!.deploy?.replicas).toBe(2);
    const redis = words(services.redis!.command);
    expect(redis).toMatch(/--maxmemory-policy noeviction/u);
    expect(redis).toMatch(/--appendonly yes/u);
    const env = services.api!.environment as Record<string, string>;
    expect(env).toMatchObject({ REDIS_URL: 'redis://redis:6379', S3_ENDPOINT: 'http://minio:9000' });
    expect(env.DATABASE_URL).toMatch(/@postgres:5432\//u);
    expect(services.worker!.environment).toEqual(env.PORT ? { ...env, PORT: undefined } : env);
    expect(words(services['minio-init']!.entrypoint)).toContain(`mc mb --ignore-existing local/${env.S3_BUCKET}`);
    for (const name of ['api', 'worker', 'postgres', 'redis', 'minio']) expect(services[name]!.healthcheck?.test, name).toBeDefined();
    expect(services.api!.depends_on).toMatchObject({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
      'minio-init': { condition: 'service_completed_successfully' },
    });
  });
});
