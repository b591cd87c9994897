import { once } from 'node:events';
import { parseArgs } from 'node:util';

import pino from 'pino';

import { backupCommand, isBackupCommandError, restoreCommand } from './admin-backup';
import { ConfigError, loadConfig, type Config } from './config';
import { DatabaseLockedError } from './db/db';
import { StartupError, type Deps } from './deps';
import { CLI_ACTOR, NO_ORIGIN } from './domain/audit/audit';
import { isCompanyRole } from './domain/companies/company-repository';
import { AppError } from './domain/errors';
import { createLogger } from './logger';
import { openDeps } from './startup';

const USAGE = `Usage: npm run admin -- <command> [options] [--json]

Commands:
  company:create --name NAME
  company:list
  company:limits --company ID [--per-minute N|default] [--company-per-minute N|default]
                                               (API requests a minute per token, and of all the company's tokens together; 0: no limit)
  company:suspend --company ID                   (its tokens get 403 company_suspended, its people cannot sign in)
  company:resume --company ID
  user:create --company ID --email EMAIL [--password PW] [--role admin|member|viewer]   (default role: admin)
  operator:create --email EMAIL [--password PW]
  token:create --company ID --name NAME [--scopes a,b,...] [--expires-in-days N]
                                               (default: every scope, 90 days; at most TOKEN_MAX_LIFETIME_DAYS)
  token:list --company ID
  token:revoke ID
  audit:export --company ID [--since YYYY-MM-DD] --jsonl   (the company's audit events, one JSON object a line, newest first)
  audit:verify [--company ID]                  (checks the audit trail's hash chains; exit 1 naming the first event that does not fit)
  sso:domain-approve --company ID --domain DOMAIN   (the domain the company asked for covers its sign-ins from now on)
  sso:domain-remove --company ID --domain DOMAIN    (withdraws it: its people sign in with their passwords again)
  webhook:create --company ID --url URL          (the signing secret is printed once)
  webhook:list --company ID                       (endpoints, and recent deliveries with their outcomes)
  webhook:rotate-secret --webhook ID             (a new signing secret, printed once; the old one also signs for 24 hours)
  reseal                                       (TOTP keys and SSO client secrets sealed again with ENCRYPTION_KEY's first key)
  purge                                        (retention: removes what has expired now)
  subject:export --date-of-birth YYYY-MM-DD --id-type TYPE --id-number NUMBER
  backup --out FILE                              (the embedded database, also while the server runs; gzipped tar)
  restore --from FILE [--force]                  (the server stopped; --force moves a database already there aside)

Works against the same database as the server: DATABASE_URL, or the embedded one in DATA_DIR
(which must not be in use by a running server).`;

class UsageError extends Error {}

const COMMANDS = [
  'company:create',
  'company:list',
  'company:limits',
  'company:suspend',
  'company:resume',
  'audit:export',
  'audit:verify',
  'user:create',
  'operator:create',
  'token:create',
  'token:list',
  'token:revoke',
  'sso:domain-approve',
  'sso:domain-remove',
  'webhook:create',
  'webhook:list',
  'webhook:rotate-secret',
  'reseal',
  'purge',
  'subject:export',
  'backup',
  'restore',
];

type Options = {
  name?: string;
  company?: string;
  email?: string;
  password?: string;
  role?: string;
  url?: string;
  domain?: string;
  'per-minute'?: string;
  'company-per-minute'?: string;
  json?: boolean;
  jsonl?: boolean;
  scopes?: string;
  'expires-in-days'?: string;
  since?: string;
  'date-of-birth'?: string;
  'id-type'?: string;
  'id-number'?: string;
  out?: string;
  from?: string;
  force?: boolean;
  webhook?: string;
};

function need(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`Missing --${flag}.`);
  return value;
}

/** What a command prints; `streamed`: it wrote its output itself (audit:export), line by line. */
type Output = { json: unknown; text: string; streamed?: number; failed?: boolean };

