import { describe, expect, it } from 'vitest';

import { messages } from '../../src/domain/claims/claim';
import {
  createDocumentHasher,
  keyFingerprint,
  planIdentities,
  type DocumentRef,
  type IdentityRow,
  type KnownDocument,
} from '../../src/domain/clients/identity';

const passport = (hash: string): DocumentRef => ({ type: 'passport', hash });
const nationalId = (hash: string): DocumentRef => ({ type: 'national_id', hash });

function row(documents: DocumentRef[], overrides: Partial<IdentityRow> = {}): IdentityRow {
  return { firstName: 'Ona', lastName: 'Petraitė', dateOfBirth: '1985-06-02', documents, ...overrides };
}

/** A person on record with the given documents. */
function onRecord(clientId: string, documents: DocumentRef[], overrides: Partial<KnownDocument['client']> = {}): KnownDocument[] {
  const client = {
    firstName: 'Ona',
    lastName: 'Petraitė',
    dateOfBirth: '1985-06-02',
    documentTypes: [...new Set(documents.map((d) => d.type))].sort(),
    ...overrides,
  };
  return documents.map((d) => ({ ...d, clientId, client }));
}

function ids() {
  let n = 0;
  return () => `new-${++n}`;
}

describe('planIdentities', () => {
  it('creates one new client with all the documents when none is known', () => {
    const plan = planIdentities([row([passport('p1'), nationalId('n1')])], [], ids());
    expect(plan.newClients).toEqual([{ id: 'new-1', firstName: 'Ona', lastName: 'Petraitė', dateOfBirth: '1985-06-02' }]);
    expect(plan.newDocuments).toEqual([
      { type: 'passport', hash: 'p1', clientId: 'new-1' },
      { type: 'national_id', hash: 'n1', clientId: 'new-1' },
    ]);
    expect(plan.outcomes).toEqual([
      {
        ok: true,
        client: {
          id: 'new-1',
          firstName: 'Ona',
          lastName: 'Petraitė',
          dateOfBirth: '1985-06-02',
          documentTypes: ['national_id', 'passport'],
        },
      },
    ]);
  });

  it('uses the known client when a document matches with the same date of birth, and writes nothing new', () => {
    const plan = planIdentities([row([passport('p1')])], onRecord('c1', [passport('p1')]), ids());
    expect(plan.newClients).toEqual([]);
    expect(plan.newDocuments).toEqual([]);
    expect(plan.outcomes[0]).toMatchObject({ ok: true, client: { id: 'c1', documentTypes: ['passport'] } });
  });

  it('adds a document of a new type to the known client and lists all its types', () => {
    const plan = planIdentities([row([passport('p1'), nationalId('n1')])], onRecord('c1', [passport('p1')]), ids());
    expect(plan.newClients).toEqual([]);
    expect(plan.newDocuments).toEqual([{ type: 'national_id', hash: 'n1', clientId: 'c1' }]);
    expect(plan.outcomes[0]).toMatchObject({ ok: true, client: { id: 'c1', documentTypes: ['national_id', 'passport'] } });
  });

  it('keeps the names on record when the submission spells them differently', () => {
    const plan = planIdentities(
      [row([passport('p1')], { firstName: 'Onutė', lastName: 'Kazlauskienė' })],
      onRecord('c1', [passport('p1')]),
      ids(),
    );
    expect(plan.outcomes[0]).toMatchObject({ ok: true, client: { firstName: 'Ona', lastName: 'Petraitė' } });
  });

  it('rejects a known document with another date of birth on client.date_of_birth and plans no writes', () => {
    const plan = planIdentities(
      [row([passport('p1'), nationalId('n1')], { dateOfBirth: '1985-06-03' })],
      onRecord('c1', [passport('p1')]),
      ids(),
    );
    expect(plan.outcomes).toEqual([
      { ok: false, field: 'client.date_of_birth', message: messages.dobMismatch, clientIds: [expect.any(String)] },
    ]);
    expect(plan.newClients).toEqual([]);
    expect(plan.newDocuments).toEqual([]);
  });

  it('rejects documents of two different clients on client.id_documents and merges nothing', () => {
    const known = [...onRecord('c1', [passport('p1')]), ...onRecord('c2', [nationalId('n2')])];
    const plan = planIdentities([row([passport('p1'), nationalId('n2'), { type: 'alien_registration', hash: 'a3' }])], known, ids());
    expect(plan.outcomes).toEqual([
      {
        ok: false,
        field: 'client.id_documents',
        message: messages.documentsOfDifferentClients,
        clientIds: [expect.any(String), expect.any(String)],
      },
    ]);
    expect(plan.newClients).toEqual([]);
    expect(plan.newDocuments).toEqual([]);
  });

  it('tells documents apart by type: the same number as passport and as national id are different documents', () => {
    const plan = planIdentities([row([nationalId('same')])], onRecord('c1', [passport('same')]), ids());
    expect(plan.newClients).toHaveLength(1);
    expect(plan.outcomes[0]).toMatchObject({ ok: true, client: { id: 'new-1' } });
  });

  it('counts the same document twice in one row once', () => {
    const plan = planIdentities([row([passport('p1'), passport('p1')])], [], ids());
    expect(plan.newDocuments).toEqual([{ type: 'passport', hash: 'p1', clientId: 'new-1' }]);
    expect(plan.outcomes[0]).toMatchObject({ ok: true, client: { documentTypes: ['passport'] } });
  });

  describe('in a batch, rows are resolved in order against earlier rows', () => {
    it('finds the person an earlier row created', () => {
      const plan = planIdentities([row([passport('p1')]), row([passport('p1'), nationalId('n1')])], [], ids());
      expect(plan.newClients.map((c) => c.id)).toEqual(['new-1']);
      expect(plan.newDocuments).toEqual([
        { type: 'passport', hash: 'p1', clientId: 'new-1' },
        { type: 'national_id', hash: 'n1', clientId: 'new-1' },
      ]);
      expect(plan.outcomes.map((o) => o.ok && o.client.id)).toEqual(['new-1', 'new-1']);
      expect(plan.outcomes[1]).toMatchObject({ client: { documentTypes: ['national_id', 'passport'] } });
    });

    it('rejects a later row whose document an earlier row created with another date of birth, and keeps the earlier row', () => {
      const plan = planIdentities([row([passport('p1')]), row([passport('p1')], { dateOfBirth: '1990-01-01' })], [], ids());
      expect(plan.outcomes[0]).toMatchObject({ ok: true, client: { id: 'new-1' } });
      expect(plan.outcomes[1]).toEqual({
        ok: false,
        field: 'client.date_of_birth',
        message: messages.dobMismatch,
        clientIds: [expect.any(String)],
      });
      expect(plan.newClients).toHaveLength(1);
      expect(plan.newDocuments).toHaveLength(1);
    });

    it('does not write the new documents of a rejected row', () => {
      const plan = planIdentities(
        [row([passport('p1')]), row([passport('p1'), nationalId('n1')], { dateOfBirth: '1990-01-01' }), row([nationalId('n1')])],
        [],
        ids(),
      );
      expect(plan.outcomes.map((o) => o.ok)).toEqual([true, false, true]);
      // n1 was not attached to new-1 by the rejected row, so the third row is a new person.
      expect(plan.outcomes[2]).toMatchObject({ client: { id: 'new-2' } });
      expect(plan.newDocuments).toEqual([
        { type: 'passport', hash: 'p1', clientId: 'new-1' },
        { type: 'national_id', hash: 'n1', clientId: 'new-2' },
      ]);
    });

    it('gives each row a snapshot of the client as it was after that row', () => {
      const plan = planIdentities([row([passport('p1')]), row([passport('p1'), nationalId('n1')])], [], ids());
      expect(plan.outcomes[0]).toMatchObject({ client: { documentTypes: ['passport'] } });
    });
  });
});

describe('document hashing', () => {
  it('is deterministic for one key and differs between keys', () => {
    const a = createDocumentHasher('k'.repeat(32));
    const b = createDocumentHasher('j'.repeat(32));
    expect(a('123')).toBe(a('123'));
    expect(a('123')).not.toBe(a('124'));
    expect(a('123')).not.toBe(b('123'));
  });

  it('does not contain the number', () => {
    expect(createDocumentHasher('k'.repeat(32))('39001010000')).not.toContain('39001010000');
  });

  it('fingerprints a key without revealing it', () => {
    const key = 'k'.repeat(32);
    expect(keyFingerprint(key)).toBe(keyFingerprint(key));
    expect(keyFingerprint(key)).not.toBe(keyFingerprint('j'.repeat(32)));
    expect(keyFingerprint(key)).not.toContain('kkkk');
  });
});
