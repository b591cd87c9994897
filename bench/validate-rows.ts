/**
 * The CSV import's row path without I/O: 90,000 records → claim body (toClaimBody) → the
 * compiled schema and the domain's rules (validateClaimInput) → column errors for the rows that
 * fail. Prints the CPU time of the rounds for all-valid rows and for one row in ten failing.
 *   npx tsx bench/validate-rows.ts [rounds]
 */
import { validateClaimInput } from '../src/domain/claims/claim';
import { toClaimBody, toColumnErrors, type Column } from '../src/domain/imports/csv-file';

const columns = [
  'first_name',
  'last_name',
  'date_of_birth',
  'id_type',
  'id_number',
  'claim_date',
  'vehicle_registration',
  'claim_type',
  'amount',
  'currency',
  'is_at_fault',
  'status',
] as Column[];
const ROWS = 90_000;
const TODAY = '2026-06-15';
const rounds = Number(process.argv[2] ?? 9);

function records(failEvery: number): string[][] {
  return Array.from({ length: ROWS }, (_, i) => {
    const bad = failEvery > 0 && i % failEvery === 0;
    return [
      `Ona${i}`,
      'Petraitė',
      '1985-06-02',
      bad ? 'visa' : 'passport',
      `LT-${100000 + i}`,
      '2026-03-14',
      `AB-${i % 1000} C`,
      'accident',
      bad ? '-5' : '1250.50',
      'EUR',
      i % 2 ? 'true' : 'false',
      'filed',
    ];
  });
}

function run(rows: string[][]): number {
  let failed = 0;
  for (const r of rows) {
    const { value, errors } = validateClaimInput(toClaimBody(r, columns), TODAY);
    if (!value) {
      toColumnErrors(errors);
      failed++;
    }
  }
  return failed;
}

for (const [name, failEvery] of [
  ['all valid', 0],
  ['1 in 10 failing', 10],
] as const) {
  const rows = records(failEvery);
  const times: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // CPU time of this process: the machine may be shared, and waiting for a core is not the row path's cost.
    const started = process.cpuUsage();
    run(rows);
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${name}: ${ROWS} rows, CPU time best ${times[0]!.toFixed(0)} ms, median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms`,
  );
}
