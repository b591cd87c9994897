import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium; never a browser downloaded by a test tool. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * The flags the machine notes list for headless Chromium here: without the background-networking
 * ones Chromium keeps trying to reach Google's hosts, which this closed network refuses.
 * (--headless itself is added by Playwright; --user-data-dir is the fresh folder below.)
 */
export const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export type Browser = { context: BrowserContext; close(): Promise<void> };

/** Headless Chromium with a new, empty profile folder, removed again at close. */
export async function launchChromium(viewport = { width: 1280, height: 900 }): Promise<Browser> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport,
    acceptDownloads: true,
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
