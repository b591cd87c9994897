// ESLint: typescript-eslint's type-aware recommended rules, and the layering rule of ARCHITECTURE.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The domain holds the rules; it must not depend on the layers that call it or on the database. */
const outwardFromDomain = {
  patterns: [
    {
      regex: '(^|/)(db|api|web|workers)(/|$)',
      message:
        'src/domain imports nothing from src/db, src/api, src/web or src/workers: declare the type or interface in the domain and implement it there.',
    },
  ],
};

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'coverage/', 'docs/', 'src/web/public/', 'eslint.config.js'] },
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
  {
    files: ['src/domain/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', outwardFromDomain] },
  },
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
