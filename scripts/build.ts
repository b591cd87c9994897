/**
 * `npm run build`: every entry point as JavaScript in `dist/` (the server, the import worker, the
 * command line, the migrations' runner, the import thread and the upload inspection thread), bundled by esbuild with the code
 * they share in chunks beside them (the packages stay in node_modules), and beside them what the
 * code reads from its own folder at run time: the migrations, the dashboard's views and assets,
 * and the embedded database's thread. `npm start`, `npm run worker`, `npm run admin` and
 * `npm run migrate` build first and run the result; `npm run dev` runs the sources under tsx.
 *
 * A file whose content is unchanged is not written again, so that a build started while the
 * service runs (`npm run admin` beside `npm start`) leaves the running code's files as they are.
 *
 *   npm run build [-- --outdir dir]   (a folder inside the project, so that node_modules is found)
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The entry points: each becomes `dist/<name>.mjs`. */
const ENTRIES = ['main-api', 'main-worker', 'main-admin', 'main-migrate', 'workers/import-thread-main', 'workers/upload-inspection-main'];

/** Folders and files the code finds next to its own file (`import.meta.url`), copied beside the bundle. */
const BESIDE: Array<[from: string, to: string]> = [
  ['src/db/migrations', 'migrations'],
  ['src/web/views', 'views'],
  ['src/web/public', 'public'],
  ['src/db/pglite-thread.mjs', 'pglite-thread.mjs'],
];

/**
 * The threads' entries under built code (the import thread, the upload inspection thread):
 * src/workers/<name>-entry.mjs registers tsx and loads the TypeScript body; built, the body is
 * JavaScript already.
 */
const THREADS = ENTRIES.filter((entry) => entry.startsWith('workers/')).map((entry) => path.basename(entry).replace(/-main$/u, ''));
const builtThreadEntry = (name: string) => `// Written by scripts/build.ts: the thread's built body.\nimport './${name}-main.mjs';\n`;

/** Writes `content` to `file` unless the file holds it already. */
function writeIfChanged(file: string, content: Uint8Array | string): void {
  const bytes = typeof content === 'string' ? Buffer.from(content) : Buffer.from(content);
  try {
    if (fs.readFileSync(file).equals(bytes)) return;
  } catch {
    // not there yet
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, bytes);
}

/** Copies a file or a folder's files into `to`, writing only what changed; removes files `from` no longer has. */
function copyBeside(from: string, to: string): void {
  if (fs.statSync(from).isFile()) return writeIfChanged(to, fs.readFileSync(from));
  const wanted = new Set<string>();
  for (const entry of fs.readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const rel = path.relative(from, path.join(entry.parentPath, entry.name));
    wanted.add(rel);
    writeIfChanged(path.join(to, rel), fs.readFileSync(path.join(from, rel)));
  }
  for (const rel of fs.readdirSync(to, { recursive: true }) as string[]) {
    const file = path.join(to, rel);
    if (fs.statSync(file).isFile() && !wanted.has(rel)) fs.rmSync(file);
  }
}

/** Builds every entry point into `outdir`; the path of the server's entry file. */
export async function buildAll(outdir = path.join(ROOT, 'dist')): Promise<string> {
  const result = await build({
    entryPoints: Object.fromEntries(ENTRIES.map((entry) => [path.basename(entry), path.join(ROOT, 'src', `${entry}.ts`)])),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    // In the entries' own folder: the code in a chunk finds its neighbours through `import.meta.url` too.
    chunkNames: '[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
    write: false,
  });
  const written = new Set<string>();
  for (const file of result.outputFiles) {
    writeIfChanged(file.path, file.contents);
    written.add(path.relative(outdir, file.path));
  }
  for (const [from, to] of BESIDE) {
    copyBeside(path.join(ROOT, from), path.join(outdir, to));
    written.add(to);
  }
  for (const name of THREADS) {
    writeIfChanged(path.join(outdir, `${name}-entry.mjs`), builtThreadEntry(name));
    written.add(`${name}-entry.mjs`);
  }
  // Chunks of earlier builds that no entry imports any more.
  for (const name of fs.readdirSync(outdir)) {
    if (name.endsWith('.mjs') && !written.has(name)) fs.rmSync(path.join(outdir, name));
  }
  return path.join(outdir, 'main-api.mjs');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  buildAll(values.outdir && path.resolve(values.outdir)).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
