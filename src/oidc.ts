import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import * as oidc from 'openid-client';

import { AppError } from './domain/errors';
import { isPrivateAddress, literalAddress } from './domain/webhooks/addresses';

/**
 * The service's only way to a company's OpenID provider. The issuer an admin types is fetched
 * once, when the settings are saved (`discoverProvider`); the document is kept and a sign-in
 * builds its client from it (`providerConfiguration`), so an anonymous visitor never makes the
 * service fetch an address. Every request (discovery, token, keys, userinfo) goes through
 * `guardedFetch`: https only, and never to a loopback, private, link-local, unique-local or
 * unspecified address, checked on the address connected to (a DNS answer that changes between
 * check and use cannot slip through), unless OIDC_ALLOW_PRIVATE=true.
 */

/** The answer of a provider is at most this big (a discovery document or a key set is a few kB). */
const MAX_ANSWER_BYTES = 512 * 1024;
/** Seconds one request to a provider may take. */
const TIMEOUT_SECONDS = 10;

export class ProviderAddressRefused extends Error {
  constructor(readonly host: string) {
    super(`${host} is a loopback, private or link-local address`);
    this.name = 'ProviderAddressRefused';
  }
}

function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      if (!allowPrivate && (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address)))) {
        return callback(new ProviderAddressRefused(hostname), '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Whether a URL may be requested at all: https (http too with allowPrivate), and no private address written as such. */
function checkTarget(url: URL, allowPrivate: boolean): void {
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw new TypeError(`only https is allowed (${url.protocol})`);
  }
  const literal = literalAddress(url.hostname);
  if (literal !== undefined && !allowPrivate && isPrivateAddress(literal)) throw new ProviderAddressRefused(url.hostname);
}

/** openid-client's fetch, over node:http(s) with the guarded look-up; the answer's body is bounded. */
export function guardedFetch(allowPrivate: boolean): oidc.CustomFetch {
  return (url, options) =>
    new Promise<Response>((resolve, reject) => {
      const target = new URL(url);
      try {
        checkTarget(target, allowPrivate);
      } catch (err) {
        return reject(err instanceof Error ? err : new Error(String(err)));
      }
      const raw: unknown = options.body;
      // openid-client sends forms (token, userinfo): a string or URLSearchParams, or nothing.
      if (raw != null && typeof raw !== 'string' && !(raw instanceof URLSearchParams)) {
        return reject(new TypeError('unexpected request body'));
      }
      const body = raw == null ? undefined : String(raw);
      const client = target.protocol === 'https:' ? https : http;
      const req = client.request(target, {
        method: options.method,
        headers: options.headers,
        lookup: guardedLookup(allowPrivate),
        timeout: TIMEOUT_SECONDS * 1000,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_SECONDS} s`)));
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) return req.destroy(new Error('the answer is too large'));
          chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            for (const v of [value ?? []].flat()) headers.append(name, v);
          }
          const status = res.statusCode ?? 502;
          const empty = status === 204 || status === 304 || (status >= 100 && status < 200);
          resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers }));
        });
      });
      req.end(body);
    });
}

/** The stored discovery document of a provider (OpenID Connect Discovery 1.0). */
export type ProviderMetadata = oidc.ServerMetadata;

const issuerError = (message: string) => new AppError('VALIDATION_FAILED', message, { issuer: [message] });

/**
 * Fetches the issuer's discovery document when an admin saves the settings, with the address
 * rules above. A failure is a 422 on the issuer field that says why.
 */
export async function discoverProvider(issuer: string, allowPrivate: boolean): Promise<ProviderMetadata> {
  const url = new URL(issuer);
  try {
    const config = await oidc.discovery(url, 'discovery', undefined, oidc.None(), {
      [oidc.customFetch]: guardedFetch(allowPrivate),
      timeout: TIMEOUT_SECONDS,
      ...(url.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
    });
    return { ...config.serverMetadata() };
  } catch (err) {
    const refused = [err, (err as { cause?: unknown }).cause].find((e) => e instanceof ProviderAddressRefused);
    if (refused) {
      throw issuerError(
        `The issuer must be a public address: ${refused.host} is a loopback, private or link-local address (OIDC_ALLOW_PRIVATE=true allows it).`,
      );
    }
    const name = (err as { name?: string }).name;
    const code = (err as { code?: string }).code;
    // An answer that came but is no OpenID configuration for this issuer (status, JSON, issuer mismatch).
    if (name === 'ResponseBodyError' || name === 'OperationProcessingError' || (code && code.startsWith('OAUTH_'))) {
      throw issuerError(`The provider at ${issuer} did not answer with an OpenID configuration for this issuer.`);
    }
    throw issuerError(`The provider at ${issuer} could not be reached.`);
  }
}

/**
 * A sign-in's client, built from the stored document: no discovery, no request until the token
 * exchange, which goes to the stored endpoints through the same guarded fetch.
 */
export function providerConfiguration(
  p: { issuer: string; clientId: string; clientSecret: () => string; metadata: ProviderMetadata },
  allowPrivate: boolean,
): oidc.Configuration {
  const config = new oidc.Configuration(p.metadata, p.clientId, undefined, oidc.ClientSecretBasic(p.clientSecret()));
  config[oidc.customFetch] = guardedFetch(allowPrivate);
  config.timeout = TIMEOUT_SECONDS;
  if (new URL(p.issuer).protocol === 'http:') oidc.allowInsecureRequests(config);
  return config;
}
