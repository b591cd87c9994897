import fs from 'node:fs';
import type http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { Client } from 'minio';

/** s3rver (an S3-compatible server in Node) on 127.0.0.1 over real HTTP; its default credentials. */
type S3rverInstance = { run(): Promise<{ port: number }>; close(): Promise<void>; httpServer?: http.Server };
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;
export const S3_CREDENTIALS = { accessKey: 'S3RVER', secretKey: 'S3RVER' };

/**
 * An S3-compatible server that a test can take down and bring back, as an outage does: `stop()`
 * resets every open connection (a download in progress fails mid-way) and refuses new ones;
 * `start()` serves the same folder on the same port again.
 */
export async function startS3() {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
  let server: S3rverInstance | undefined;
  let port = 0;
  const start = async () => {
    server = new S3rver({ address: '127.0.0.1', port, silent: true, directory });
    ({ port } = await server.run());
  };
  await start();
  const stop = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    s.httpServer?.closeAllConnections();
    await s.close();
  };
  return {
    get port() {
      return port;
    },
    /** The service's settings for this server and `bucket`. */
    env: (bucket: string) => ({
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_ACCESS_KEY: S3_CREDENTIALS.accessKey,
      S3_SECRET_KEY: S3_CREDENTIALS.secretKey,
      S3_BUCKET: bucket,
    }),
    start,
    stop,
    get running() {
      return server !== undefined;
    },
    /** The keys in `bucket` (the server must be running). */
    async objects(bucket: string): Promise<string[]> {
      const client = new Client({ endPoint: '127.0.0.1', port, useSSL: false, ...S3_CREDENTIALS, pathStyle: true });
      if (!(await client.bucketExists(bucket))) return [];
      const names: string[] = [];
      for await (const o of client.listObjectsV2(bucket, '', true)) names.push((o as { name: string }).name);
      return names;
    },
    async close() {
      await stop();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
