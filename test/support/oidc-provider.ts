import http from 'node:http';
import type { AddressInfo } from 'node:net';

import Provider from 'oidc-provider';

/**
 * A real OpenID provider for the tests: `oidc-provider` (the certified Node.js implementation)
 * on a loopback address, with its development sign-in pages (any login, any password; the login
 * is the person's email) and one confidential client. `nextIdTokenAudience` makes the next ID
 * token it signs name another audience (a provider misconfigured, or a token meant for another
 * application), signed with its real keys all the same.
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
      return { accountId: id, claims: async () => ({ sub: id, email: id, email_verified: true }) };
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
  server.on('request', provider.callback());
  return {
    issuer,
    nextIdTokenAudience(aud: string) {
      audience = aud;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
