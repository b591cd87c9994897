/**
 * The benchmarks' registry: persons, plates and claims as a real registry would have them, seeded
 * set-based. Every fifth claim is a new person with one passport (number BENCH<n>), claims fall on
 * plates PL000000… (about 3.5 claims a plate), with dates over the last 5 years (about 60% inside
 * the 3-year search window).
 */
import type { Queryable } from '../src/db/db';
import { normalizeDocumentNumber } from '../src/domain/claims/claim';
import { createDocumentHasher } from '../src/domain/clients/identity';

export const addDays = (iso: string, days: number) =>
  new Date(Date.parse(`${iso}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

export function seedShape(claims: number) {
  return {
    claims,
    persons: Math.max(1, Math.floor(claims / 5)),
    plates: Math.max(1, Math.floor(claims / 3.5)),
    plate: (n: number) => `PL${String(n).padStart(6, '0')}`,
    personId: (n: number) => n.toString(16).padStart(32, '0'),
    birthDate: (n: number) => addDays('1950-01-01', n % 18_000),
  };
}
export type SeedShape = ReturnType<typeof seedShape>;

/** Seeds `shape` into a migrated, empty database: half the claims of `companyId`, half of `otherCompanyId`. */
export async function seedRegistry(
  db: Queryable,
  shape: SeedShape,
  opts: { companyId: string; otherCompanyId: string; hashKey: string },
): Promise<void> {
  const hash = createDocumentHasher(opts.hashKey);
  await db.query(
    `INSERT INTO clients (id, first_name, last_name, date_of_birth)
     SELECT lpad(to_hex(g), 32, '0')::uuid, 'Seed', 'Person ' || g, date '1950-01-01' + (g % 18000)
       FROM generate_series(0, $1::int - 1) g`,
    [shape.persons],
  );
  for (let from = 0; from < shape.persons; from += 50_000) {
    const ids: string[] = [];
    const hashes: string[] = [];
    for (let n = from; n < Math.min(shape.persons, from + 50_000); n++) {
      ids.push(shape.personId(n));
      hashes.push(hash(normalizeDocumentNumber(`BENCH${n}`)));
    }
    await db.query(
      `INSERT INTO identity_documents (doc_type, number_hash, client_id)
       SELECT 'passport', h, id FROM unnest($1::text[], $2::uuid[]) AS t(h, id)`,
      [hashes, ids],
    );
  }
  await db.query(
    `INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, vehicle_registration, source, status)
     SELECT gen_random_uuid(),
            CASE WHEN g % 2 = 0 THEN $2::uuid ELSE $5::uuid END,
            lpad(to_hex(g % $3::int), 32, '0')::uuid,
            current_date - (abs(hashtext('d' || g)) % 1826),
            (ARRAY['accident', 'theft', 'other'])[1 + g % 3],
            (abs(hashtext('a' || g)) % 500000) / 100.0,
            'PL' || lpad((abs(hashtext('p' || g)) % $4::int)::text, 6, '0'),
            'assisted', 'filed'
       FROM generate_series(0, $1::int - 1) g`,
    [shape.claims, opts.companyId, shape.persons, shape.plates, opts.otherCompanyId],
  );
  await db.query('ANALYZE');
}