async function run(deps: Deps, command: string, args: string[], o: Options): Promise<Output> {
  switch (command) {
    case 'company:create': {
      const c = await deps.companies.createCompany(need(o.name, 'name'));
      return { json: { id: c.id, name: c.name }, text: `Created company ${c.name} (${c.id})` };
    }
    case 'company:list': {
      const list = await deps.companies.listCompanies();
      return {
        json: list.map((c) => ({ id: c.id, name: c.name, created_at: c.created_at })),
        text: list.length ? list.map((c) => `${c.id}  ${c.name}`).join('\n') : 'No companies yet.',
      };
    }
    case 'company:limits': {
      const companyId = need(o.company, 'company');
      await requireCompany(deps, companyId);
      const limitOf = (flag: 'per-minute' | 'company-per-minute'): number | null | undefined => {
        const raw = o[flag];
        if (raw === undefined) return undefined;
        if (raw !== 'default' && !/^\d{1,9}$/u.test(raw))
          throw new UsageError(`--${flag} must be a whole number (0: no limit) or "default".`);
        return raw === 'default' ? null : Number(raw);
      };
      const asked = { perToken: limitOf('per-minute'), perCompany: limitOf('company-per-minute') };
      if (asked.perToken === undefined && asked.perCompany === undefined) {
        throw new UsageError('Give --per-minute, --company-per-minute or both.');
      }
      const set = await deps.companies.setLimits(companyId, Object.fromEntries(Object.entries(asked).filter(([, v]) => v !== undefined)));
      const perToken = set.perToken ?? deps.config.rateLimitPerMinute;
      const perCompany = set.perCompany ?? deps.config.companyRateLimitPerMinute;
      const say = (n: number, what: string) => (n === 0 ? `no limit ${what}` : `${n} requests a minute ${what}`);
      return {
        json: {
          company_id: companyId,
          per_minute: set.perToken,
          effective_per_minute: perToken,
          company_per_minute: set.perCompany,
          effective_company_per_minute: perCompany,
        },
        text: `Company ${companyId}: ${say(perToken, 'per token')}, ${say(perCompany, 'for all its tokens together')}; in effect within 10 seconds.`,
      };
    }
    case 'user:create':
    case 'operator:create': {
      const operator = command === 'operator:create';
      const role = operator ? 'operator' : (o.role ?? 'admin');
      if (role !== 'operator' && !isCompanyRole(role)) throw new UsageError('--role must be admin, member or viewer.');
      const { user, password } = await deps.companies.createUser({
        companyId: operator ? null : need(o.company, 'company'),
        email: need(o.email, 'email'),
        password: o.password,
        role,
      });
      const json = { id: user.id, email: user.email, role: user.role, company_id: user.company_id, ...(password ? { password } : {}) };
      return { json, text: `Created ${user.role} ${user.email} (${user.id})${password ? `\nPassword (shown once): ${password}` : ''}` };
    }
    case 'token:create': {
      const days = o['expires-in-days'];
      if (days !== undefined && !/^\d{1,5}$/u.test(days)) throw new UsageError('--expires-in-days must be a whole number of days.');
      const t = await deps.tokens.create(need(o.company, 'company'), need(o.name, 'name'), null, {
        ...(o.scopes !== undefined ? { scopes: o.scopes } : {}),
        ...(days !== undefined ? { lifetime: { days: Number(days) } } : {}),
      });
      return {
        json: { id: t.id, name: t.name, scopes: t.scopes, expires_at: t.expires_at, token: t.token },
        text:
          `Created token "${t.name}" (${t.id}) with scopes ${t.scopes.join(', ')}, expiring ${t.expires_at ?? 'never'}. ` +
          `Its value is shown once; store it now:\n${t.token}`,
      };
    }
    case 'token:list': {
      const list = await deps.tokens.list(need(o.company, 'company'));
      return {
        json: list,
        text: list.length
          ? list
              .map(
                (t) =>
                  `${t.id}  ${t.token_prefix}…${t.token_last4 ?? ''}  ${t.name}  [${t.scopes.join(',')}]  created ${t.created_at}  expires ${t.expires_at ?? 'never'}  last used ${t.last_used_at ?? 'never'}${t.revoked_at ? '  REVOKED' : ''}`,
              )
              .join('\n')
          : 'No tokens.',
      };
    }
    case 'token:revoke': {
      const t = await deps.tokens.revoke(need(args[0], 'token id (as the argument)'), null);
      return { json: { id: t.id, name: t.name, revoked_at: t.revoked_at }, text: `Revoked token "${t.name}" (${t.id}).` };
    }
    case 'company:suspend':
    case 'company:resume': {
      const id = need(o.company, 'company');
      const c = command === 'company:suspend' ? await deps.companies.suspend(id) : await deps.companies.resume(id);
      return {
        json: { id: c.id, name: c.name, suspended_at: c.suspended_at },
        text: c.suspended_at ? `Suspended ${c.name} (${c.id}) at ${c.suspended_at}.` : `Resumed ${c.name} (${c.id}).`,
      };
    }
    case 'audit:export': {
      const companyId = need(o.company, 'company');
      if (!o.jsonl) throw new UsageError('audit:export writes JSON Lines: add --jsonl.');
      await requireCompany(deps, companyId);
      if (o.since !== undefined && (!/^\d{4}-\d{2}-\d{2}$/u.test(o.since) || Number.isNaN(Date.parse(`${o.since}T00:00:00Z`)))) {
        throw new UsageError('--since must be a date, YYYY-MM-DD.');
      }
      const since = o.since === undefined ? undefined : `${o.since}T00:00:00Z`;
      let n = 0;
      for await (const { company_id: _c, ...event } of deps.audit.exportEvents(companyId, { since })) {
        if (!process.stdout.write(`${JSON.stringify(event)}\n`)) await once(process.stdout, 'drain');
        n++;
      }
      return { json: undefined, text: '', streamed: n };
    }
    case 'audit:verify': {
      if (o.company !== undefined) await requireCompany(deps, o.company);
      const reports = await deps.audit.verify(o.company);
      const broken = reports.flatMap((r) => (r.broken ? [r.broken] : []));
      const events = reports.reduce((n, r) => n + r.events, 0);
      const name = (companyId: string | null) => (companyId === null ? "the operator's chain" : `company ${companyId}`);
      return {
        json: { chains: reports.length, events, ok: broken.length === 0, broken },
        text:
          broken.length === 0
            ? `The audit trail is intact: ${reports.length} chain${reports.length === 1 ? '' : 's'}, ${events} events checked.`
            : broken
                .map(
                  (b) => `Event ${b.eventId ?? '(gone)'} of ${name(b.companyId)} (number ${b.seq} of its chain) does not fit: ${b.reason}.`,
                )
                .join('\n'),
        failed: broken.length > 0,
      };
    }
    case 'purge': {
      const r = await deps.registry.purge(CLI_ACTOR);
      return {
        json: {
          claims_deleted: r.claims,
          clients_deleted: r.clients,
          lookups_deleted: r.lookups,
          alerts_deleted: r.alerts,
          files_deleted: r.files,
          webhook_bodies_deleted: r.delivery_bodies,
          uploads_deleted: r.uploads,
          claims_dated_before: r.claims_before,
          lookups_created_before: r.lookups_before,
          webhook_bodies_finished_before: r.delivery_bodies_before,
          uploads_made_before: r.uploads_before,
          audit_events_deleted: r.audit_events,
          audit_events_created_before: r.audit_before,
        },
        text:
          `Removed ${r.claims} claims dated before ${r.claims_before}, ${r.clients} clients left with no claim (with their documents), ${r.lookups} look-up entries, ${r.alerts} alerts of the expired claims, ${r.files} uploaded files of ended imports and batch look-ups, and ${r.audit_events} audit events created before ${r.audit_before ?? '-'}; ` +
          `deleted the bodies of ${r.delivery_bodies} webhook deliveries finished before ${r.delivery_bodies_before} and ${r.uploads} dashboard uploads never confirmed (uploaded before ${r.uploads_before}).`,
      };
    }
    case 'subject:export': {
      // The document number is used only to find the person; it is never printed.
      const r = await deps.registry.subjectExport({
        dateOfBirth: need(o['date-of-birth'], 'date-of-birth'),
        idType: need(o['id-type'], 'id-type'),
        idNumber: need(o['id-number'], 'id-number'),
      });
      return {
        json: r,
        text: r.person
          ? [
              `${r.person.first_name} ${r.person.last_name}, born ${r.person.date_of_birth}; documents: ${r.person.id_documents.map((d) => d.type).join(', ')}`,
              `Claims (${r.claims.length}):`,
              ...r.claims.map((c) => `  ${c.claim_date}  ${c.vehicle_registration}  ${c.company_name}  ${c.status}`),
              `Look-ups that returned them, and identity checks of the person's documents (${r.lookups.length}):`,
              ...r.lookups.map((l) => `  ${l.created_at}  ${l.company_name}  ${l.kind}`),
              `Webhook deliveries that carry the person (${r.deliveries.length}):`,
              ...r.deliveries.map((d) => `  ${d.created_at}  ${d.company_name}  ${d.event_type}  ${d.status}`),
            ].join('\n')
          : 'No person on record matches this date of birth and document.',
      };
    }
    case 'sso:domain-approve':
    case 'sso:domain-remove': {
      const companyId = need(o.company, 'company');
      await requireCompany(deps, companyId);
      const by = { actor: CLI_ACTOR, origin: NO_ORIGIN };
      if (command === 'sso:domain-remove') {
        const { domain } = await deps.signIn.removeDomain(companyId, need(o.domain, 'domain'), by);
        return {
          json: { company_id: companyId, domain, status: 'removed' },
          text: `Removed ${domain} from the single sign-on of ${companyId}.`,
        };
      }
      const r = await deps.signIn.approveDomain(companyId, need(o.domain, 'domain'), by);
      return {
        json: { company_id: companyId, domain: r.domain, status: 'approved' },
        text:
          r.approved === 'already'
            ? `${r.domain} was approved already for ${companyId}.`
            : `Approved ${r.domain}: its people now sign in through the single sign-on of ${companyId}.`,
      };
    }
    case 'webhook:create': {
      const companyId = need(o.company, 'company');
      await requireCompany(deps, companyId);
      const w = await deps.webhooks.createEndpoint(companyId, need(o.url, 'url'));
      return {
        json: { id: w.id, url: w.url, secret: w.secret, created_at: w.created_at },
        text: `Created webhook ${w.url} (${w.id}). Its signing secret is shown once; store it now:\n${w.secret}`,
      };
    }
    case 'webhook:list': {
      const companyId = need(o.company, 'company');
      await requireCompany(deps, companyId);
      const endpoints = (await deps.webhooks.listEndpoints(companyId)).map((e) => ({ id: e.id, url: e.url, created_at: e.created_at }));
      const deliveries = await deps.webhooks.listDeliveries(companyId, 50);
      const text = [
        endpoints.length ? endpoints.map((e) => `${e.id}  ${e.url}  created ${e.created_at}`).join('\n') : 'No webhooks.',
        ...(deliveries.length ? ['', 'Recent deliveries:'] : []),
        ...deliveries.map(
          (d) =>
            `${d.created_at}  ${d.event_type}  ${d.status}  attempts ${d.attempts}` +
            `${d.last_status_code ? `  HTTP ${d.last_status_code}` : ''}${d.last_error && !d.last_status_code ? `  ${d.last_error}` : ''}` +
            `${d.next_attempt_at ? `  next ${d.next_attempt_at}` : ''}  ${d.url}`,
        ),
      ].join('\n');
      return { json: { endpoints, deliveries }, text };
    }
    case 'webhook:rotate-secret': {
      const w = await deps.webhooks.rotateSecret(null, need(o.webhook, 'webhook'));
      return {
        json: w,
        text: `Rotated the signing secret of webhook ${w.url} (${w.id}). The new secret is shown once; store it now:\n${w.secret}\nUntil ${w.previous_valid_until} every delivery is signed with the old secret too.`,
      };
    }
    case 'reseal': {
      const r = await deps.reseal();
      return {
        json: { totp_keys_resealed: r.totp, sso_secrets_resealed: r.sso, sealed_values: r.total },
        text: `Sealed again with the first key of ENCRYPTION_KEY: ${r.totp} TOTP keys and ${r.sso} SSO client secrets (of ${r.total} sealed values; the others already were).`,
      };
    }
    default:
      throw new UsageError(command ? `Unknown command "${command}".` : 'No command given.');
  }
}

