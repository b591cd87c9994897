// The few parts of oidc-provider 9 (which ships no types) that the tests' provider uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  type Account = { accountId: string; claims(): Promise<Record<string, unknown>> };
  type Configuration = {
    clients: Record<string, unknown>[];
    findAccount(ctx: unknown, id: string): Promise<Account | undefined>;
    claims?: Record<string, string[]>;
    pkce?: { required?: () => boolean };
    cookies?: { keys?: string[] };
  };
  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    IdToken: { prototype: object };
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
