import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { MODEL, sizeScale, type Costs, type Storage } from '../../bench/capacity-model';
import { ROOT } from '../processes';

/**
 * The capacity model (docs/capacity.md) from given per-operation costs, worked by hand, and the
 * byte-counting proxy bench:capacity measures the wire with.
 */
const costs: Costs = {
  search: { api: 0.2, db: 0.2, rest: 0, rate: 1000 },
  submit: { api: 1, db: 2, rest: 0, rate: 100 },
  row: { api: 0.1, db: 0.05, rest: 0, rate: 1000 },
};
const storage: Storage = { claimHeap: 500, claimIndex: 500, lookupHeap: 250, lookupIndex: 250 };
const scale = { name: 'test', insurers: 10, claimsPerYear: 1_000_000, searchesPerSecond: 100 };

describe('capacity model', () => {
  it('sizes a registry by the formulas of docs/capacity.md', () => {
    expect(MODEL.utilisation).toBe(0.6);
    const r = sizeScale(scale, costs, storage, 12, 100);
    // 500,000 API submissions over 250 × 8 h, twice the mean at the peak: 0.139 a second.
    const submitRate = (500_000 / (250 * 8 * 3600)) * 2;
    expect(r.apiCores).toBeCloseTo((100 * 0.2 + submitRate * 1) / 1000 / 0.6, 6);
    expect(r.dbCores).toBeCloseTo((100 * 0.2 + submitRate * 2) / 1000 / 0.6, 6);
    expect(r.apiProcs).toBe(1);
    expect(r.workers).toBe(1);
    expect(r.conns).toBe(24);
    // 6 years of claims at 1,000 B; 2 years of look-ups at 100 a second for 1,000 h a year, 500 B each.
    expect(r.claimGb).toBeCloseTo(6, 6);
    expect(r.lookupGb).toBeCloseTo(360, 6);
    expect(r.first.name).toBe('database disk (look-up log)');
    expect(r.first.ratio).toBeCloseTo(3.66, 6);
  });

  it('names the API processes first when searches cost the API most and storage is small', () => {
    const heavy = { ...costs, search: { api: 1, db: 0.1, rest: 0, rate: 1000 } };
    const r = sizeScale(
      { ...scale, searchesPerSecond: 3000 },
      heavy,
      { claimHeap: 1, claimIndex: 1, lookupHeap: 0, lookupIndex: 0 },
      12,
      100,
    );
    expect(r.first.name).toBe('API process CPU');
    expect(r.apiProcs).toBe(Math.ceil((3000 * 1 + (500_000 / (250 * 8 * 3600)) * 2) / 1000 / 0.6));
    expect(r.conns).toBe((r.apiProcs + r.workers) * 12);
  });

  it('adds workers when one import at the measured rate cannot finish the night’s rows in the window', () => {
    // 20,000,000 claims a year, half imported: 40,000 rows a day; at 0.2 rows a second, two imports at once, 4 hours: 7 workers.
    const slow = { ...costs, row: { api: 0.1, db: 0.05, rest: 0, rate: 0.2 } };
    const r = sizeScale({ ...scale, claimsPerYear: 20_000_000, searchesPerSecond: 1 }, slow, storage, 12, 100);
    expect(r.workers).toBe(Math.ceil(40_000 / 0.2 / (4 * 3600) / 2));
  });
});

describe('byte-counting proxy', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => cleanups.splice(0).forEach((f) => f()));

  it('forwards both ways and counts the bytes each way', async () => {
    // An echo server that answers every byte with two.
    const server = net.createServer((s) => s.on('data', (d: Buffer) => s.write(Buffer.concat([d, d]))));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => server.close());
    const proxy = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'bench/byte-proxy.ts'), String((server.address() as net.AddressInfo).port)],
      {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      },
    );
    cleanups.push(() => proxy.kill('SIGTERM'));
    const port = await new Promise<number>((resolve) => proxy.once('message', (m) => resolve((m as { port: number }).port)));

    const socket = net.connect(port, '127.0.0.1');
    let received = 0;
    const all = new Promise<void>((resolve) =>
      socket.on('data', (d: Buffer) => {
        received += d.length;
        if (received === 2000) resolve();
      }),
    );
    socket.write(Buffer.alloc(1000, 'x'));
    await all;
    socket.destroy();
    const counts = await new Promise<unknown>((resolve) => {
      proxy.once('message', resolve);
      proxy.send('counts');
    });
    expect(counts).toEqual({ up: 1000, down: 2000, connections: 1 });
  }, 30_000);
});
