import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Reading the project's Markdown (README.md, docs/*.md) as GitHub renders it, for the documentation tests. */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The Markdown files whose links are checked: README.md and every docs/*.md, as paths from ROOT. */
export function markdownFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

export const readDoc = (file: string): string => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** The text without fenced code blocks (``` or ~~~), whose lines are neither headings nor links. */
export function withoutCodeBlocks(text: string): string {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === null && m) fence = m[1]!;
    else if (fence !== null && m && m[1]!.startsWith(fence[0]!) && m[1]!.length >= fence.length) fence = null;
    else if (fence === null) out.push(line);
  }
  return out.join('\n');
}

/** GitHub's anchor of a heading's text: lower case, punctuation dropped, each space a hyphen. */
export function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link: its text
    .replace(/[`*]/g, '') // code and emphasis marks
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor the file's headings make, a repeated one numbered as GitHub numbers it (-1, -2, …). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutCodeBlocks(text).split('\n')) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The targets of the inline links `[text](target)` outside code. */
export function linkTargets(text: string): string[] {
  const prose = withoutCodeBlocks(text).replace(/`[^`\n]*`/g, 'code');
  return [...prose.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/**
 * The relative links of `file` (a path from ROOT) that lead nowhere: a file or folder that does
 * not exist, or an `#anchor` that no heading of the Markdown file it points into makes. Links with
 * a scheme (https:, mailto:) and absolute paths (the running service's) are not checked.
 */
export function brokenLinks(file: string, text: string = readDoc(file)): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/')) continue;
    const [rawPath = '', anchor] = target.split('#', 2);
    const resolved = rawPath === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURIComponent(rawPath)));
    const absolute = path.join(ROOT, resolved);
    if (rawPath !== '' && (resolved.startsWith('..') || !fs.existsSync(absolute))) {
      broken.push(`${target}: ${resolved} does not exist`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md')) {
      const within = resolved === file ? text : fs.readFileSync(absolute, 'utf8');
      if (!anchors(within).has(decodeURIComponent(anchor))) broken.push(`${target}: ${resolved} has no heading #${anchor}`);
    }
  }
  return broken;
}

/** The lines of a Markdown table's body (header and separator dropped) found under `heading`, cut into cells. */
export function tableUnder(text: string, heading: string): string[][] {
  const lines = withoutCodeBlocks(text).split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const rows: string[][] = [];
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6}\s/.test(line)) break;
    if (line.startsWith('|')) {
      inTable = true;
      rows.push(cells(line));
    } else if (inTable) break;
  }
  if (rows.length < 3) throw new Error(`no table under "${heading}"`);
  return rows.slice(2);
}

/** The cells of one table line; `\|` is a pipe inside a cell. */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

/** The values written as code in a cell: `a`, `b` → a, b. */
export const codeValues = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
