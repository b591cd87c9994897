import type { MonthCount } from '../domain/dashboard/dashboard-service';

export type BarChart = {
  width: number;
  height: number;
  plot: { left: number; top: number; width: number; height: number };
  ticks: { value: number; y: number }[];
  bars: {
    x: number;
    y: number;
    width: number;
    height: number;
    value: number;
    label: string;
    short: string;
    year: string | null;
    center: number;
  }[];
  max: number;
};

/** A round axis maximum at or above `max`, four times a whole tick step of 1, 2, 2.5 or 5 × 10^n (at least 4). */
export function niceMax(max: number): number {
  const rough = Math.max(1, max / 4);
  const pow = 10 ** Math.floor(Math.log10(rough));
  const steps = pow >= 10 ? [1, 2, 2.5, 5, 10] : [1, 2, 5, 10];
  const step = steps.map((s) => s * pow).find((s) => s >= rough)!;
  return step * 4;
}

/**
 * Geometry of a vertical bar chart of claims per month, computed here so the template only draws.
 * The SVG scales with its container (viewBox); font sizes are set in CSS so that labels stay
 * readable on a phone.
 */
export function monthBarChart(months: MonthCount[]): BarChart {
  const width = 720;
  const height = 280;
  const max = niceMax(Math.max(0, ...months.map((m) => m.claims)));
  const left = tickLabelRoom(max);
  const plot = { left, top: 24, width: width - left - 8, height: height - 24 - 56 };
  const slot = plot.width / Math.max(1, months.length);
  const barWidth = Math.round(slot * 0.62);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ value: Math.round(max * f), y: round(plot.top + plot.height * (1 - f)) }));
  const bars = months.map((m, i) => {
    const h = round((m.claims / max) * plot.height);
    const x = round(plot.left + slot * i + (slot - barWidth) / 2);
    const [short = '', year = ''] = m.label.split(' ');
    return {
      x,
      y: round(plot.top + plot.height - h),
      width: barWidth,
      height: h,
      value: m.claims,
      label: m.label,
      short,
      // The year is written under the first bar and under every January.
      year: i === 0 || m.month.endsWith('-01') ? year : null,
      center: round(x + barWidth / 2),
    };
  });
  return { width, height, plot, ticks, bars, max };
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * Room left of the plot for the y-axis labels, in viewBox units: on a phone the labels are drawn
 * at 24 px in a viewBox shown at about half its size, where a digit is some 14 units wide; with
 * a fixed 48 units "800" lost its first digit.
 */
export const TICK_DIGIT_WIDTH = 14;
export function tickLabelRoom(max: number): number {
  return String(max).length * TICK_DIGIT_WIDTH + 16;
}
