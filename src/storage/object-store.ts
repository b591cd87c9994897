import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { Client } from 'minio';

import type { Config } from '../config';
import { ObjectNotFound, ObjectTooLarge, StorageTimeout, StorageUnavailable, type ObjectStore, type StoredObject } from '../domain/storage';

// Implements the storage port declared in src/domain/storage.ts: S3-compatible storage through
// the `minio` client, or a folder under DATA_DIR.
export { ObjectNotFound, ObjectTooLarge, StorageTimeout, StorageUnavailable, type ObjectStore };

/**
 * Network codes of a storage server that cannot be reached or went away mid-way, and S3's own
 * codes of a server that cannot answer now: an outage, which a later try may get past.
 */
const OUTAGE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'ERR_STREAM_PREMATURE_CLOSE',
  'InternalError',
  'ServiceUnavailable',
  'SlowDown',
  'RequestTimeout',
]);

/** A storage client's failure as the domain names it: StorageUnavailable for an outage, else as it was. */
export function asStorageError(err: unknown): unknown {
  if (err instanceof StorageUnavailable) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = (err as { message?: unknown } | null)?.message;
  if ((typeof code === 'string' && OUTAGE_CODES.has(code)) || message === 'aborted' || message === 'socket hang up') {
    return new StorageUnavailable(err);
  }
  return err;
}

/** A call to the storage, with an outage named as such. */
async function call<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw asStorageError(err);
  }
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9/_-]{0,400}$/u;
function checkKey(key: string): string {
  if (!KEY.test(key) || key.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    throw new Error('Invalid object key');
  }
  return key;
}

/** Counts bytes through, failing past the limit. */
function byteLimit(maxBytes: number): Transform & { bytes: number } {
  const t = new Transform({
    transform(chunk: Buffer, _enc, done) {
      t.bytes += chunk.length;
      if (t.bytes > maxBytes) return done(new ObjectTooLarge(maxBytes));
      done(null, chunk);
    },
  }) as Transform & { bytes: number };
  t.bytes = 0;
  return t;
}

