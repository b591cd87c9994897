-- The database's own floor for a CSV import into this project's schema (its indexes included):
-- COPY the file into a staging table, then resolve persons by document and write clients,
-- documents and claims with INSERT..SELECT, in one transaction, rolled back at the end (the
-- database is left as it was). Beside an import of the same file, it tells how much of the
-- import's time is the database's work on this schema rather than the pipeline's.
--   psql -v key=DOCUMENT_HASH_KEY -v cols="$(head -n1 file.csv)" -f bench/import-floor.sql DB < file.csv
-- Document numbers are normalized and hashed as the project does; a person is "the owner of this
-- (type, number)": no date-of-birth checks, no validation, no ledger.
\set ON_ERROR_STOP on
\timing on
BEGIN;
-- HMAC as the project computes it (rolled back with the rest where the database lacks it).
CREATE EXTENSION IF NOT EXISTS pgcrypto;
SELECT format('CREATE TEMP TABLE import_staging (%s) ON COMMIT DROP',
              string_agg(format('%I text', c), ', ' ORDER BY i))
  FROM unnest(string_to_array(:'cols', ',')) WITH ORDINALITY AS t(c, i) \gexec
\copy import_staging FROM pstdin WITH (FORMAT csv, HEADER true)

CREATE TEMP TABLE import_rows ON COMMIT DROP AS
SELECT row_number() OVER () AS rn, first_name, last_name, date_of_birth::date AS date_of_birth, id_type AS doc_type,
       encode(hmac(upper(regexp_replace(regexp_replace(id_number, '\s+', '', 'g'), '^[A-Za-z]{2,3}-', '')), :'key', 'sha256'), 'hex') AS number_hash,
       claim_date::date AS claim_date, upper(regexp_replace(vehicle_registration, '[\s.-]', '', 'g')) AS plate,
       nullif(claim_type, '') AS claim_type, nullif(amount, '')::numeric AS amount,
       CASE lower(is_at_fault) WHEN 'true' THEN true WHEN '1' THEN true WHEN 'false' THEN false WHEN '0' THEN false END AS is_at_fault,
       coalesce(nullif(status, ''), 'filed') AS status
  FROM import_staging;

CREATE TEMP TABLE import_new_docs ON COMMIT DROP AS
SELECT DISTINCT ON (r.doc_type, r.number_hash) r.doc_type, r.number_hash, r.first_name, r.last_name, r.date_of_birth,
       gen_random_uuid() AS client_id
  FROM import_rows r
 WHERE NOT EXISTS (SELECT 1 FROM identity_documents d WHERE d.doc_type = r.doc_type AND d.number_hash = r.number_hash)
 ORDER BY r.doc_type, r.number_hash, r.rn;

INSERT INTO clients (id, first_name, last_name, date_of_birth)
SELECT client_id, first_name, last_name, date_of_birth FROM import_new_docs;
INSERT INTO identity_documents (doc_type, number_hash, client_id)
SELECT doc_type, number_hash, client_id FROM import_new_docs;

INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, is_at_fault, vehicle_registration, source, status)
SELECT gen_random_uuid(), (SELECT id FROM companies ORDER BY id LIMIT 1), d.client_id, r.claim_date, r.claim_type, r.amount,
       r.is_at_fault, r.plate, 'bulk_import', r.status
  FROM import_rows r
  JOIN identity_documents d ON d.doc_type = r.doc_type AND d.number_hash = r.number_hash
 ORDER BY r.rn;
ROLLBACK;
