import fs from 'node:fs';
import { createRequire } from 'node:module';

import type { Page } from 'playwright-core';

/** The two widths every page is checked at: a laptop and a phone (iPhone 12-15). */
export const WIDTHS = [
  { name: 'desktop', width: 1366, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** How far the page is wider than the window (0: no sideways scrolling). */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
}

/**
 * Each row's action (the link or button in a list row) that is not wholly inside the window's
 * width: its text and its box. Rows that have no action (another company's claim) are skipped.
 */
export async function actionsOutsideViewport(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const out = [];
    for (const a of document.querySelectorAll('tbody tr td.card-action a, tbody tr td.card-action button')) {
      const r = a.getBoundingClientRect();
      if (r.width === 0 || r.left < 0 || r.right > window.innerWidth) out.push(a.textContent.trim() + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
    }
    return out;
  })()`);
}

/** The number of list rows on the page that have an action (so a test can tell it checked some). */
export async function rowActions(page: Page): Promise<number> {
  return page.evaluate<number>(`document.querySelectorAll('tbody tr td.card-action a, tbody tr td.card-action button').length`);
}

/**
 * Controls smaller than 44 × 44 CSS pixels (WCAG 2.5.5): buttons, fields, navigation, pager and
 * row-action links, summaries; a checkbox or radio button counts by its label's row. Links inside running text
 * are exempt, as WCAG exempts them.
 */
export async function smallTapTargets(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const sel = 'button, input:not([type=hidden]):not([type=checkbox]):not([type=radio]), select, textarea, .main-nav a, .sub-nav a, .pager a, td.card-action a, summary, .field-checkbox label, .page-head > a.button';
    const out = [];
    for (const el of document.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.width < 43.5 || r.height < 43.5) out.push((el.id || el.textContent.trim().slice(0, 30) || el.tagName) + ' ' + Math.round(r.width) + 'x' + Math.round(r.height));
    }
    return out;
  })()`);
}

/** The height of the site header in CSS pixels. */
export async function headerHeight(page: Page): Promise<number> {
  return page.evaluate<number>(`document.querySelector('.site-header').getBoundingClientRect().height`);
}

/** axe-core's violations on the page as it is now: rule id, impact and the first offending element. */
export async function axeViolations(page: Page): Promise<string[]> {
  // page.evaluate runs outside the page's Content-Security-Policy, which allows no inline script.
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  return page.evaluate<string[]>(`(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | '));
  })()`);
}

/** Everything checked on every page at every width, as one object so a failure shows all of it. */
export async function pageReport(page: Page) {
  return {
    overflow: await horizontalOverflow(page),
    actionsOutside: await actionsOutsideViewport(page),
    smallTargets: await smallTapTargets(page),
    axe: await axeViolations(page),
  };
}
export const CLEAN = { overflow: 0, actionsOutside: [], smallTargets: [], axe: [] };
