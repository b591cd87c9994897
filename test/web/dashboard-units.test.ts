import { text as streamText } from 'node:stream/consumers';

import { describe, expect, it } from 'vitest';

import { lastMonths, monthLabel } from '../../src/domain/dashboard/dashboard-service';
import { failedRowsFile, neutraliseCell } from '../../src/domain/imports/failed-rows-file';
import { monthBarChart, niceMax, TICK_DIGIT_WIDTH } from '../../src/web/chart';
import { safeNext } from '../../src/web/context';
import { claimBodyFromForm } from '../../src/web/forms';

describe("the failed rows' file", () => {
  it('neutralises cells that a spreadsheet would run as a formula', () => {
    for (const v of ['=1+1', '+1', '-1', '@SUM(A1)', '\t=x', '\r=x']) expect(neutraliseCell(v)).toBe(`'${v}`);
    for (const v of ['The claim date', '12', '', "'already"]) expect(neutraliseCell(v)).toBe(v);
  });

  it('gives back the uploaded columns, then row and errors: formulas neutralised, a negative amount kept, quoted per RFC 4180', async () => {
    async function* rows() {
      yield ['=cmd', '-5', '3', 'amount: The amount must be at least 0.'];
      yield ['Ona, "Jr."', '+1', '7', '@evil'];
    }
    const csv = await streamText(failedRowsFile(['first_name', 'amount', 'row', 'errors'], rows()));
    expect(
      csv
        .replace(/^\uFEFF/u, '')
        .trim()
        .split('\n'),
    ).toEqual(['first_name,amount,row,errors', `'=cmd,-5,3,amount: The amount must be at least 0.`, `"Ona, ""Jr.""",'+1,7,'@evil`]);
  });
});

describe('claims per month', () => {
  it('lists the 12 months ending with the current one, across a year boundary', () => {
    expect(lastMonths('2026-02-15', 12)).toEqual([
      '2025-03',
      '2025-04',
      '2025-05',
      '2025-06',
      '2025-07',
      '2025-08',
      '2025-09',
      '2025-10',
      '2025-11',
      '2025-12',
      '2026-01',
      '2026-02',
    ]);
    expect(monthLabel('2026-01')).toBe('Jan 2026');
  });

  it('draws bars to a round scale, with the year under the first bar and every January', () => {
    expect([0, 3, 4, 5, 7, 11, 26, 101, 999].map(niceMax)).toEqual([4, 4, 4, 8, 8, 20, 40, 200, 1000]);
    const months = lastMonths('2026-02-15', 12).map((m, i) => ({ month: m, label: monthLabel(m), claims: i === 11 ? 10 : i }));
    const chart = monthBarChart(months);
    expect(chart.max).toBe(20);
    expect(chart.ticks.map((t) => t.value)).toEqual([0, 5, 10, 15, 20]);
    expect(chart.bars).toHaveLength(12);
    expect(chart.bars[11]!.height).toBe(chart.plot.height / 2);
    expect(chart.bars[0]!.height).toBe(0);
    expect(chart.bars.filter((b) => b.year).map((b) => b.year)).toEqual(['2025', '2026']);
  });

  it('leaves room left of the plot for the widest y-axis label, so none is clipped on a phone', () => {
    const months = lastMonths('2026-02-15', 12).map((m, i) => ({ month: m, label: monthLabel(m), claims: i * 70 }));
    const chart = monthBarChart(months);
    expect(chart.max).toBe(800);
    // Labels end 8 units left of the plot (text-anchor end): three digits need 3 × 14 units.
    expect(chart.plot.left - 8).toBeGreaterThanOrEqual(3 * TICK_DIGIT_WIDTH);
    expect(chart.plot.left + chart.plot.width).toBe(chart.width - 8);
  });
});

describe('forms', () => {
  it('builds the API body from the claim form, keeping document indexes aligned', () => {
    const { body } = claimBodyFromForm({
      'client.first_name': ' Ona ',
      'client.id_documents.0.type': 'passport',
      'client.id_documents.0.number': 'LT-123',
      'client.id_documents.1.type': '',
      'client.id_documents.1.number': '',
      is_at_fault: 'true',
      amount: '',
    });
    expect(body).toMatchObject({
      client: { first_name: 'Ona', id_documents: [{ type: 'passport', number: 'LT-123' }] },
      is_at_fault: true,
      amount: undefined,
    });
    const two = claimBodyFromForm({ 'client.id_documents.1.number': 'X1' }).body as { client: { id_documents: unknown[] } };
    expect(two.client.id_documents).toEqual([
      { type: undefined, number: undefined },
      { type: undefined, number: 'X1' },
    ]);
  });

  it('only follows same-site paths after sign-in', () => {
    expect(safeNext('/claims?status=filed')).toBe('/claims?status=filed');
    for (const bad of ['//evil.example', '/\\evil.example', 'https://evil.example', 'claims', '', undefined, ['/x']])
      expect(safeNext(bad)).toBe('/');
  });
});
