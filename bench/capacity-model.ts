/**
 * The capacity model of docs/capacity.md: from the measured cost of one search, one submission
 * and one imported row (bench/capacity.ts), what a registry of a given size needs, and which
 * resource of the smallest deployment runs out first.
 */

/** CPU ms of one operation: the API process (or worker), this database's backends, the cluster's other processes; rate: operations a second (of one import, for rows). */
export type OpCost = { api: number; db: number; rest: number; rate: number };
export type Costs = { search: OpCost; submit: OpCost; row: OpCost };
/** Bytes stored per claim (with its share of persons, documents and alerts) and per look-up entry. */
export type Storage = { claimHeap: number; claimIndex: number; lookupHeap: number; lookupIndex: number };
export type Scale = { name: string; insurers: number; claimsPerYear: number; searchesPerSecond: number };

/** Assumptions of the model (docs/capacity.md explains each). */
export const MODEL = {
  utilisation: 0.6, // of a core (or of the database's cores) planned for at peak
  apiShare: 0.5, // claims submitted through the API; the rest come as CSV imports
  workingSeconds: 250 * 8 * 3600, // a year's working hours, when API submissions arrive
  submitPeak: 2, // the peak hour's submissions over the working hours' mean
  importWindowSeconds: 4 * 3600, // each working day's imports run within this window (at night)
  workerConcurrency: 2, // WORKER_CONCURRENCY
  searchHoursPerYear: 250 * 8 * 0.5, // hours a year at the peak search rate (the mean is half the peak, in working hours)
  retentionYears: 6, // RETENTION_YEARS
  lookupRetentionYears: 2, // LOOKUP_RETENTION_DAYS = 730
  // The smallest deployment, from which each scale's first bottleneck is named.
  minimal: { api: 1, workers: 1, dbCores: 2, dbRamGb: 8, dbDiskGb: 100 },
};
export const SCALES: Scale[] = [
  { name: 'small', insurers: 5, claimsPerYear: 50_000, searchesPerSecond: 1 },
  { name: 'medium', insurers: 20, claimsPerYear: 500_000, searchesPerSecond: 20 },
  { name: 'national', insurers: 60, claimsPerYear: 5_000_000, searchesPerSecond: 200 },
  { name: 'national+quotes', insurers: 60, claimsPerYear: 5_000_000, searchesPerSecond: 2000 },
];

/** What one scale needs, and each resource's demand over the minimal deployment's. */
export function sizeScale(sc: Scale, c: Costs, rec: Storage, connsPerProcess: number, maxConns: number) {
  const m = MODEL;
  const submitRate = ((sc.claimsPerYear * m.apiShare) / m.workingSeconds) * m.submitPeak;
  const rowsPerDay = (sc.claimsPerYear * (1 - m.apiShare)) / 250;
  const rowRate = rowsPerDay / m.importWindowSeconds;
  const apiCores = (sc.searchesPerSecond * c.search.api + submitRate * c.submit.api) / 1000 / m.utilisation;
  // A worker is short of CPU, or of time: one import goes at the measured rate, WORKER_CONCURRENCY at once.
  const workerCores = (rowRate * c.row.api) / 1000 / m.utilisation;
  const workerSlots = rowsPerDay / c.row.rate / m.importWindowSeconds / m.workerConcurrency;
  // Searches and submissions peak by day, imports run at night: the larger of the two.
  const dbDay = sc.searchesPerSecond * (c.search.db + c.search.rest) + submitRate * (c.submit.db + c.submit.rest);
  const dbNight = rowRate * (c.row.db + c.row.rest);
  const dbCores = Math.max(dbDay, dbNight) / 1000 / m.utilisation;
  const apiProcs = Math.max(1, Math.ceil(apiCores));
  const workers = Math.max(1, Math.ceil(Math.max(workerCores, workerSlots)));
  const conns = (apiProcs + workers) * connsPerProcess;
  const claimsKept = sc.claimsPerYear * m.retentionYears;
  const claimGb = (claimsKept * (rec.claimHeap + rec.claimIndex)) / 1e9;
  const lookupGb = (sc.searchesPerSecond * 3600 * m.searchHoursPerYear * m.lookupRetentionYears * (rec.lookupHeap + rec.lookupIndex)) / 1e9;
  const pressure = [
    { name: 'API process CPU', ratio: apiCores / m.minimal.api },
    { name: 'worker', ratio: Math.max(workerCores, workerSlots) / m.minimal.workers },
    { name: 'database CPU', ratio: dbCores / m.minimal.dbCores },
    { name: 'database connections', ratio: conns / maxConns },
    // What searches read (claims, persons, documents and their indexes) should stay in memory.
    { name: 'database memory (claims)', ratio: claimGb / (m.minimal.dbRamGb / 2) },
    { name: `database disk (${lookupGb > claimGb ? 'look-up log' : 'claims'})`, ratio: (claimGb + lookupGb) / m.minimal.dbDiskGb },
  ].sort((x, y) => y.ratio - x.ratio);
  return { apiCores, apiProcs, workers, dbCores, conns, claimGb, lookupGb, first: pressure[0]! };
}
