import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { freePort, kill, killAll, printed, startScript } from '../processes';

/**
 * `npm start` runs the code built into dist/ (scripts/build.ts): what the code reads from beside
 * its own file at run time (the dashboard's views and assets, the API reference's icon, the
 * migrations) must be there too, not only in src/.
 */
describe('the built server', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-built-'));
  afterAll(async () => {
    await killAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the sign-in page, the assets, the API reference and its document', async () => {
    const port = await freePort();
    const server = startScript('start', { LOG_LEVEL: 'info', HOST: '127.0.0.1', DATA_DIR: dir, PORT: String(port) });
    await printed(server, 'claims registry ready');
    const base = `http://127.0.0.1:${port}`;
    const login = await fetch(`${base}/login`);
    expect(login.status).toBe(200);
    const page = await login.text();
    const assets = [...page.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/gu)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) expect((await fetch(`${base}${asset}`)).status, asset).toBe(200);
    const docs = await fetch(`${base}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('Claims Registry');
    expect((await fetch(`${base}/api/v1/openapi.json`)).status).toBe(200);
    await kill(server, 'SIGTERM');
  }, 120_000);
});
