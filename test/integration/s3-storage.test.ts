import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';

import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  createS3ObjectStore,
  ObjectNotFound,
  ObjectTooLarge,
  StorageTimeout,
  StorageUnavailable,
  type ObjectStore,
} from '../../src/storage/object-store';
import { startS3 } from '../s3rver';
import { createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

/** s3rver (an S3-compatible server in Node) on 127.0.0.1 over real HTTP; its default credentials. */
type S3rverInstance = {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  on(event: 'event', listener: (e: { Records: { eventName: string; s3: { object: { key: string } } }[] }) => void): void;
};
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;
const credentials = { accessKey: 'S3RVER', secretKey: 'S3RVER' };

let server: S3rverInstance;
let port: number;
let directory: string;
/** How each object was created, as s3rver reports it: ObjectCreated:Put (one PUT) or ObjectCreated:Post (a multipart upload completed). */
const created = new Map<string, string[]>();

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
  server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  server.on('event', (e) => {
    for (const r of e.Records) created.set(r.s3.object.key, [...(created.get(r.s3.object.key) ?? []), r.eventName]);
  });
  ({ port } = await server.run());
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

const s3Config = (bucket: string) => ({
  endPoint: '127.0.0.1',
  port,
  useSSL: false,
  ...credentials,
  bucket,
  region: 'us-east-1',
});
const client = () => new Client({ endPoint: '127.0.0.1', port, useSSL: false, ...credentials, pathStyle: true });
const text = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};
const objectsIn = async (bucket: string): Promise<string[]> => {
  const names: string[] = [];
  for await (const o of client().listObjectsV2(bucket, '', true)) names.push((o as { name: string }).name);
  return names;
};

describe('S3 object store (minio client against s3rver)', () => {
  let store: ObjectStore;
  const bucket = `imports-${randomBytes(3).toString('hex')}`;
  beforeAll(() => {
    store = createS3ObjectStore(s3Config(bucket));
  });

  it('creates the bucket when missing, stores a small stream with one PUT, reads it back and deletes it', async () => {
    const body = Buffer.from('first_name,last_name\nOna,Petraitė\n');
    expect(await store.putStream('imports/c1/i1', Readable.from([body]), { maxBytes: 1000, timeoutMs: 5000 })).toEqual({
      size: body.length,
    });
    expect(await client().bucketExists(bucket)).toBe(true);
    expect(created.get('imports/c1/i1')).toEqual(['ObjectCreated:Put']);
    expect(await text(await store.getStream('imports/c1/i1'))).toEqual(body);
    await store.delete('imports/c1/i1');
    await expect(store.getStream('imports/c1/i1')).rejects.toBeInstanceOf(ObjectNotFound);
    await store.delete('imports/c1/i1'); // deleting twice is fine
  });

  it('streams a file larger than one part as a multipart upload, its parts in order', async () => {
    // Three parts and a bit (5 MiB each) of random bytes: a part out of place would show.
    const size = 15 * 1024 * 1024 + 123;
    const expected = randomBytes(size);
    async function* source() {
      for (let sent = 0; sent < size; sent += 64 * 1024) yield expected.subarray(sent, Math.min(size, sent + 64 * 1024));
    }
    expect(await store.putStream('imports/c1/big', Readable.from(source()), { maxBytes: size, timeoutMs: 30_000 })).toEqual({ size });
    expect(created.get('imports/c1/big')).toEqual(['ObjectCreated:Post']);
    expect((await client().statObject(bucket, 'imports/c1/big')).size).toBe(size);
    expect((await text(await store.getStream('imports/c1/big'))).equals(expected)).toBe(true);
    await store.delete('imports/c1/big');
  });

  it('rejects when the store goes away between parts, and leaves no object once it is back', async () => {
    const s3 = await startS3();
    try {
      const outage = createS3ObjectStore({ ...s3Config('parts-outage'), port: s3.port });
      const part = randomBytes(5 * 1024 * 1024);
      async function* source() {
        yield part; // a whole part: on its way to the store while the source goes on
        yield part.subarray(0, 1024);
        await s3.stop();
        yield part;
        yield part;
      }
      await expect(
        outage.putStream('imports/c1/cut', Readable.from(source()), { maxBytes: 1e9, timeoutMs: 30_000 }),
      ).rejects.toBeInstanceOf(StorageUnavailable);
      await s3.start();
      expect(await s3.objects('parts-outage')).toEqual([]);
    } finally {
      await s3.close();
    }
  });

  it('stops past maxBytes and leaves no object', async () => {
    await expect(
      store.putStream('imports/c1/large', Readable.from([Buffer.alloc(3000)]), { maxBytes: 1000, timeoutMs: 5000 }),
    ).rejects.toBeInstanceOf(ObjectTooLarge);
    expect(await objectsIn(bucket)).not.toContain('imports/c1/large');
  });

  it('rejects when the source fails mid-way, and when the source stalls past the time limit, leaving no object', async () => {
    const failing = new PassThrough();
    failing.write(Buffer.alloc(100));
    setTimeout(() => failing.destroy(new Error('client went away')), 50);
    await expect(store.putStream('imports/c1/broken', failing, { maxBytes: 10_000, timeoutMs: 5000 })).rejects.toThrow('client went away');

    const stalled = new PassThrough();
    stalled.write(Buffer.alloc(100));
    // Only the time limit can end a source that never ends: the StorageTimeout is the limit at work.
    await expect(store.putStream('imports/c1/stalled', stalled, { maxBytes: 10_000, timeoutMs: 300 })).rejects.toBeInstanceOf(
      StorageTimeout,
    );
    const left = await objectsIn(bucket);
    expect(left).not.toContain('imports/c1/broken');
    expect(left).not.toContain('imports/c1/stalled');
  });
});

describe('imports with S3 storage', () => {
  let ctx: TestContext;
  const bucket = `claims-${randomBytes(3).toString('hex')}`;
  beforeAll(async () => {
    ctx = await createTestContext({
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_ACCESS_KEY: credentials.accessKey,
      S3_SECRET_KEY: credentials.secretKey,
      S3_BUCKET: bucket,
    });
  });
  afterAll(async () => ctx?.close());

  it('imports a file through the bucket and removes it once imported; a rejected file leaves nothing', async () => {
    expect(ctx.deps.storage.kind).toBe('s3');
    const company = await ctx.newCompany('S3');
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow({ claim_date: '2999-01-01' })]));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ imported: 1, failed: 1 });
    const bad = await postImport(ctx.app, company.auth, 'no,header\n1,2\n');
    expect(bad.statusCode).toBe(422);
    expect(await objectsIn(bucket)).toEqual([]);
  });
});
