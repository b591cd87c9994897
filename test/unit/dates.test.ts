import { describe, expect, it } from 'vitest';

import { isIsoDate, minusYears, todayIn } from '../../src/domain/dates';

describe('isIsoDate', () => {
  it('accepts real calendar dates written YYYY-MM-DD', () => {
    expect(isIsoDate('2025-01-31')).toBe(true);
    expect(isIsoDate('2025-12-31')).toBe(true);
    expect(isIsoDate('0001-01-01')).toBe(true);
  });

  it('rejects days that do not exist in the month', () => {
    expect(isIsoDate('2025-02-30')).toBe(false);
    expect(isIsoDate('2025-04-31')).toBe(false);
    expect(isIsoDate('2025-01-32')).toBe(false);
    expect(isIsoDate('2025-01-00')).toBe(false);
  });

  it('knows leap years, including the century rules', () => {
    expect(isIsoDate('2024-02-29')).toBe(true);
    expect(isIsoDate('2025-02-29')).toBe(false);
    expect(isIsoDate('2000-02-29')).toBe(true);
    expect(isIsoDate('1900-02-29')).toBe(false);
  });

  it('rejects month 0 and 13, and year 0', () => {
    expect(isIsoDate('2025-00-10')).toBe(false);
    expect(isIsoDate('2025-13-10')).toBe(false);
    expect(isIsoDate('0000-01-01')).toBe(false);
  });

  it('rejects other formats', () => {
    for (const v of [
      '2025-1-01',
      '2025-01-1',
      '25-01-01',
      '2025/01/01',
      '01-02-2025',
      '2025-01-01T00:00:00Z',
      ' 2025-01-01',
      '2025-01-01 ',
      '',
    ]) {
      expect(isIsoDate(v), v).toBe(false);
    }
  });
});

describe('todayIn', () => {
  const lateEvening = new Date('2026-01-01T23:30:00Z');

  it('gives the UTC date in UTC', () => {
    expect(todayIn('UTC', lateEvening)).toBe('2026-01-01');
  });

  it('gives the local date of the time zone, which can be a day later or earlier than UTC', () => {
    expect(todayIn('Europe/Vilnius', lateEvening)).toBe('2026-01-02');
    expect(todayIn('America/New_York', new Date('2026-01-01T03:00:00Z'))).toBe('2025-12-31');
  });

  it('pads month and day to two digits', () => {
    expect(todayIn('UTC', new Date('2026-03-04T12:00:00Z'))).toBe('2026-03-04');
  });

  it('turns to the next day at local midnight, not a moment later, even when asked within the same second before', () => {
    // Vilnius is UTC+2 in winter: midnight there is 22:00 UTC.
    expect(todayIn('Europe/Vilnius', new Date('2026-01-01T21:59:59.000Z'))).toBe('2026-01-01');
    expect(todayIn('Europe/Vilnius', new Date('2026-01-01T21:59:59.999Z'))).toBe('2026-01-01');
    expect(todayIn('Europe/Vilnius', new Date('2026-01-01T22:00:00.000Z'))).toBe('2026-01-02');
  });

  it('answers each time zone for itself within the same second', () => {
    const at = new Date('2026-01-01T23:30:00.250Z');
    expect(todayIn('UTC', at)).toBe('2026-01-01');
    expect(todayIn('Europe/Vilnius', at)).toBe('2026-01-02');
    expect(todayIn('America/New_York', at)).toBe('2026-01-01');
    expect(todayIn('UTC', at)).toBe('2026-01-01');
  });
});

describe('minusYears', () => {
  it('gives the same calendar day years earlier', () => {
    expect(minusYears('2026-11-21', 3)).toBe('2023-11-21');
    expect(minusYears('2026-01-01', 1)).toBe('2025-01-01');
  });

  it('turns 29 February into 28 February in a common year', () => {
    expect(minusYears('2024-02-29', 1)).toBe('2023-02-28');
    expect(minusYears('2024-02-29', 3)).toBe('2021-02-28');
  });

  it('keeps 29 February when the earlier year is a leap year too', () => {
    expect(minusYears('2028-02-29', 4)).toBe('2024-02-29');
  });

  it('refuses anything that is not YYYY-MM-DD', () => {
    expect(() => minusYears('21.11.2026', 1)).toThrow(RangeError);
  });
});
