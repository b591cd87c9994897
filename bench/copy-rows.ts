/**
 * The database's bulk path for a CSV file of the import's columns, as a yardstick: COPY into a
 * staging table, then one INSERT..SELECT each for the new clients, their documents and the claims
 * of `companyId`, in the caller's transaction `tx`, on the project's tables and indexes. Document
 * numbers are hashed with md5 in the database (the service uses an HMAC in Node); no validation,
 * no identity checks beyond "the owner of this document".
 */
import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';

import type postgres from 'postgres';

export async function copyRows(tx: postgres.TransactionSql, file: string, companyId: string): Promise<void> {
  const header = fs.readFileSync(file, 'utf8').slice(0, 4096).split(/\r?\n/u)[0]!.split(',');
  await tx.unsafe(`CREATE TEMP TABLE staging (${header.map((c) => `"${c}" text`).join(', ')}) ON COMMIT DROP`);
  const copy = await tx.unsafe('COPY staging FROM STDIN WITH (FORMAT csv, HEADER true)').writable();
  await pipeline(fs.createReadStream(file), copy);
  await tx.unsafe(`CREATE TEMP TABLE staged ON COMMIT DROP AS
      SELECT row_number() OVER () AS rn, first_name, last_name, date_of_birth::date AS date_of_birth, id_type,
             md5(upper(regexp_replace(id_number, '\\s+', '', 'g'))) AS number_hash, claim_date::date AS claim_date,
             upper(regexp_replace(vehicle_registration, '[\\s.-]', '', 'g')) AS plate, nullif(claim_type, '') AS claim_type,
             nullif(amount, '')::numeric AS amount,
             CASE lower(is_at_fault) WHEN 'true' THEN true WHEN '1' THEN true WHEN 'false' THEN false WHEN '0' THEN false END AS is_at_fault,
             coalesce(nullif(status, ''), 'filed') AS status
        FROM staging`);
  await tx.unsafe(`CREATE TEMP TABLE new_people ON COMMIT DROP AS
      SELECT DISTINCT ON (id_type, number_hash) id_type, number_hash, first_name, last_name, date_of_birth, gen_random_uuid() AS client_id
        FROM staged s
       WHERE NOT EXISTS (SELECT 1 FROM identity_documents d WHERE d.doc_type = s.id_type AND d.number_hash = s.number_hash)
       ORDER BY id_type, number_hash, rn`);
  await tx.unsafe(
    'INSERT INTO clients (id, first_name, last_name, date_of_birth) SELECT client_id, first_name, last_name, date_of_birth FROM new_people',
  );
  await tx.unsafe(
    'INSERT INTO identity_documents (doc_type, number_hash, client_id) SELECT id_type, number_hash, client_id FROM new_people',
  );
  await tx.unsafe(
    `INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, currency, is_at_fault, vehicle_registration, source, status)
       SELECT gen_random_uuid(), $1, d.client_id, s.claim_date, s.claim_type, s.amount, 'EUR', s.is_at_fault, s.plate, 'bulk_import', s.status
         FROM staged s JOIN identity_documents d ON d.doc_type = s.id_type AND d.number_hash = s.number_hash
        ORDER BY s.rn`,
    [companyId],
  );
}
