import http from 'node:http';
import type { AddressInfo } from 'node:net';

import Provider from 'oidc-provider';

/**
 * A real OpenID provider for the tests: `oidc-provider` (the certified Node.js implementation)
 * on a loopback address, with its development sign-in pages (any login, any password; the login
 * is the person's email) and one confidential client. `nextIdTokenAudience` makes the next ID
 * token it signs name another audience (a provider misconfigured, or a token meant for another
 * application), signed with its real keys all the same. An account whose login starts with
 * `unverified` has no `email_verified` claim. `hideDiscovery()` makes its discovery document
 * unreachable (404), and `discoveryRequests` counts the requests for it. `signIn(url, login)`
 * goes through its sign-in and consent pages over HTTP, as a browser would, and returns the
 * address it sends the browser back to (the redirect URI with the code).
 */
export async function startTestProvider(opts: { host?: string; clientId: string; clientSecret: string; redirectUri: string }) {
  const host = opts.host ?? '127.0.0.2';
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const issuer = `http://${host}:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: [opts.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    async findAccount(_ctx, id) {
      const verified = id.startsWith('unverified') ? {} : { email_verified: true };
      return { accountId: id, claims: async () => ({ sub: id, email: id, ...verified }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    pkce: { required: () => true },
    cookies: { keys: ['test-provider-cookie-key-0123456789'] },
  });
  let audience: string | undefined;
  type IdTokenLike = { client: { clientId: string } };
  const proto = provider.IdToken.prototype as unknown as { issue: (this: IdTokenLike, o: unknown) => Promise<string> };
  const issue = proto.issue;
  proto.issue = async function (this: IdTokenLike, o: unknown) {
    const other = audience;
    if (!other) return issue.call(this, o);
    audience = undefined;
    const real = this.client;
    this.client = new Proxy(real, { get: (target, p) => (p === 'clientId' ? other : (Reflect.get(target, p) as unknown)) });
    try {
      return await issue.call(this, o);
    } finally {
      this.client = real;
    }
  };
  const handle = provider.callback();
  let discoveryHidden = false;
  let discoveryRequests = 0;
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.url?.startsWith('/.well-known/openid-configuration')) {
      discoveryRequests++;
      if (discoveryHidden) {
        res.statusCode = 404;
        return res.end();
      }
    }
    return handle(req, res);
  });
  return {
    issuer,
    hideDiscovery() {
      discoveryHidden = true;
    },
    get discoveryRequests() {
      return discoveryRequests;
    },
    signIn: (url: string, login: string) => signInAt(url, login, opts.redirectUri),
    nextIdTokenAudience(aud: string) {
      audience = aud;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A browser at the provider, over HTTP: follows its redirects keeping its cookies, fills the
 * development sign-in form (any password) and consents, until it is sent to `redirectUri`.
 */
async function signInAt(start: string, login: string, redirectUri: string): Promise<string> {
  const jar = new Map<string, string>();
  const send = async (url: string, form?: URLSearchParams) => {
    const res = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        ...(jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: form.toString() } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    return res;
  };
  let res = await send(start);
  for (let step = 0; step < 12; step++) {
    const location = res.headers.get('location');
    if (location) {
      const next = new URL(location, res.url || start).href;
      if (next.startsWith(redirectUri)) return next;
      res = await send(next);
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/u.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/u.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`the provider answered ${res.status} without a form`);
    const form = new URLSearchParams({ prompt, ...(prompt === 'login' ? { login, password: 'anything' } : {}) });
    res = await send(new URL(action.replaceAll('&amp;', '&'), start).href, form);
  }
  throw new Error('the provider did not send the browser back');
}
