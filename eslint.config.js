// ESLint: typescript-eslint's type-aware recommended rules, and the layering rule of ARCHITECTURE.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The domain holds the rules; it depends on nothing outside src/domain: not on the layers that
 * call it (api, web, workers), not on those that implement its ports (db, storage), not on the
 * process's own files (config, deps, logger, metrics). A relative import that climbs out of
 * src/domain is refused, whatever folder it reaches, as are the drivers of HTTP, the database,
 * the queue and storage.
 */
const outwardFromDomain = (depth) => ({
  patterns: [
    {
      regex: `^(\\.\\./){${depth + 1},}`,
      message:
        'src/domain imports only its own files and packages: declare the type or interface (a port) in src/domain and implement it in the outer layer.',
    },
    {
      group: [
        'fastify',
        'fastify-*',
        '@fastify/*',
        'postgres',
        '@electric-sql/*',
        'bullmq',
        'ioredis',
        'minio',
        '@bull-board/*',
        'prom-client',
        'eta',
      ],
      message: 'src/domain uses no HTTP, database, queue or storage client: declare a port in src/domain and implement it outside.',
    },
  ],
});

/**
 * The REST API (src/api) and the dashboard (src/web) are siblings: both call the domain, neither
 * imports the other's files. The app's root (src/app.ts) mounts both.
 */
const awayFrom = (sibling) => ({
  patterns: [
    {
      regex: `^(\\.\\./)+${sibling}(/|$)`,
      message: `src/api and src/web are siblings: neither imports the other's files. Move what both need to src/domain (rules) or to the app's root (src/app.ts).`,
    },
  ],
});

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'test-results/', 'coverage/', 'docs/', 'src/web/public/', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Fastify plugins and hooks are async functions by contract (a plugin returns a promise
      // instead of calling done), whether or not they await anything.
      '@typescript-eslint/require-await': 'off',
      // `_name` marks a value left out on purpose (destructuring a field away).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    // Fastify decorators such as csrfProtection are plain functions typed as methods, passed as hooks.
    files: ['src/web/**/*.ts', 'src/api/**/*.ts'],
    rules: { '@typescript-eslint/unbound-method': 'off' },
  },
  // One block per depth below src/domain: from src/domain/a/b.ts, `../../` already leaves it
  // (deeper files get the third block: at least as strict).
  { files: ['src/domain/*.ts'], rules: { 'no-restricted-imports': ['error', outwardFromDomain(0)] } },
  { files: ['src/domain/*/*.ts'], rules: { 'no-restricted-imports': ['error', outwardFromDomain(1)] } },
  { files: ['src/domain/*/*/**/*.ts'], rules: { 'no-restricted-imports': ['error', outwardFromDomain(2)] } },
  { files: ['src/api/**/*.ts'], rules: { 'no-restricted-imports': ['error', awayFrom('web')] } },
  { files: ['src/web/**/*.ts'], rules: { 'no-restricted-imports': ['error', awayFrom('api')] } },
  {
    // Tests read JSON bodies of responses: `res.json()` is `any` by design there.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The embedded database's thread (src/db/pglite-thread.mjs) is plain JavaScript, outside the
    // TypeScript project: the recommended rules without type information.
    files: ['**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { performance: 'readonly', console: 'readonly', process: 'readonly' },
    },
  },
);