/** Settles with the promise, or rejects with StorageTimeout after `ms` (and calls onTimeout). */
async function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: (err: Error) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new StorageTimeout(ms);
      onTimeout(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Files under `root`, written to a temporary name and renamed when complete, so a partial upload is never visible. */
export function createLocalObjectStore(root: string): ObjectStore {
  const fileOf = (key: string) => path.join(root, ...checkKey(key).split('/'));
  return {
    kind: 'local',
    async putStream(key, source, { maxBytes, timeoutMs }) {
      const file = fileOf(key);
      const partial = `${file}.partial`;
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      const limit = byteLimit(maxBytes);
      const out = fs.createWriteStream(partial, { mode: 0o600 });
      try {
        await withDeadline(pipeline(source, limit, out), timeoutMs, (err) => source.destroy(err));
        await fs.promises.rename(partial, file);
        return { size: limit.bytes };
      } catch (err) {
        // The file may still be opening: remove it only once the stream has closed.
        if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()).destroy());
        await fs.promises.rm(partial, { force: true });
        throw err;
      }
    },
    async getStream(key) {
      const file = fileOf(key);
      try {
        const handle = await fs.promises.open(file, 'r');
        return handle.createReadStream({ highWaterMark: 256 * 1024 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ObjectNotFound(key);
        throw err;
      }
    },
    async delete(key) {
      await fs.promises.rm(fileOf(key), { force: true });
    },
    async *list(prefix) {
      const walk = async function* (dir: string, keyPrefix: string): AsyncGenerator<StoredObject> {
        let entries: fs.Dirent[];
        try {
          entries = await fs.promises.readdir(dir, { withFileTypes: true });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
          throw err;
        }
        for (const e of entries) {
          const key = `${keyPrefix}${e.name}`;
          if (e.isDirectory()) yield* walk(path.join(dir, e.name), `${key}/`);
          else if (e.isFile() && key.startsWith(prefix)) {
            const stat = await fs.promises.stat(path.join(dir, e.name)).catch(() => undefined);
            if (stat) yield { key, modified: stat.mtime };
          }
        }
      };
      // The folder of the prefix's whole segments ('imports/' → root/imports).
      const folder = prefix.slice(0, prefix.lastIndexOf('/') + 1);
      yield* walk(path.join(root, ...folder.split('/').filter(Boolean)), folder);
    },
  };
}

/**
 * S3 part size: the smallest S3 allows. The upload holds at most two parts in memory (one on its
 * way to the store, the next being read); a file smaller than a part is sent with one PUT.
 */
const PART_SIZE = 5 * 1024 * 1024;
/** A multipart upload under way: its id once the store gave one, and the part on its way. */
type UploadState = { uploadId?: string; sending?: Promise<void> };
/** A stored file is read back in ranges of this size, one request each. */
const READ_RANGE_BYTES = 1024 * 1024;

export function createS3ObjectStore(s3: NonNullable<Config['s3']>): ObjectStore {
  // The minio client (and what it pulls in, tens of MB of resident memory) is loaded on first use,
  // so that a process storing files in a local folder never carries it.
  let clientLoad: Promise<Client> | undefined;
  const getClient = () =>
    (clientLoad ??= import('minio').then(
      ({ Client: MinioClient }) =>
        new MinioClient({
          endPoint: s3.endPoint,
          ...(s3.port ? { port: s3.port } : {}),
          useSSL: s3.useSSL,
          accessKey: s3.accessKey,
          secretKey: s3.secretKey,
          region: s3.region,
          pathStyle: true,
        }),
    ));
  const { bucket } = s3;
  const headers = { 'Content-Type': 'text/csv' };
  let bucketReady: Promise<void> | undefined;
  const ensureBucket = () => {
    bucketReady ??= (async () => {
      const client = await getClient();
      if (!(await client.bucketExists(bucket))) {
        try {
          await client.makeBucket(bucket, s3.region);
        } catch (err) {
          // Another process created it in between.
          const code = (err as { code?: string }).code;
          if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw err;
        }
      }
    })().catch((err: unknown) => {
      bucketReady = undefined;
      throw err;
    });
    return bucketReady;
  };

  /**
   * The upload, part by part. The client's own putObject cannot be used for a stream of unknown
   * length: it would size its parts for a 5 TiB object (and hold one such part in memory), and it
   * first lists the bucket's incomplete uploads, which not every S3-compatible server offers.
   * One part is on its way to the store while the next is read from the source: the upload holds
   * at most two parts in memory, and reading waits only when the next part is full before the
   * store has taken the one before it.
   */
  async function upload(key: string, source: Readable, maxBytes: number, state: UploadState): Promise<number> {
    const client = await getClient();
    let size = 0;
    /**
     * The part being filled, and the one on its way (or free again), used in turn: each chunk is
     * copied into the part as it arrives, so that an upload's parts are two buffers allocated once
     * rather than a new one joined from the chunks for every part.
     */
    let filling: Buffer | undefined;
    let spare: Buffer | undefined;
    let buffered = 0;
    const etags: { part: number; etag: string }[] = [];
    const sendPart = async () => {
      await state.sending;
      const body = filling!.subarray(0, buffered);
      [filling, spare] = [spare, filling];
      buffered = 0;
      state.uploadId ??= await call(() => client.initiateNewMultipartUpload(bucket, key, headers));
      const part = etags.length + 1;
      const uploadID = state.uploadId;
      const sending = call(() => client.uploadPart({ bucketName: bucket, objectName: key, uploadID, partNumber: part, headers: {} }, body));
      state.sending = sending.then(({ etag }) => void etags.push({ part, etag }));
      // Its failure is seen at the next part or at the end; until then it is not unhandled.
      state.sending.catch(() => {});
    };
    for await (const chunk of source) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > maxBytes) throw new ObjectTooLarge(maxBytes);
      for (let at = 0; at < buf.length;) {
        filling ??= Buffer.allocUnsafeSlow(PART_SIZE);
        const n = buf.copy(filling, buffered, at);
        buffered += n;
        at += n;
        if (buffered === PART_SIZE) await sendPart();
      }
    }
    if (state.uploadId === undefined && state.sending === undefined) {
      const body = filling ? filling.subarray(0, buffered) : Buffer.alloc(0);
      await call(() => client.putObject(bucket, key, body, buffered, headers));
    } else {
      if (buffered > 0) await sendPart();
      await state.sending;
      const uploadID = state.uploadId!;
      await call(() => client.completeMultipartUpload(bucket, key, uploadID, etags));
    }
    return size;
  }

  return {
    kind: 's3',
    async putStream(key, source, { maxBytes, timeoutMs }) {
      checkKey(key);
      const state: UploadState = {};
      const work = (async () => {
        await call(ensureBucket);
        return upload(key, source, maxBytes, state);
      })();
      work.catch(() => {});
      try {
        // A request to storage may hang when a stream is destroyed mid-way: the deadline decides.
        return { size: await withDeadline(work, timeoutMs, (err) => source.destroy(err)) };
      } catch (err) {
        source.destroy();
        const client = await getClient().catch(() => undefined);
        const { uploadId, sending } = state;
        if (client && uploadId) {
          await client.abortMultipartUpload(bucket, key, uploadId).catch(() => {});
          // A part still on its way may land after the abort: abort again once it has settled.
          void sending?.catch(() => {}).then(() => client.abortMultipartUpload(bucket, key, uploadId).catch(() => {}));
        }
        await client?.removeObject(bucket, key).catch(() => {});
        throw err;
      }
    },
    async getStream(key) {
      checkKey(key);
      const client = await getClient();
      let size: number;
      try {
        ({ size } = await client.statObject(bucket, key));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchBucket') throw new ObjectNotFound(key);
        throw asStorageError(err);
      }
      // Read in ranges, one request each: a connection is never held for the length of an import,
      // and an outage of the storage shows at the next range, not in a download that the kernel
      // had buffered ahead (the import then waits it out and reads from where it had got to).
      async function* ranges(): AsyncGenerator<Buffer> {
        for (let offset = 0; offset < size; offset += READ_RANGE_BYTES) {
          const length = Math.min(READ_RANGE_BYTES, size - offset);
          const part = await call(() => client.getPartialObject(bucket, key, offset, length));
          try {
            for await (const chunk of part) yield chunk as Buffer;
          } catch (err) {
            throw asStorageError(err);
          } finally {
            part.destroy();
          }
        }
      }
      return Readable.from(ranges(), { objectMode: false, highWaterMark: 256 * 1024 });
    },
    async delete(key) {
      checkKey(key);
      const client = await getClient();
      await call(() => client.removeObject(bucket, key));
    },
    async *list(prefix) {
      const client = await getClient();
      if (!(await call(() => client.bucketExists(bucket)))) return;
      const stream = client.listObjectsV2(bucket, prefix, true);
      try {
        for await (const o of stream as AsyncIterable<{ name?: string; lastModified?: Date }>) {
          if (o.name) yield { key: o.name, modified: o.lastModified ?? new Date() };
        }
      } catch (err) {
        throw asStorageError(err);
      }
    },
  };
}

export function createObjectStore(config: Pick<Config, 's3' | 'dataDir'>): ObjectStore {
  return config.s3 ? createS3ObjectStore(config.s3) : createLocalObjectStore(path.join(config.dataDir, 'imports'));
}
