import { describe, expect, it } from 'vitest';

import { normalizeDocumentNumber, normalizePlate } from '../../src/domain/claims/claim';

describe('normalizePlate', () => {
  it('removes spaces, dots and dashes and upper-cases', () => {
    expect(normalizePlate('ab-12.3 c')).toBe('AB123C');
    expect(normalizePlate('AB123C')).toBe('AB123C');
    expect(normalizePlate(' a.b - 1 2 3 ')).toBe('AB123');
  });

  it('removes every kind of white space, not only the plain space', () => {
    expect(normalizePlate('AB\t12\u00a03')).toBe('AB123');
  });

  it('upper-cases letters of any script', () => {
    expect(normalizePlate('аб-123')).toBe('АБ123');
    expect(normalizePlate('ąč 12')).toBe('ĄČ12');
  });

  it('keeps other characters so that validation can reject them', () => {
    expect(normalizePlate('AB_12/3')).toBe('AB_12/3');
  });

  it('can leave nothing, which validation rejects', () => {
    expect(normalizePlate(' .-. ')).toBe('');
  });
});

describe('normalizeDocumentNumber', () => {
  it('makes "LT-123", "123" and " lt-1 23 " the same number', () => {
    expect(normalizeDocumentNumber('LT-123')).toBe('123');
    expect(normalizeDocumentNumber('123')).toBe('123');
    expect(normalizeDocumentNumber(' lt-1 23 ')).toBe('123');
  });

  it('strips a three-letter country prefix', () => {
    expect(normalizeDocumentNumber('LTU-987')).toBe('987');
  });

  it('strips only one prefix', () => {
    expect(normalizeDocumentNumber('LT-LT-1')).toBe('LT-1');
  });

  it('strips a prefix only at the start', () => {
    expect(normalizeDocumentNumber('12-LT-34')).toBe('12-LT-34');
  });

  it('does not strip one letter or four letters before a dash', () => {
    expect(normalizeDocumentNumber('A-123')).toBe('A-123');
    expect(normalizeDocumentNumber('ABCD-123')).toBe('ABCD-123');
  });

  it('does not strip non-ASCII letters before a dash', () => {
    expect(normalizeDocumentNumber('ŁT-123')).toBe('ŁT-123');
    // Upper-casing turns these into ASCII ("SS", "I"); they are still not a country prefix.
    expect(normalizeDocumentNumber('ß-123')).toBe('SS-123');
    expect(normalizeDocumentNumber('ıt-123')).toBe('IT-123');
  });

  it('keeps dashes inside the number', () => {
    expect(normalizeDocumentNumber('LT-12-34')).toBe('12-34');
  });

  it('upper-cases letters in the number', () => {
    expect(normalizeDocumentNumber('ab12cd')).toBe('AB12CD');
  });

  it('leaves nothing for a prefix alone, which validation rejects', () => {
    expect(normalizeDocumentNumber('LT-')).toBe('');
    expect(normalizeDocumentNumber(' lt - ')).toBe('');
  });
});
