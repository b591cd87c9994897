import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Secret, TOTP } from 'otpauth';

import { claimBody, type TestContext } from '../harness';

/** A tiny browser for app.inject: keeps cookies, finds CSRF tokens, submits forms urlencoded. */
export class WebClient {
  readonly cookies = new Map<string, string>();
  lastCsrf = '';

  constructor(
    private readonly app: FastifyInstance,
    private readonly headers: Record<string, string> = {},
  ) {}

  private cookieHeader(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }

  private remember(res: LightMyRequestResponse) {
    for (const c of res.cookies as { name: string; value: string; expires?: Date; maxAge?: number }[]) {
      if (c.value === '' || (c.expires && c.expires.getTime() < Date.now()) || c.maxAge === 0) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    const m = /name="_csrf" value="([^"]+)"/u.exec(res.body);
    if (m) this.lastCsrf = m[1]!;
  }

  async get(url: string, headers: Record<string, string> = {}) {
    const res = await this.app.inject({
      method: 'GET',
      url,
      headers: { accept: 'text/html', ...this.headers, ...this.cookieHeader(), ...headers },
    });
    this.remember(res);
    return res;
  }

  /** Posts a form (an array: a repeated field, as checkboxes); the CSRF token of the last page is added unless `_csrf` is given (null: none). */
  async post(
    url: string,
    form: Record<string, string | string[]> = {},
    opts: { csrf?: string | null; headers?: Record<string, string> } = {},
  ) {
    const fields: Record<string, string | string[]> = { ...form };
    const csrf = opts.csrf === undefined ? this.lastCsrf : opts.csrf;
    if (csrf !== null) fields._csrf = csrf;
    const res = await this.app.inject({
      method: 'POST',
      url,
      headers: {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
        ...this.headers,
        ...this.cookieHeader(),
        ...(opts.headers ?? {}),
      },
      payload: new URLSearchParams(Object.entries(fields).flatMap(([k, v]) => [v].flat().map((x): [string, string] => [k, x]))).toString(),
    });
    this.remember(res);
    return res;
  }

  /**
   * Posts a form and follows its 303 as a browser does (a GET of the page it names), so the
   * answer is the page a person sees; any other answer is returned as it is.
   */
  async submit(url: string, form: Record<string, string | string[]> = {}, opts: { csrf?: string | null } = {}) {
    const res = await this.post(url, form, opts);
    const location = res.headers.location;
    if (res.statusCode !== 303 || typeof location !== 'string') return res;
    return this.get(location);
  }

  /** Posts multipart/form-data: the fields first (as a browser sends the form in order), then the file. */
  async postMultipart(
    url: string,
    fields: Record<string, string>,
    file: { name: string; content: string | Buffer } | null,
    headers: Record<string, string> = {},
  ) {
    const boundary = `----web-client-${Math.random().toString(16).slice(2)}`;
    const chunks: Buffer[] = [];
    for (const [name, value] of Object.entries(fields)) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    }
    if (file) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: text/csv\r\n\r\n`,
        ),
      );
      chunks.push(Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content));
      chunks.push(Buffer.from('\r\n'));
    }
    chunks.push(Buffer.from(`--${boundary}--\r\n`));
    const res = await this.app.inject({
      method: 'POST',
      url,
      headers: {
        accept: 'text/html',
        'content-type': `multipart/form-data; boundary=${boundary}`,
        ...this.headers,
        ...this.cookieHeader(),
        ...headers,
      },
      payload: Buffer.concat(chunks),
    });
    this.remember(res);
    return res;
  }

  /**
   * Signs in with the password; a second factor that is due is handled as a person with the app
   * would: set up (the key read from the page, remembered per email) or answered with a code.
   */
  async signIn(email: string, password: string, now = Date.now()) {
    await this.get('/login');
    const res = await this.post('/login', { email, password });
    if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode}`);
    if (res.headers.location === '/login/enrol') {
      const page = await this.get('/login/enrol');
      const key = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(page.body)?.[1]?.replaceAll(' ', '');
      if (!key) throw new Error('no key on the set-up page');
      totpKeys.set(email.toLowerCase(), key);
      const done = await this.post('/login/enrol', { code: totpCode(key, now) });
      if (done.statusCode !== 200) throw new Error(`second factor set-up failed: ${done.statusCode}`);
      return done;
    }
    if (res.headers.location === '/login/code') {
      const key = totpKeys.get(email.toLowerCase());
      if (!key) throw new Error(`no known second factor key for ${email}`);
      await this.get('/login/code');
      // A code works once: a second sign-in within the same 30 s uses the next step's code.
      for (const at of [now, now + 30_000]) {
        const done = await this.post('/login/code', { code: totpCode(key, at) });
        if (done.statusCode === 303) return done;
      }
      throw new Error('second factor refused');
    }
    return res;
  }
}

