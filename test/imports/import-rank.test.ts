import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createImportService, type ImportQueue } from '../../src/domain/imports/import-service';
import { companyPrincipal, createTestContext, type Company, type TestContext } from '../harness';

/**
 * The rank each import is queued with: its place among its company's unfinished imports, counted
 * at the upload, and again per company in upload order when a server takes up what a stopped one
 * left (docs/import-pipeline.md, "Many imports"). The order the queues take ranks in:
 * test/unit/in-process-order.test.ts and test/integration/many-imports.redis.test.ts.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

/** The import service on the test's database, with a queue that only records what it is given. */
function recordingService() {
  const queued: { importId: string; rank: number | undefined }[] = [];
  const queue: ImportQueue = {
    kind: 'in-process',
    available: () => true,
    enqueue: async (importId, rank) => void queued.push({ importId, rank }),
    waitFor: async () => {},
    close: async () => {},
  };
  const service = createImportService({
    repos: ctx.deps.repos,
    // Neither is used by start() nor resumeUnfinished().
    writeClaims: {} as never,
    documentsOf: {} as never,
    storage: ctx.deps.storage,
    queue,
    today: () => '2026-01-01',
    limits: { maxBytes: 1000, chunkSize: 10, uploadTimeoutMs: 1000 },
  });
  return { service, queued };
}

const fileOf = (c: Company) => {
  const importId = randomUUID();
  return { importId, objectKey: `imports/${c.id}/${importId}`, fileName: 'claims.csv', size: 10, sha256: 'x', dataRows: 1 };
};

describe('the rank of a queued import', () => {
  it("counts the company's queued and processing imports at the upload, itself included; other companies' do not count", async () => {
    const { service, queued } = recordingService();
    const [a, b] = [await ctx.newCompany('Rank A'), await ctx.newCompany('Rank B')];
    const a1 = await service.start(companyPrincipal(a), fileOf(a));
    await service.start(companyPrincipal(a), fileOf(a));
    await service.start(companyPrincipal(b), fileOf(b));
    // A finished import no longer counts.
    await ctx.deps.repos.imports.transition(a1.id, ['queued'], 'cancelled', {});
    await service.start(companyPrincipal(a), fileOf(a));
    expect(queued.map((q) => q.rank)).toEqual([1, 2, 1, 2]);
    for (const { importId } of queued) await ctx.deps.repos.imports.transition(importId, ['queued'], 'cancelled', {});
  });

  it('ranks what a stopped server left per company, in upload order, when taken up again', async () => {
    const { service, queued } = recordingService();
    const [a, b] = [await ctx.newCompany('Left A'), await ctx.newCompany('Left B')];
    const ids: string[] = [];
    for (const c of [a, a, b, a, b]) {
      const file = fileOf(c);
      await ctx.deps.repos.imports.insert({
        id: file.importId,
        companyId: c.id,
        fileName: file.fileName,
        objectKey: file.objectKey,
        sizeBytes: file.size,
        rowsTotal: 1,
      });
      ids.push(file.importId);
    }
    expect(await service.resumeUnfinished()).toBe(5);
    expect(queued).toEqual([1, 2, 1, 3, 2].map((rank, i) => ({ importId: ids[i], rank })));
    for (const id of ids) await ctx.deps.repos.imports.transition(id, ['queued'], 'cancelled', {});
  });
});
