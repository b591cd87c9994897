import fs from 'node:fs';
import path from 'node:path';

/**
 * CI's check that a green run ran everything: reads vitest JSON reports (`--reporter=json`), any
 * number of them, and exits 1 naming every test that did not run (skipped, todo, or left out by
 * `-t`/`.only`) unless it is in ALLOWED with its reason. Tests that belong to one database are not
 * skipped in the other: vitest.config.ts leaves their files out of that project.
 *
 *   node --import tsx scripts/check-skips.ts report.json [more.json ...]
 */

/** Tests allowed not to run, by full name (describe titles and test title joined by a space), each with why. */
const ALLOWED: Record<string, string> = {};

type Report = {
  testResults: { name: string; assertionResults: { fullName: string; status: string }[] }[];
};

const RAN = new Set(['passed', 'failed']);

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: check-skips.ts report.json [more.json ...]');
  process.exit(2);
}

const notRun: string[] = [];
const allowed: string[] = [];
let problems = 0;
for (const file of files) {
  if (!fs.existsSync(file)) {
    console.error(`check-skips: no report at ${file} (the run did not finish?)`);
    problems++;
    continue;
  }
  const report = JSON.parse(fs.readFileSync(file, 'utf8')) as Report;
  for (const suite of report.testResults) {
    for (const test of suite.assertionResults) {
      if (RAN.has(test.status)) continue;
      const line = `${path.relative(process.cwd(), suite.name)} > ${test.fullName} (${test.status})`;
      if (ALLOWED[test.fullName] !== undefined) allowed.push(`${line}: ${ALLOWED[test.fullName]}`);
      else notRun.push(line);
    }
  }
}

for (const line of allowed) console.log(`allowed not to run: ${line}`);
if (notRun.length > 0) {
  console.error(`${notRun.length} test(s) did not run:`);
  for (const line of notRun) console.error(`  ${line}`);
  problems++;
}
process.exit(problems > 0 ? 1 : 0);