/** `backup` and `restore` (admin-backup.ts). */
async function runCopy(config: Config, command: 'backup' | 'restore', o: Options): Promise<Output> {
  if (command === 'backup') {
    const b = await backupCommand(config, need(o.out, 'out'));
    return {
      json: { file: b.file, bytes: b.bytes, taken_by: b.takenBy },
      text: `Wrote a backup of the embedded database to ${b.file} (${b.bytes} bytes), taken ${b.takenBy === 'server' ? 'by the running server' : 'from the stopped database'}.`,
    };
  }
  const r = await restoreCommand(config, need(o.from, 'from'), o.force ?? false);
  return {
    json: { data_dir: r.dataDir, from: r.from, backup_created_at: r.createdAt, moved_aside: r.movedAside },
    text:
      `Restored the backup of ${r.createdAt} from ${r.from} into ${r.dataDir}.` +
      `${r.movedAside ? ` The database that was there is in ${r.movedAside}.` : ''} Start the server.`,
  };
}

/** An unknown company is refused with a message (not a foreign-key error). */
async function requireCompany(deps: Deps, companyId: string): Promise<void> {
  await deps.companies.getCompany(companyId);
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        company: { type: 'string' },
        email: { type: 'string' },
        password: { type: 'string' },
        role: { type: 'string' },
        url: { type: 'string' },
        domain: { type: 'string' },
        'per-minute': { type: 'string' },
        'company-per-minute': { type: 'string' },
        scopes: { type: 'string' },
        'expires-in-days': { type: 'string' },
        since: { type: 'string' },
        jsonl: { type: 'boolean' },
        'date-of-birth': { type: 'string' },
        'id-type': { type: 'string' },
        'id-number': { type: 'string' },
        out: { type: 'string' },
        from: { type: 'string' },
        force: { type: 'boolean' },
        webhook: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [command = '', ...args] = parsed.positionals;
  if (parsed.values.help || command === 'help') {
    console.log(USAGE);
    return 0;
  }
  let deps: Deps | undefined;
  try {
    // A typo is reported as such before the database is opened (which may be in use, or slow to start).
    if (!COMMANDS.includes(command)) throw new UsageError(command ? `Unknown command "${command}".` : 'No command given.');
    // Logs (the queue's connection closing, say) go to stderr: stdout holds only the command's output.
    const config = loadConfig();
    // These work on DATA_DIR's files: the database may be held by a server, or not there yet.
    if (command === 'backup' || command === 'restore') {
      const out = await runCopy(config, command, parsed.values);
      console.log(parsed.values.json ? JSON.stringify(out.json) : out.text);
      return 0;
    }
    // The database migrated and the key checked, as the server does at its start.
    deps = await openDeps(config, { logger: createLogger(config.logLevel, pino.destination({ fd: 2, sync: true })) });
    const out = await run(deps, command, args, parsed.values);
    if (out.streamed === undefined) console.log(parsed.values.json ? JSON.stringify(out.json) : out.text);
    return out.failed ? 1 : 0;
  } catch (err) {
    if (err instanceof UsageError) console.error(`${err.message}\n\n${USAGE}`);
    else if (err instanceof AppError) {
      const details = err.fields
        ? Object.values(err.fields)
            .flat()
            .filter((m) => m !== err.message)
        : [];
      console.error([err.message, ...details].join('\n'));
    } else if (
      err instanceof ConfigError ||
      err instanceof StartupError ||
      err instanceof DatabaseLockedError ||
      isBackupCommandError(err)
    ) {
      console.error(err.message);
    } else console.error('Failed:', (err as Error).message);
    return err instanceof UsageError ? 2 : 1;
  } finally {
    await deps?.close();
  }
}

process.exitCode = await main();
