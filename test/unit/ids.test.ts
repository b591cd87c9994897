import { describe, expect, it } from 'vitest';

import { isUuid, newId } from '../../src/domain/ids';

describe('newId', () => {
  it('gives version 7 UUIDs that carry the current time and grow strictly, even many in one millisecond', () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, newId);
    const after = Date.now();
    expect(ids.every(isUuid)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    for (const id of [ids[0]!, ids.at(-1)!]) {
      expect(id[14]).toBe('7'); // version
      expect('89ab').toContain(id[19]); // variant
      const ms = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      // Ids beyond 2,048 in one millisecond borrow the next milliseconds.
      expect(ms).toBeLessThanOrEqual(after + ids.length / 2048 + 1);
    }
  });
});
