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
 * test/fixtures/compose-spec/), and its services start node with the same commands as the npm scripts.
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

  it('starts node directly, with the same command as the npm scripts, so SIGTERM reaches the process', () => {
    // `exec` makes node the script's own process (a signal to npm reaches it); the rest is node's argv.
    const argv = (script: string) => scripts[script]!.replace(/^exec\s+/u, '').split(/\s+/u);
    expect(argv('start')[0]).toBe('node');
    expect(argv('worker')[0]).toBe('node');
    expect(compose.services.api!.command).toEqual(argv('start'));
    expect(compose.services.worker!.command).toEqual(argv('worker'));
    const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const cmd = /^CMD\s+(\[.*\])\s*$/mu.exec(dockerfile)?.[1];
    expect(cmd && JSON.parse(cmd)).toEqual(argv('start'));
    // Any `npm run X` still used (health checks, one-off services) names a script that exists.
    for (const service of Object.values(compose.services)) {
      for (const part of [service.command, service.entrypoint, service.healthcheck?.test]) {
        for (const m of words(part).matchAll(/\bnpm\s+(?:run(?:-script)?\s+([\w:.-]+)|(start|test))\b/gu))
          expect(scripts).toHaveProperty(m[1] ?? m[2]!);
      }
    }
  });

  it('has no default for a secret, pins every image, and builds on a supported Node LTS', () => {
    const text = fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
    for (const secret of ['POSTGRES_PASSWORD', 'MINIO_ROOT_PASSWORD', 'DOCUMENT_HASH_KEY', 'SESSION_SECRET', 'ENCRYPTION_KEY']) {
      const uses = [...text.matchAll(new RegExp(`\\$\\{${secret}(:?[-?=+])?([^}]*)\\}`, 'gu'))];
      expect(uses.length, secret).toBeGreaterThan(0);
      for (const use of uses) expect(use[1], `${secret} must be required (\${${secret}:?message}), not defaulted`).toBe(':?');
    }
    for (const [name, service] of Object.entries(compose.services)) {
      if (!service.image) continue;
      const tag = /:([^:/]+)$/u.exec(service.image)?.[1];
      if (service.build) continue; // the locally built image
      expect(tag, `${name}: ${service.image} must name a version`).toMatch(/\d/u);
      expect(tag).not.toMatch(/latest/u);
    }
    const from = /^FROM\s+node:(\d+)\.(\d+)\.(\d+)-\S+$/mu.exec(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
    expect(from, 'the Dockerfile pins node:MAJOR.MINOR.PATCH').not.toBeNull();
    // LTS lines are the even majors; 20 reached its end of life in April 2026.
    const major = Number(from![1]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(22);
  });

  it('has a Prometheus scrape service with its configuration in the repository', () => {
    const prometheus = compose.services.prometheus as Service & { volumes?: string[] };
    expect(prometheus?.image).toMatch(/^prom\/prometheus:v\d/u);
    const config = parse(fs.readFileSync(path.join(root, 'prometheus.yml'), 'utf8')) as { scrape_configs: { job_name: string }[] };
    expect(config.scrape_configs.map((c) => c.job_name)).toEqual(['claims-api', 'claims-worker']);
    expect(prometheus.volumes).toContain('./prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    const env = compose.services.api!.environment as Record<string, string>;
    expect(env.METRICS_PORT).toBe('9464');
    expect(env.WORKER_METRICS_PORT).toBe('9465');
  });

  it('has the api, two workers, PostgreSQL, Redis without eviction and with persistence, and MinIO with the bucket', () => {
    const { services } = compose;
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['api', 'worker', 'postgres', 'redis', 'minio', 'minio-init']));
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
