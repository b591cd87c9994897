/**
 * `npm run build`: the import worker as one JavaScript file, `dist/main-worker.mjs` (its packages
 * stay in node_modules), with the database migrations beside it. `npm run worker:built` runs it:
 * without the TypeScript loader the worker needs less memory (the figures: docs/performance.md).
 *
 *   npm run build [-- --outdir dir]   (a folder inside the project, so that node_modules is found)
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Builds the worker into `outdir`; the path of its entry file. */
export async function buildWorker(outdir = path.join(ROOT, 'dist')): Promise<string> {
  const outfile = path.join(outdir, 'main-worker.mjs');
  await build({
    entryPoints: [path.join(ROOT, 'src/main-worker.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  // Found beside the code that reads them (src/db/migrate.ts: next to its own file).
  fs.rmSync(path.join(outdir, 'migrations'), { recursive: true, force: true });
  fs.cpSync(path.join(ROOT, 'src/db/migrations'), path.join(outdir, 'migrations'), { recursive: true });
  return outfile;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  buildWorker(values.outdir && path.resolve(values.outdir))
    .then((file) => console.error(`built ${path.relative(process.cwd(), file)}`))
    .catch((err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    });
}
