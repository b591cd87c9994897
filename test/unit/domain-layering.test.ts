import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The layering rule of eslint.config.js (ARCHITECTURE.md): src/domain imports only its own files
// and packages. Each probe is linted, with the project's configuration, as the text of an existing
// domain file (the type-aware parser needs a file of the project), at depth 0 and 1.
const eslint = new ESLint();
const AT_DEPTH_0 = 'src/domain/dates.ts';
const AT_DEPTH_1 = 'src/domain/imports/import-status.ts';
const restricted = async (filePath: string, code: string) => {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.line);
};

// The first lint builds the TypeScript program (seconds on a busy machine): a generous limit.
describe('the domain has no outward arrow', { timeout: 120_000 }, () => {
  it('refuses a domain file importing src/storage, src/db or src/config, at any depth', async () => {
    const code = [
      "import type { ObjectStore } from '../../storage/object-store';",
      "import type { Db } from '../../db/db';",
      "import type { Config } from '../../config';",
      'export type Probe = [ObjectStore, Db, Config];',
      '',
    ].join('\n');
    expect(await restricted(AT_DEPTH_1, code)).toEqual([1, 2, 3]);
    expect(await restricted(AT_DEPTH_0, "import type { Config } from '../config';\nexport type Probe = Config;\n")).toEqual([1]);
  });

  it('refuses the HTTP and database clients', async () => {
    const code =
      "import type { FastifyInstance } from 'fastify';\nimport type postgres from 'postgres';\nexport type Probe = [FastifyInstance, typeof postgres];\n";
    expect(await restricted(AT_DEPTH_1, code)).toEqual([1, 2]);
  });

  it("accepts the domain's own files and other packages", async () => {
    const code = [
      "import type { ObjectStore } from '../storage';",
      "import type { Principal } from '../principal';",
      "import { parse } from 'csv-parse';",
      'export type Probe = [ObjectStore, Principal, typeof parse];',
      '',
    ].join('\n');
    expect(await restricted(AT_DEPTH_1, code)).toEqual([]);
  });
});

// The sibling rule: src/api and src/web do not import each other's files (src/app.ts mounts both).
describe('the API and the dashboard are siblings', { timeout: 120_000 }, () => {
  it('refuses an API file importing a dashboard file, and a dashboard file importing an API file', async () => {
    const fromApi = "import { webErrorHandler } from '../../web/errors';\nexport const probe = webErrorHandler;\n";
    expect(await restricted('src/api/routes/alerts.ts', fromApi)).toEqual([1]);
    const fromWeb = "import { sendError } from '../api/plugins/error-handler';\nexport const probe = sendError;\n";
    expect(await restricted('src/web/errors.ts', fromWeb)).toEqual([1]);
  });

  it('accepts the domain and their own files', async () => {
    const code =
      "import { AppError } from '../../domain/errors';\nimport { errorBody } from '../schemas/common';\nexport const probe = [AppError, errorBody];\n";
    expect(await restricted('src/api/routes/alerts.ts', code)).toEqual([]);
  });
});
