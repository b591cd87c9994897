import { CLAIM_SOURCES, CLAIM_STATUSES, normalizePlate, type ClaimSource, type ClaimStatus } from '../domain/claims/claim';
import { CLAIM_LIST_PAGE_SIZE, decodeListKey, encodeListKey } from '../domain/dashboard/dashboard-service';
import type { ClaimListFilter, ClaimListKey, ClaimListSeek, ClaimListSort } from '../domain/dashboard/dashboard-repository';
import { isIsoDate } from '../domain/dates';
import { text, type FormBody } from './forms';

/** The furthest a numbered page link jumps from the current page (rows skipped stay few). */
const JUMP = 2;

/** The claims list's state as its address carries it: the filter, the sort and the position. */
export type ClaimListQuery = {
  /** The fields as typed, to show them again in the form. */
  values: { status: string; plate: string; name: string; from: string; to: string; source: string; sort: ClaimListSort };
  filter: ClaimListFilter;
  sort: ClaimListSort;
  seek: ClaimListSeek;
  page: number;
  /** Messages by field for what could not be used (the rest of the filter still applies). */
  errors: Record<string, string>;
};

const isStatus = (v: string): v is ClaimStatus => (CLAIM_STATUSES as readonly string[]).includes(v);
const isSource = (v: string): v is ClaimSource => (CLAIM_SOURCES as readonly string[]).includes(v);

function dateField(raw: string, label: string, errors: Record<string, string>, field: string): string | undefined {
  if (raw === '') return undefined;
  if (isIsoDate(raw)) return raw;
  errors[field] = /^\d{4}-\d{2}-\d{2}$/u.test(raw)
    ? `The ${label} ${raw} does not exist.`
    : `The ${label} must be a date written YYYY-MM-DD, such as 2026-03-31.`;
  return undefined;
}

export function parseClaimListQuery(query: FormBody | undefined): ClaimListQuery {
  const errors: Record<string, string> = {};
  const sort: ClaimListSort = text(query, 'sort', 20) === 'registered' ? 'registered' : 'claim_date';
  const values = {
    status: text(query, 'status', 40),
    plate: text(query, 'plate', 40),
    name: text(query, 'name', 100),
    from: text(query, 'from', 20),
    to: text(query, 'to', 20),
    source: text(query, 'source', 40),
    sort,
  };
  const plate = normalizePlate(values.plate);
  const filter: ClaimListFilter = {
    status: isStatus(values.status) ? values.status : undefined,
    source: isSource(values.source) ? values.source : undefined,
    plate: plate === '' ? undefined : plate,
    name: values.name === '' ? undefined : values.name,
    from: dateField(values.from, 'first claim date', errors, 'from'),
    to: dateField(values.to, 'last claim date', errors, 'to'),
  };
  if (filter.from && filter.to && filter.from > filter.to) errors.to = 'The last claim date must not be before the first.';
  const page = Math.max(1, Number.parseInt(text(query, 'page', 10), 10) || 1);
  const skip = Math.min(JUMP * CLAIM_LIST_PAGE_SIZE, Math.max(0, Number.parseInt(text(query, 'skip', 10), 10) || 0));
  let seek: ClaimListSeek = { kind: 'first' };
  const after = decodeListKey(sort, text(query, 'after', 300));
  const before = decodeListKey(sort, text(query, 'before', 300));
  if (text(query, 'last', 5) === '1') seek = { kind: 'last' };
  else if (after) seek = { kind: 'after', key: after, skip };
  else if (before) seek = { kind: 'before', key: before, skip };
  return { values, filter, sort, seek, page, errors };
}

/** The filter and sort as query parameters (only those given), for every link of the list. */
export function filterParams(q: ClaimListQuery): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['status', 'plate', 'name', 'from', 'to', 'source'] as const) if (q.values[name] !== '') out[name] = q.values[name];
  if (q.sort !== 'claim_date') out.sort = q.sort;
  return out;
}

const href = (path: string, params: Record<string, string>) => {
  const qs = new URLSearchParams(params).toString();
  return qs ? `${path}?${qs}` : path;
};

export type PageLink = { label: string; href: string | null; current?: boolean; rel?: string; name: string };

/**
 * First, previous, numbered pages around this one, next and last: each a keyset position
 * (the key of this page's first or last row, a few rows skipped for a jump), never an offset
 * from the start.
 */
export function pageLinks(
  q: ClaimListQuery,
  result: { page: number; pages: number; first?: ClaimListKey | undefined; last?: ClaimListKey | undefined },
): PageLink[] {
  const base = filterParams(q);
  const { page, pages } = result;
  const to = (n: number): string | null => {
    if (n === page) return null;
    if (n === 1) return href('/claims', base);
    if (n === pages) return href('/claims', { ...base, last: '1' });
    const forward = n > page;
    const key = forward ? result.last : result.first;
    if (!key) return null;
    const skip = (Math.abs(n - page) - 1) * CLAIM_LIST_PAGE_SIZE;
    return href('/claims', {
      ...base,
      [forward ? 'after' : 'before']: encodeListKey(q.sort, key),
      ...(skip ? { skip: String(skip) } : {}),
      page: String(n),
    });
  };
  const links: PageLink[] = [];
  links.push({ label: '« First', name: 'First page', href: page > 1 ? to(1) : null });
  links.push({ label: '‹ Previous', name: 'Previous page', href: page > 1 ? to(page - 1) : null, rel: 'prev' });
  for (let n = Math.max(1, page - JUMP); n <= Math.min(pages, page + JUMP); n++) {
    links.push({ label: String(n), name: `Page ${n}`, href: to(n), current: n === page });
  }
  links.push({ label: 'Next ›', name: 'Next page', href: page < pages ? to(page + 1) : null, rel: 'next' });
  links.push({ label: 'Last »', name: `Last page, ${pages}`, href: page < pages ? to(pages) : null });
  return links;
}

export const exportHref = (q: ClaimListQuery) => href('/claims/export.csv', filterParams(q));