export const PASSWORD = 'correct horse battery staple';

/** The second-factor keys the test clients set up, by email. */
export const totpKeys = new Map<string, string>();

/** The TOTP code of a key at a moment, as an authenticator app computes it (RFC 6238, SHA-1, 6 digits, 30 s). */
export const totpCode = (base32: string, at: number) =>
  new TOTP({ secret: Secret.fromBase32(base32), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: at });

/** A company with an admin and a member who can sign in (and a live API token from the harness). */
export async function companyWithPeople(ctx: TestContext, name = 'Company') {
  const company = await ctx.newCompany(name);
  const tag = Math.random().toString(36).slice(2, 8);
  const admin = (
    await ctx.deps.companies.createUser({ companyId: company.id, email: `admin-${tag}@${tag}.example`, password: PASSWORD, role: 'admin' })
  ).user;
  const member = (
    await ctx.deps.companies.createUser({
      companyId: company.id,
      email: `member-${tag}@${tag}.example`,
      password: PASSWORD,
      role: 'member',
    })
  ).user;
  return { ...company, admin, member };
}

export async function signedIn(ctx: TestContext, email: string, password = PASSWORD) {
  const client = new WebClient(ctx.app);
  await client.signIn(email, password);
  return client;
}

/** Makes WebClient (written for app.inject) talk to a real server over HTTP. */
export function httpApp(base: string): FastifyInstance {
  const inject = async (req: { method: string; url: string; headers?: Record<string, string>; payload?: string | Buffer }) => {
    const res = await fetch(base + req.url, {
      method: req.method,
      headers: req.headers ?? {},
      ...(req.payload !== undefined ? { body: req.payload } : {}),
      redirect: 'manual',
    });
    const cookies = res.headers.getSetCookie().map((line) => {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const maxAge = attrs.map((a) => /^\s*max-age=(-?\d+)/iu.exec(a)?.[1]).find((m) => m !== undefined);
      return {
        name: pair.slice(0, eq).trim(),
        value: pair.slice(eq + 1).trim(),
        ...(maxAge !== undefined ? { maxAge: Number(maxAge) } : {}),
      };
    });
    return { statusCode: res.status, body: await res.text(), headers: Object.fromEntries(res.headers), cookies };
  };
  return { inject } as unknown as FastifyInstance;
}

/** The dashboard's claim form (Claims › New) filled in validly, as a person posts it, claim date `today`; `overrides` replace fields. */
export function validClaimForm(today: string, overrides: Record<string, string> = {}): Record<string, string> {
  const body = claimBody();
  return {
    'client.first_name': 'Ona',
    'client.last_name': 'Petraitė',
    'client.date_of_birth': '1985-06-02',
    'client.id_documents.0.type': 'passport',
    'client.id_documents.0.number': body.client.id_documents[0]!.number,
    'client.id_documents.1.type': '',
    'client.id_documents.1.number': '',
    claim_date: today,
    vehicle_registration: body.vehicle_registration,
    claim_type: 'theft',
    amount: '1250.5',
    is_at_fault: 'false',
    status: 'filed',
    ...overrides,
  };
}
